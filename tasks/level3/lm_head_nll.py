"""Language-model loss head: RMSNorm, vocabulary projection, log-softmax, per-token NLL.

Language-model loss head: final RMSNorm, projection to a large vocabulary, log-softmax in float32 and the
negative log-likelihood of each token's target (one loss per token)."""
import torch
import torch.nn as nn

num_tokens = 1024
d_model = 4096
vocab_size = 128256

KERNEL_GYM = {
    "cpu": {"num_tokens": 16, "d_model": 32, "vocab_size": 500},
    "alt": {"num_tokens": 19, "d_model": 40, "vocab_size": 777},
    "full_alt": {"num_tokens": 1500, "d_model": 2048, "vocab_size": 151643},
    "dtype": "bfloat16",
}


def _wide(x: torch.Tensor) -> torch.Tensor:
    """float32 for a bf16/fp16 tensor (norm statistics, log-softmax); a float32/float64 tensor stays as it is."""
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


class Model(nn.Module):
    """loss_i = -log_softmax(RMSNorm(h_i) W^T)[target_i], the log-softmax over the vocabulary in float32; the loss
    is returned in the input dtype."""

    def __init__(self, d_model: int, vocab_size: int):
        super().__init__()
        self.norm = nn.Parameter(1 + 0.1 * torch.randn(d_model))
        self.head = nn.Linear(d_model, vocab_size, bias=False)
        self.to(torch.bfloat16)

    def forward(self, hidden: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        h = _wide(hidden)
        h = (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-5)).to(hidden.dtype) * self.norm
        logp = torch.log_softmax(_wide(self.head(h)), dim=-1)
        return -logp.gather(1, targets[:, None]).squeeze(1).to(hidden.dtype)


def get_inputs():
    return [torch.randn(num_tokens, d_model, dtype=torch.bfloat16), torch.randint(0, vocab_size, (num_tokens,))]


def get_init_inputs():
    return [d_model, vocab_size]
