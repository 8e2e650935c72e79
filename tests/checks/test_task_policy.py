"""The task policy of `standard` (kernel_gym.checks.task_policy), on every task of the suites."""

import pytest

from kernel_gym.checks.task_policy import PERMISSIVE, task_policy
from kernel_gym.tasks import list_tasks, load_task

SINGLE_GEMM = {  # the reference is one GEMM/convolution and nothing else
    "level1/bmm", "level1/conv1d", "level1/conv2d", "level1/conv2d_depthwise", "level1/conv2d_pointwise",
    "level1/conv2d_strided", "level1/conv3d", "level1/conv_transpose2d", "level1/linear", "level1/matmul",
    "level1/matmul_3d_tensor", "level1/matmul_large_k", "level1/matmul_small_k", "level1/matmul_tall_skinny",
    "level1/matmul_transposed_b", "level1/matvec", "c2cuda/matmul", "c2cuda/matvec", "c2cuda/dot", "c2cuda/conv1d",
    "c2cuda/conv2d_3x3",
}
REDUCTIONS_ONLY = {"level1/sum_reduce", "level1/mean_reduce", "level1/max_reduce", "level1/min_reduce",
                   "level1/var_reduce", "level1/logsumexp", "c2cuda/row_sum", "c2cuda/row_argmax"}
EPILOGUE_OK = {"level1/mse_loss", "level1/hinge_loss", "level1/huber_loss", "level1/kl_div", "level1/cosine_loss",
               "level1/cross_entropy_soft", "level1/triplet_margin_loss", "level2/gemm_cross_entropy",
               "level2/conv_dilated_silu_channelsum"}
TASKS = list_tasks()


@pytest.fixture(scope="module")
def policies():
    return {t: task_policy(load_task(t).source) for t in TASKS}


def test_every_suite_task_is_analysed(policies):
    assert all(p.known for p in policies.values())


def test_single_gemm_tasks(policies):
    assert {t for t, p in policies.items() if p.single_gemm} == SINGLE_GEMM
    assert not any(policies[t].library_gemm for t in SINGLE_GEMM)


def test_level2_gemm_tasks_keep_the_library_gemm(policies):
    level2 = [t for t in TASKS if t.startswith("level2/") and policies[t].gemm]
    assert len(level2) > 30
    assert all(policies[t].library_gemm for t in level2)


def test_no_library_gemm_without_a_gemm_in_the_reference(policies):
    for t in ("level1/relu", "level1/sum_reduce", "level1/softmax", "level2/rowscale_softmax_residual"):
        assert not policies[t].gemm and not policies[t].library_gemm, t


def test_epilogue_reductions(policies):
    for t in REDUCTIONS_ONLY:
        assert not policies[t].epilogue_reduction, t
    for t in EPILOGUE_OK:
        assert policies[t].epilogue_reduction, t
    for t in ("level1/relu", "level1/softmax", "level1/matmul", "level2/gemm_relu"):
        assert not policies[t].epilogue_reduction, t  # the reference does not reduce: a reduction is no epilogue


@pytest.mark.parametrize("source", [None, "", "def broken(:", "x = 1\n", "class Model:\n    pass\n"])
def test_unknown_source_keeps_the_old_behaviour(source):
    p = task_policy(source)
    assert p is PERMISSIVE and p.library_gemm and not p.epilogue_reduction and not p.single_gemm


FINAL = {  # tasks whose reference ends in a reduction (and is not reductions only): what a solution may end in
    "level1/mse_loss": {"sum", "mean"}, "level1/kl_div": {"sum", "mean"}, "level1/huber_loss": {"sum", "mean"},
    "level1/cross_entropy_soft": {"sum", "mean"}, "level2/gemm_cross_entropy": {"sum", "mean"},
    "level2/conv_dilated_silu_channelsum": {"sum", "mean"}, "level2/conv_logsoftmax_spatialmax": {"amax", "max"},
    "level2/convtranspose3d_tanh_channelmax_scale": {"amax", "max"},  # (through `x * self.scale`)
}


def test_final_reductions_follow_what_the_reference_ends_in(policies):
    for t, ops in FINAL.items():
        assert policies[t].final_reductions == ops, t
    for t in REDUCTIONS_ONLY:
        assert not policies[t].final_reductions, t  # the reduction would be the whole task
    # reduces in the middle, ends otherwise: `x - x.mean(...)`, a softmax, a norm
    for t in ("level2/convtranspose_softplus_avgpool_center", "level1/softmax", "level1/layernorm",
              "level2/gemm_l2norm_scale"):
        assert not policies[t].final_reductions, t
