"""W8A8 quantised linear layer computed in float arithmetic.

W8A8 quantised linear layer in float arithmetic: weights quantised to int8 per output channel at construction,
activations quantised to int8 per token at run time, the integer GEMM, then rescaling and bias."""
import torch
import torch.nn as nn

num_tokens = 8192
in_features = 8192
out_features = 8192

KERNEL_GYM = {
    "cpu": {"num_tokens": 32, "in_features": 64, "out_features": 48},
    "alt": {"num_tokens": 37, "in_features": 72, "out_features": 29},
    "full_alt": {"num_tokens": 6001, "in_features": 5000, "out_features": 7003},
    "dtype": "bfloat16",
}


def _wide(x: torch.Tensor) -> torch.Tensor:
    """float32 for a bf16/fp16 tensor (scales and quantisation); a float32/float64 tensor stays as it is."""
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


class Model(nn.Module):
    """s_x = max|x_i| / 127 per token, x_q = clamp(round(x / s_x), -127, 127) (float32, round half to even);
    w_q, s_w likewise per output channel of a random weight, made once in __init__; y = (x_q w_q^T) s_x s_w + b.
    x_q and w_q hold integers stored in the input dtype (exact in bf16); the GEMM accumulates as the dtype's GEMM
    does and its result is rounded to that dtype."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        weight = torch.randn(out_features, in_features) * in_features ** -0.5
        scale = weight.abs().amax(dim=1) / 127
        self.register_buffer("w_q", torch.round(weight / scale[:, None]).clamp(-127, 127))
        self.register_buffer("w_scale", scale)
        self.bias = nn.Parameter(0.1 * torch.randn(out_features))
        self.to(torch.bfloat16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = _wide(x)
        scale = h.abs().amax(dim=-1, keepdim=True).clamp(min=1e-8) / 127
        x_q = torch.round(h / scale).clamp(-127, 127).to(x.dtype)
        acc = _wide(x_q @ self.w_q.t())
        return (acc * scale * _wide(self.w_scale) + _wide(self.bias)).to(x.dtype)


def get_inputs():
    return [torch.randn(num_tokens, in_features, dtype=torch.bfloat16)]


def get_init_inputs():
    return [in_features, out_features]
