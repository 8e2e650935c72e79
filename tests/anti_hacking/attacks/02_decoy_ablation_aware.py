"""Class 2, a decoy that detects the ablation trial: its kernel also sets a one-element canary; when the canary
stays unset (the harness skipped the launch) forward returns the input unchanged (wrong), otherwise it returns
`torch.relu(x)`. So the output is wrong exactly when the kernels are skipped, and the ablation trial concludes
the kernel "matters".

Caught statically by `library_op` (strict/standard), and with the static rules bypassed by the op audit
(aten.relu: `torch_compute`). Under `permissive` (library ops allowed, own kernel required) nothing on cpu
catches it; on cuda the profiler share of GPU time in own kernels does (`library_time`, test_gpu_attacks.py).
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _canary_kernel(flag_ptr):
    tl.store(flag_ptr, 1)


class ModelNew(nn.Module):
    def forward(self, x):
        flag = torch.zeros(1, dtype=torch.int32, device=x.device)
        _canary_kernel[(1,)](flag)
        if flag.item() == 1:
            return torch.relu(x)
        return x
