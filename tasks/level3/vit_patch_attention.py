"""Vision transformer front: patch embedding, class token, position embedding, encoder block.

Vision transformer front: patch embedding (strided convolution), class token and learned position embedding,
then one pre-norm encoder block (multi-head self-attention and a GELU MLP, each with a residual)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 64
image_size = 224
patch_size = 16
d_model = 768
n_heads = 12
mlp_dim = 3072

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "image_size": 32, "patch_size": 8, "d_model": 32, "n_heads": 4, "mlp_dim": 64},
    "alt": {"batch_size": 3, "image_size": 40, "patch_size": 8, "d_model": 36, "n_heads": 3, "mlp_dim": 52},
    "full_alt": {"batch_size": 24, "image_size": 336, "patch_size": 14, "d_model": 1024, "n_heads": 16,
                 "mlp_dim": 4096},
    "dtype": "bfloat16",
}


def _wide(x: torch.Tensor) -> torch.Tensor:
    """float32 for a bf16/fp16 tensor (softmax); a float32/float64 tensor stays as it is."""
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


def _layer_norm(d: int) -> nn.LayerNorm:
    norm = nn.LayerNorm(d)
    nn.init.normal_(norm.weight, 1.0, 0.1)
    nn.init.normal_(norm.bias, 0.0, 0.1)
    return norm


class Model(nn.Module):
    """tokens = [cls; Conv2d_patch(img) flattened] + pos; h = t + W_o MHSA(LN1 t); out = h + W_2 gelu(W_1 LN2 h).
    Attention is bidirectional over the class token and all patches; softmax in float32."""

    def __init__(self, image_size: int, patch_size: int, d_model: int, n_heads: int, mlp_dim: int):
        super().__init__()
        self.n_heads, self.head_dim = n_heads, d_model // n_heads
        n_patches = (image_size // patch_size) ** 2
        self.patch = nn.Conv2d(3, d_model, patch_size, stride=patch_size)
        self.cls = nn.Parameter(0.02 * torch.randn(1, 1, d_model))
        self.pos = nn.Parameter(0.02 * torch.randn(1, n_patches + 1, d_model))
        self.norm1, self.norm2 = _layer_norm(d_model), _layer_norm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.fc1 = nn.Linear(d_model, mlp_dim)
        self.fc2 = nn.Linear(mlp_dim, d_model)
        self.to(torch.bfloat16)

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        scores = torch.matmul(q, k.transpose(-1, -2)) * self.head_dim ** -0.5
        p = torch.softmax(_wide(scores), dim=-1).to(x.dtype)
        return self.proj(torch.matmul(p, v).transpose(1, 2).reshape(b, n, d))

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        patches = self.patch(images).flatten(2).transpose(1, 2)
        t = torch.cat([self.cls.expand(patches.shape[0], -1, -1), patches], dim=1) + self.pos
        h = t + self.attention(self.norm1(t))
        return h + self.fc2(F.gelu(self.fc1(self.norm2(h))))


def get_inputs():
    return [torch.randn(batch_size, 3, image_size, image_size, dtype=torch.bfloat16)]


def get_init_inputs():
    return [image_size, patch_size, d_model, n_heads, mlp_dim]
