"""Class 15, lazy Tensor subclass: forward returns a `torch.Tensor` subclass whose `__torch_function__`
runs the kernel only when the harness first touches the result (comparison), i.e. outside the timed call.

Caught statically by `monkeypatch` (Tensor subclass, `__torch_function__`); with the static rules bypassed,
the worker requires `type(out) is torch.Tensor`: `lazy_output`.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class LazyRelu(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        for a in args:
            if isinstance(a, LazyRelu) and getattr(a, "_pending", None) is not None:
                x = a._pending
                a._pending = None
                _relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, a, x.numel(), BLOCK=1024)
        return super().__torch_function__(func, types, args, kwargs or {})


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x).as_subclass(LazyRelu)
        y._pending = x
        return y
