"""Decode attention over a paged KV cache with a block table and ragged lengths.

Decode attention over a paged KV cache (vLLM-style): each sequence's keys and values live in fixed-size pages
scattered over a shared pool, found through a block table; sequences have different lengths."""
import torch
import torch.nn as nn

batch_size = 16
n_heads = 32
n_kv_heads = 8
head_dim = 128
page_size = 16
max_pages = 256

KERNEL_GYM = {
    "cpu": {"batch_size": 3, "n_heads": 4, "n_kv_heads": 2, "head_dim": 8, "page_size": 4, "max_pages": 5},
    "alt": {"batch_size": 4, "n_heads": 6, "n_kv_heads": 3, "head_dim": 12, "page_size": 3, "max_pages": 7},
    "full_alt": {"batch_size": 12, "n_heads": 28, "n_kv_heads": 4, "head_dim": 128, "page_size": 32,
                 "max_pages": 171},
    "dtype": "bfloat16",
}


def _wide(x: torch.Tensor) -> torch.Tensor:
    """float32 for a bf16/fp16 tensor (softmax); a float32/float64 tensor stays as it is."""
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


class Model(nn.Module):
    """q (batch, n_heads, head_dim) is each sequence's newest query. The pools (pages, page_size, n_kv_heads,
    head_dim) hold keys and values; sequence i owns pages block_table[i, :] in order and its first lengths[i]
    positions are valid (the rest is ignored). out[i] = softmax(q_i K_i^T / sqrt(head_dim)) V_i per head, query
    heads sharing kv heads in groups; (batch, n_heads, head_dim)."""

    def __init__(self, n_heads: int, n_kv_heads: int):
        super().__init__()
        self.group = n_heads // n_kv_heads

    def forward(self, q: torch.Tensor, k_pool: torch.Tensor, v_pool: torch.Tensor, block_table: torch.Tensor,
                lengths: torch.Tensor) -> torch.Tensor:
        b, pages = block_table.shape
        _, page_size, n_kv, d = k_pool.shape
        keys = k_pool[block_table].reshape(b, pages * page_size, n_kv, d).transpose(1, 2)
        values = v_pool[block_table].reshape(b, pages * page_size, n_kv, d).transpose(1, 2)
        keys = keys.repeat_interleave(self.group, dim=1)  # (batch, n_heads, positions, head_dim)
        values = values.repeat_interleave(self.group, dim=1)
        scores = torch.matmul(q[:, :, None], keys.transpose(-1, -2)) * d ** -0.5  # (batch, heads, 1, positions)
        invalid = torch.arange(pages * page_size, device=q.device)[None, :] >= lengths[:, None]
        p = torch.softmax(_wide(scores).masked_fill(invalid[:, None, None], float("-inf")), dim=-1).to(q.dtype)
        return torch.matmul(p, values)[:, :, 0]


def get_inputs():
    pool = batch_size * max_pages + 7  # a few pages belong to no sequence
    return [torch.randn(batch_size, n_heads, head_dim, dtype=torch.bfloat16),
            torch.randn(pool, page_size, n_kv_heads, head_dim, dtype=torch.bfloat16),
            torch.randn(pool, page_size, n_kv_heads, head_dim, dtype=torch.bfloat16),
            torch.randperm(pool)[: batch_size * max_pages].view(batch_size, max_pages),
            torch.randint(1, max_pages * page_size + 1, (batch_size,))]


def get_init_inputs():
    return [n_heads, n_kv_heads]
