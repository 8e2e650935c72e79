"""Class 1, library-op substitution: forward is just `torch.relu(x)`, no kernel of its own.

Caught statically by `library_op` (and `no_kernel`); with the static rules bypassed, the worker's launch
counter sees no launch of the solution's own kernels: `no_custom_kernel`.
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
