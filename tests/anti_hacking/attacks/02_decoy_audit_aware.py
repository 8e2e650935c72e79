"""Class 2, a decoy that detects the op audit: the harness runs one extra forward under a TorchDispatchMode to see
which PyTorch ops it dispatches (`torch_compute`). A mode being active is visible to the solution
(`torch._C._len_torch_dispatch_stack()`): exactly then forward runs a real ReLU kernel; on every other call it
copies x with a Triton kernel and computes the ReLU with tensor operators (`y * (y > 0)`, as in
02_decoy_copy_then_operators.py). The ablation trial cannot tell either: with the copy skipped the output is
garbage, so the kernel "matters". Static evasion: the function is reached with getattr names built by `"".join`
(the rule flags constants, `+` and f-strings).

What should catch it: on cuda the profiler share of GPU time in the solution's own kernels (the profiled call
is not audited: the copy is about a third of the time, under the 50 % strict/standard bound: `library_time`); on
cpu nothing today. Ideas: audit a call the solution cannot tell from the others (several, or every correctness
trial, with the audit's outputs compared too), `introspection` flagging non-constant getattr names.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl

_C = getattr(torch, "".join(["_", "C"]))
_watched = getattr(_C, "".join(["_len_torch", "_dispatch_stack"]))


@triton.jit
def _copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


@triton.jit
def _relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        if _watched():  # the dispatcher is being watched: do it properly this once
            _relu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
            return y
        _copy_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        return y * (y > 0)
