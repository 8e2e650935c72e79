"""The op audit's task policy and final reductions (kernel_gym/harness/op_audit.py), on cpu with a stand-in extension
(counted like a built load_inline module, so the sizes of the tensors handed to it are tracked)."""

from __future__ import annotations

import types

import pytest
import torch

from kernel_gym.checks.task_policy import task_policy
from kernel_gym.harness import launches
from kernel_gym.harness.op_audit import audit, forbidden
from kernel_gym.tasks import load_task


def _ext():
    mod = types.ModuleType("fake_ext")

    def row_partials(x: torch.Tensor, block: int) -> torch.Tensor:  # what a kernel would write: per-block sums
        rows, cols = x.shape
        with launches_off():
            return x.view(rows, cols // block, block).sum(-1)

    mod.row_partials = row_partials
    return launches.counted_extension(mod)


class launches_off:
    """The stand-in kernel's own torch ops are not the candidate's (as inside a real launch)."""

    def __enter__(self):
        launches.STATE.in_launch += 1

    def __exit__(self, *exc):
        launches.STATE.in_launch -= 1


EXT = _ext()
POLICY = {t: task_policy(load_task(t).source) for t in ("level1/mse_loss", "level1/relu", "level1/sum_reduce",
                                                          "level1/matmul", "level2/gemm_relu")}


def test_final_reduction_of_the_kernel_result_is_tolerated_under_standard():
    x = torch.randn(16, 256)
    out, ops = audit(lambda: EXT.row_partials(x, 64).sum(dim=1), (x,))
    assert torch.allclose(out, x.sum(1), atol=1e-4)
    assert ops == {"sum[final]": 1}
    assert forbidden(ops, "standard") == []
    assert forbidden(ops, "standard", POLICY["level1/mse_loss"]) == []
    assert forbidden(ops, "strict") == ["sum[final]"]  # Kevin's rule: none
    assert forbidden(ops, "standard", POLICY["level1/sum_reduce"]) == ["sum[final]"]  # the reduction is the task
    assert forbidden(ops, "standard", POLICY["level1/relu"]) == ["sum[final]"]  # no reduction in the reference


@pytest.mark.parametrize("fn", [
    lambda x: EXT.row_partials(x, 1).mean(dim=1),  # per-element losses, averaged: the loss's own mean
    lambda x: EXT.row_partials(x, 64).sum(dim=1) / 256,  # per-block partials, summed, scaled
    lambda x: -EXT.row_partials(x, 64).sum(dim=1),  # a sign
    lambda x: [p[i].sum() for p in [EXT.row_partials(x, 1)] for i in range(16)],  # row by row: one pass in all
])
def test_a_final_reduction_of_the_whole_kernel_result_is_tolerated_where_the_reference_ends_in_it(fn):
    """The policy (kernel_gym.checks.library_policy): a final reduction of the kernel's result (one pass over it, and
    a scalar scaling) may stay where the reference ends in that reduction, whatever its size."""
    x = torch.randn(16, 256)
    _, ops = audit(lambda: fn(x), (x,))
    assert forbidden(ops, "standard", POLICY["level1/mse_loss"]) == [], ops
    assert forbidden(ops, "standard", POLICY["level1/sum_reduce"]) != []  # reductions only: the work
    assert forbidden(ops, "strict", POLICY["level1/mse_loss"]) != []


@pytest.mark.parametrize("fn, op", [
    (lambda x: (EXT.row_partials(x, 64), x.sum(dim=1))[1], "sum"),  # a reduction of the input: the work
    (lambda x: EXT.row_partials(EXT.row_partials(x, 64).sum(dim=1, keepdim=True), 1), "sum"),  # a kernel after it
    (lambda x: EXT.row_partials(x, 64).sum(dim=1) * x[:, 0], "mul"),  # not a scalar scaling
    (lambda x: x.view(-1).sum() + EXT.row_partials(x, 64).sum(), "sum"),  # before any own kernel ran
])
def test_a_reduction_that_is_not_the_final_step_of_the_kernel_result_is_the_work(fn, op):
    x = torch.randn(16, 256)
    _, ops = audit(lambda: fn(x), (x,))
    assert op in forbidden(ops, "standard", POLICY["level1/mse_loss"]), ops


def test_a_reduction_in_an_extensions_wrapper_after_its_kernel_is_final():
    """A C++ wrapper's `.mean(1)` of what its kernel wrote runs inside the extension's call, before its launch is
    counted: it is the final step of that kernel's result (not of the inputs it was handed)."""
    mod = types.ModuleType("fake_ext2")

    def mse_rows(p: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        with launches_off():
            part = ((p - t) ** 2).view(p.shape[0], -1, 64).mean(-1)  # what the kernel writes
        return part.mean(1)  # the wrapper's epilogue, dispatched as the candidate's

    mod.mse_rows = mse_rows
    ext = launches.counted_extension(mod)
    p, t = torch.randn(16, 256), torch.randn(16, 256)
    _, ops = audit(lambda: ext.mse_rows(p, t), (p, t))
    assert ops == {"mean[final]": 1}
    assert forbidden(ops, "standard", POLICY["level1/mse_loss"]) == []
    mod2 = types.ModuleType("fake_ext3")
    mod2.rows = lambda p: p.sum(1)  # the wrapper reduces its input: the work
    _, ops = audit(lambda: launches.counted_extension(mod2).rows(p), (p,))
    assert forbidden(ops, "standard", POLICY["level1/mse_loss"]) == ["sum"]


def test_no_kernel_no_epilogue():
    x = torch.randn(16, 256)
    _, ops = audit(lambda: x.mean(dim=1))
    assert forbidden(ops, "standard") == ["mean"]


def test_sizes_are_tracked_only_during_the_audit():
    audit(lambda: EXT.row_partials(torch.randn(4, 8), 4))
    assert launches.STATE.largest == 0 and not launches.STATE.track_sizes
    EXT.row_partials(torch.randn(4, 8), 4)
    assert launches.STATE.largest == 0


def test_library_gemm_follows_the_task_policy():
    ops = {"mm": 1, "empty": 1}
    assert forbidden(ops, "standard") == []  # no task: as before
    assert forbidden(ops, "standard", POLICY["level2/gemm_relu"]) == []
    assert forbidden(ops, "standard", POLICY["level1/matmul"]) == ["mm"]  # the single-GEMM task
    assert forbidden(ops, "standard", POLICY["level1/relu"]) == ["mm"]  # no GEMM in the reference
    assert forbidden(ops, "permissive", POLICY["level1/matmul"]) == []
