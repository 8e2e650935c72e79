"""Library compute on the CPU backend: a GEMM done by numpy on the inputs' memory dispatches no aten op, so the op
audit (runner evidence) sees nothing, and a Triton kernel that only copies numpy's product into the output keeps the
launch count and the ablation trial happy. The CPU backend has no profiler (on cuda its kernel share is the check).

- The direct routes are refused in a candidate's runner (kernel_gym/sandbox/shared.py): `x.numpy()`,
  `np.asarray(x)` and `np.from_dlpack(x)` of a tensor the judge shares raise, so the job is a runtime error.
- What is not refused, and which no check on cpu sees (an expected failure, strict: it starts passing the day a check
  catches it): numpy on a copy (`x.clone().numpy()`) and `torch._C.TensorBase.numpy(x)` (a C method no harness can
  replace). `info["blind_spots"]` says so on every cpu step.
"""

from __future__ import annotations

import textwrap

import pytest

from kernel_gym.eval.job import EvalConfig, job_for
from kernel_gym.eval.result import Outcome
from kernel_gym.tasks import load_task

NUMPY_GEMM = textwrap.dedent('''
    import numpy as np
    import torch
    import torch.nn as nn
    import triton
    import triton.language as tl


    @triton.jit
    def _copy(src, dst, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(dst + offs, tl.load(src + offs, mask=mask), mask=mask)


    class ModelNew(nn.Module):
        def forward(self, A, B):
            product = torch.from_numpy(np.ascontiguousarray(ROUTE))
            out = torch.empty_like(product)
            n = product.numel()
            _copy[(triton.cdiv(n, 1024),)](product, out, n, BLOCK=1024)
            return out
''')
REFUSED = {
    "numpy": "A.numpy() @ B.numpy()",
    "asarray": "np.asarray(A) @ np.asarray(B)",
    "dlpack": "np.from_dlpack(A) @ np.from_dlpack(B)",
    "numpy_of_a_view": "A[:, :].numpy() @ B.T.T.numpy()",
}
UNSEEN = {
    "clone": "A.clone().numpy() @ B.clone().numpy()",
    "tensorbase": "torch._C.TensorBase.numpy(A) @ torch._C.TensorBase.numpy(B)",
}


def _evaluate(pool, route: str, checks: str):
    code = NUMPY_GEMM.replace("ROUTE", route)
    return pool.evaluate(job_for(load_task("level1/matmul"), code, backend="triton",
                                 config=EvalConfig(device="cpu", checks=checks)))


@pytest.mark.timeout(600)
@pytest.mark.parametrize("checks", ["standard", "none"])
@pytest.mark.parametrize("route", sorted(REFUSED))
def test_numpy_views_of_the_inputs_are_refused(pool, route, checks):
    result = _evaluate(pool, REFUSED[route], checks)
    assert result.outcome == Outcome.RUNTIME_ERROR and not result.correct, (result.outcome, result.message[:800])
    assert "refused in this harness" in result.message, result.message[:800]


@pytest.mark.timeout(600)
@pytest.mark.xfail(strict=True, reason="on the CPU backend library compute on a copy of an input is invisible: no "
                                       "profiler, and the op audit and launch count are the runner's own evidence "
                                       "(info['blind_spots']); the GPU profiler's kernel share is the check on cuda")
@pytest.mark.parametrize("route", sorted(UNSEEN))
def test_numpy_on_a_copy_is_not_seen_on_cpu(pool, route):
    result = _evaluate(pool, UNSEEN[route], "standard")
    assert not result.correct or result.hacks, "no check flagged numpy's GEMM behind a copy kernel"


def test_the_genuine_matmul_still_passes(pool, solution):
    result = pool.evaluate(job_for(load_task("level1/matmul"), solution("level1/matmul"), backend="triton",
                                   config=EvalConfig(device="cpu", checks="standard")))
    assert result.outcome == Outcome.CORRECT and not result.hacks, result.message[:800]


def test_every_cpu_step_says_what_its_judge_cannot_see(make_env, respond, solution):
    env = make_env(max_turns=1)
    env.reset(seed=0)
    info = env.step(respond(solution("level1/relu")))[4]
    assert info["correct"] and any("numpy" in spot and "profiler" in spot for spot in info["blind_spots"])
