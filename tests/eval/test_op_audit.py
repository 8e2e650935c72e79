"""The op audit's task policy and epilogue budget (kernel_gym/eval/op_audit.py), on cpu with a stand-in extension
(counted like a built load_inline module, so the sizes of the tensors handed to it are tracked)."""

from __future__ import annotations

import types

import pytest
import torch

from kernel_gym.checks.task_policy import task_policy
from kernel_gym.eval import launches
from kernel_gym.eval.op_audit import audit, forbidden
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


def test_epilogue_reduction_of_the_kernel_result_is_tolerated_under_standard():
    x = torch.randn(16, 256)
    out, ops = audit(lambda: EXT.row_partials(x, 64).sum(dim=1))
    assert torch.allclose(out, x.sum(1), atol=1e-4)
    assert ops == {"sum[epilogue]": 1}
    assert forbidden(ops, "standard") == []
    assert forbidden(ops, "standard", POLICY["level1/mse_loss"]) == []
    assert forbidden(ops, "strict") == ["sum[epilogue]"]  # Kevin's rule: none
    assert forbidden(ops, "standard", POLICY["level1/sum_reduce"]) == ["sum[epilogue]"]  # the reduction is the task
    assert forbidden(ops, "standard", POLICY["level1/relu"]) == ["sum[epilogue]"]  # no reduction in the reference


@pytest.mark.parametrize("fn", [
    lambda x: (EXT.row_partials(x, 64), x.sum(dim=1))[1],  # a reduction of the input: the work
    lambda x: EXT.row_partials(x, 1).sum(dim=1),  # the "kernel" only copies: the reduction is the work
    lambda x: [p[i].sum() for p in [EXT.row_partials(x, 1)] for i in range(16)],  # row by row: the budget adds up
])
def test_reduction_that_is_the_work_is_not_an_epilogue(fn):
    x = torch.randn(16, 256)
    _, ops = audit(lambda: fn(x))
    assert "sum" in forbidden(ops, "standard", POLICY["level1/mse_loss"])


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
