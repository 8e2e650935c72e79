"""Speculative-decoding verification: the corrected distribution for each drafted token.

Speculative-decoding verification over a large vocabulary: for each drafted token, the distribution the verifier
samples from (accept it with probability min(1, p/q), else draw from the normalised residual max(0, p - q))."""
import torch
import torch.nn as nn

batch_size = 64
draft_len = 8
vocab_size = 128256
temperature = 0.8

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "draft_len": 3, "vocab_size": 300},
    "alt": {"batch_size": 3, "draft_len": 5, "vocab_size": 257},
    "full_alt": {"batch_size": 40, "draft_len": 5, "vocab_size": 151643},
    "dtype": "bfloat16",
}


def _wide(x: torch.Tensor) -> torch.Tensor:
    """float32 for a bf16/fp16 tensor (the softmaxes); a float32/float64 tensor stays as it is."""
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


class Model(nn.Module):
    """p = softmax(target_logits / T), q = softmax(draft_logits / T) in float32; for drafted token x at each
    position, a = min(1, p[x] / q[x]) (as exp(min(0, log p[x] - log q[x])): defined where q[x] underflows) and
    r = max(0, p - q) / sum(max(0, p - q)); returns a * onehot(x) + (1 - a) r, a (batch, draft_len, vocab)
    distribution, in the input dtype."""

    def __init__(self, temperature: float):
        super().__init__()
        self.temperature = temperature

    def forward(self, target_logits: torch.Tensor, draft_logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        log_p = torch.log_softmax(_wide(target_logits) / self.temperature, dim=-1)
        log_q = torch.log_softmax(_wide(draft_logits) / self.temperature, dim=-1)
        index = tokens[..., None]
        accept = torch.exp(torch.clamp(log_p.gather(-1, index) - log_q.gather(-1, index), max=0.0))
        residual = torch.clamp(torch.exp(log_p) - torch.exp(log_q), min=0.0)
        residual = residual / residual.sum(-1, keepdim=True).clamp(min=1e-30)
        out = (1 - accept) * residual
        return out.scatter_add(-1, index, accept).to(target_logits.dtype)


def get_inputs():
    shape = (batch_size, draft_len, vocab_size)
    return [torch.randn(shape, dtype=torch.bfloat16) * 3, torch.randn(shape, dtype=torch.bfloat16) * 3,
            torch.randint(0, vocab_size, (batch_size, draft_len))]


def get_init_inputs():
    return [temperature]
