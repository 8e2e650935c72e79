"""CLIP contrastive loss head: projections, normalisation, symmetric cross-entropy per pair.

CLIP contrastive loss head: project image and text features to a shared space, L2-normalise, scaled cosine
similarity matrix of the whole batch, symmetric cross-entropy against the matching pairs (one loss per pair)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 12288
image_dim = 1024
text_dim = 768
embed_dim = 768

KERNEL_GYM = {
    "cpu": {"batch_size": 24, "image_dim": 32, "text_dim": 24, "embed_dim": 16},
    "alt": {"batch_size": 29, "image_dim": 20, "text_dim": 36, "embed_dim": 12},
    "full_alt": {"batch_size": 10007, "image_dim": 1280, "text_dim": 1024, "embed_dim": 1024},
    "dtype": "bfloat16",
}


def _wide(x: torch.Tensor) -> torch.Tensor:
    """float32 for a bf16/fp16 tensor (logits, log-softmax); a float32/float64 tensor stays as it is."""
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


class Model(nn.Module):
    """i = normalize(W_i img), t = normalize(W_t txt); L = exp(logit_scale) i t^T (float32);
    loss_k = (-log_softmax(L, 1)[k, k] - log_softmax(L, 0)[k, k]) / 2, returned in the input dtype."""

    def __init__(self, image_dim: int, text_dim: int, embed_dim: int):
        super().__init__()
        self.image_proj = nn.Linear(image_dim, embed_dim, bias=False)
        self.text_proj = nn.Linear(text_dim, embed_dim, bias=False)
        self.logit_scale = nn.Parameter(torch.tensor(math.log(1 / 0.07)))
        self.to(torch.bfloat16)

    def forward(self, image_features: torch.Tensor, text_features: torch.Tensor) -> torch.Tensor:
        img = F.normalize(_wide(self.image_proj(image_features)), dim=-1).to(image_features.dtype)
        txt = F.normalize(_wide(self.text_proj(text_features)), dim=-1).to(text_features.dtype)
        logits = _wide(img @ txt.t()) * torch.exp(_wide(self.logit_scale))
        per_image = torch.log_softmax(logits, dim=1).diagonal()
        per_text = torch.log_softmax(logits, dim=0).diagonal()
        return (-(per_image + per_text) / 2).to(image_features.dtype)


def get_inputs():
    return [torch.randn(batch_size, image_dim, dtype=torch.bfloat16),
            torch.randn(batch_size, text_dim, dtype=torch.bfloat16)]


def get_init_inputs():
    return [image_dim, text_dim, embed_dim]
