"""Triton solution for level3/speculative_verify: one program per drafted token streams its two logit rows three
times (online max and sum of both softmaxes; the residual's mass; the output), all in fp32, one bf16 store.

Stores round to nearest even by hand: Triton's CPU interpreter truncates an fp32 -> bf16 cast.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _bf16_rne(x):
    """fp32 -> bf16, rounded to nearest even on every backend."""
    bits = x.to(tl.int32, bitcast=True)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & -65536
    return bits.to(tl.float32, bitcast=True).to(tl.bfloat16)


@triton.jit
def _verify_kernel(t_ptr, d_ptr, tok_ptr, out_ptr, V, inv_temp, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = row * V
    cols = tl.arange(0, BLOCK)
    # 1. max and sum of exp for the target (p) and draft (q) rows, online
    mp = tl.full([BLOCK], float("-inf"), tl.float32)
    mq = tl.full([BLOCK], float("-inf"), tl.float32)
    sp = tl.zeros([BLOCK], tl.float32)
    sq = tl.zeros([BLOCK], tl.float32)
    for v0 in range(0, V, BLOCK):
        mask = v0 + cols < V
        t = tl.load(t_ptr + base + v0 + cols, mask=mask, other=float("-inf")).to(tl.float32) * inv_temp
        d = tl.load(d_ptr + base + v0 + cols, mask=mask, other=float("-inf")).to(tl.float32) * inv_temp
        np_, nq = tl.maximum(mp, t), tl.maximum(mq, d)
        sp = sp * tl.exp(tl.where(np_ == float("-inf"), 0.0, mp - np_)) + tl.where(mask, tl.exp(t - np_), 0.0)
        sq = sq * tl.exp(tl.where(nq == float("-inf"), 0.0, mq - nq)) + tl.where(mask, tl.exp(d - nq), 0.0)
        mp, mq = np_, nq
    gp, gq = tl.max(mp, axis=0), tl.max(mq, axis=0)
    zp = tl.sum(sp * tl.exp(mp - gp), axis=0)
    zq = tl.sum(sq * tl.exp(mq - gq), axis=0)
    # 2. the drafted token's acceptance probability min(1, p/q), in logs (q may underflow), and the residual's mass
    tok = tl.load(tok_ptr + row)
    log_p = tl.load(t_ptr + base + tok).to(tl.float32) * inv_temp - gp - tl.log(zp)
    log_q = tl.load(d_ptr + base + tok).to(tl.float32) * inv_temp - gq - tl.log(zq)
    accept = tl.exp(tl.minimum(log_p - log_q, 0.0))
    mass = tl.zeros([BLOCK], tl.float32)
    for v0 in range(0, V, BLOCK):
        mask = v0 + cols < V
        t = tl.load(t_ptr + base + v0 + cols, mask=mask, other=0.0).to(tl.float32) * inv_temp
        d = tl.load(d_ptr + base + v0 + cols, mask=mask, other=0.0).to(tl.float32) * inv_temp
        r = tl.maximum(tl.exp(t - gp) / zp - tl.exp(d - gq) / zq, 0.0)
        mass += tl.where(mask, r, 0.0)
    scale = (1.0 - accept) / tl.maximum(tl.sum(mass, axis=0), 1e-30)
    # 3. out = (1 - a) r / mass + a onehot(token)
    for v0 in range(0, V, BLOCK):
        mask = v0 + cols < V
        t = tl.load(t_ptr + base + v0 + cols, mask=mask, other=0.0).to(tl.float32) * inv_temp
        d = tl.load(d_ptr + base + v0 + cols, mask=mask, other=0.0).to(tl.float32) * inv_temp
        out = tl.maximum(tl.exp(t - gp) / zp - tl.exp(d - gq) / zq, 0.0) * scale
        out = out + tl.where(v0 + cols == tok, accept, 0.0)
        tl.store(out_ptr + base + v0 + cols, _bf16_rne(out), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, temperature: float):
        super().__init__()
        self.temperature = temperature

    def forward(self, target_logits: torch.Tensor, draft_logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        v = target_logits.shape[-1]
        t = target_logits.contiguous()
        d = draft_logits.contiguous()
        tok = tokens.contiguous()
        out = torch.empty_like(t)
        rows = tok.numel()
        _verify_kernel[(rows,)](t, d, tok, out, v, 1.0 / self.temperature,
                                BLOCK=min(4096, triton.next_power_of_2(v)), num_warps=8)
        return out
