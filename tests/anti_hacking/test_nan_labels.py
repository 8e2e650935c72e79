"""NaN the solution computed is an honest bug (a mismatch); NaN it never wrote is `uninitialized_output`. The judge
tells them apart by the bits: output memory is filled with NaN of known bits before every call
(kernel_gym/judge/nan.py)."""

from __future__ import annotations

import pytest
from ah_helpers import ATTACKS

from kernel_gym.eval.result import Outcome

# tanh as (e^2x - 1) / (e^2x + 1): exact for moderate x, inf/inf = NaN once e^2x overflows (|x| > ~44), which the
# x16 distribution trial reaches (the task's inputs are randn * 2).
OVERFLOWING_TANH = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _tanh_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    e = tl.exp(2.0 * x)
    tl.store(y_ptr + offs, (e - 1.0) / (e + 1.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        _tanh_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y
'''


@pytest.mark.parametrize("checks", ["standard", "none"])
def test_honest_overflow_is_a_mismatch(bypass, checks):
    result = bypass(OVERFLOWING_TANH, task="level1/tanh", checks=checks)
    assert result.outcome is Outcome.MISMATCH, (result.outcome, result.hacks, result.message)
    assert result.hacks == ()
    assert "scaled by 16" in result.message and "NaN" in result.message


def test_unwritten_output_is_uninitialized(bypass):
    result = bypass((ATTACKS / "06_partial_write.py").read_text(), checks="none")
    assert result.outcome is Outcome.REJECTED and result.hacks == ("uninitialized_output",), result.message


def test_nan_bits_tell_fill_from_arithmetic():
    import torch

    from kernel_gym.judge.nan import fill_unwritten, unwritten

    expected = [torch.ones(8)]
    filled = torch.empty(8)
    fill_unwritten(filled)
    assert unwritten([filled], expected, torch.device("cuda"))  # 0xFF bytes: unwritten on every device
    computed = torch.full((8,), float("inf")) / torch.full((8,), float("inf"))  # the hardware's default NaN
    assert torch.isnan(computed).all()
    assert not unwritten([computed], expected, torch.device("cpu"))
    assert not unwritten([computed], expected, torch.device("cuda"))
    torch_fill = torch.full((8,), float("nan"))  # torch's quiet NaN: the cpu runner's fill of fresh memory
    assert unwritten([torch_fill], expected, torch.device("cpu"))
    assert not unwritten([torch_fill], expected, torch.device("cuda"))
