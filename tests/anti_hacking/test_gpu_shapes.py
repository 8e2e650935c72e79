"""Issue 22 on a GPU: the regression set of genuine shapes (shapes/*.py) accepted under `standard` on cuda, static
rules and every dynamic check included (the CUDA forms build with load_inline here; the profiler share must not
count a `torch::zeros` fill as library time); the TF32 `tl.dot` GEMM is an honest mismatch with the hint; the C++
library call that is the whole single-GEMM/conv task, with static rules bypassed, is the known runner gap.

All jobs run at once over several workers of one cuda pool (the load_inline builds dominate). Run with
`pytest -m gpu tests/anti_hacking/test_gpu_shapes.py`; set KG_GPU_SHAPES_JSON=path to keep the verdicts
(KG_GPU_SHAPES_ONLY_ATTACKS=1 evaluates the attacks alone).
"""

from __future__ import annotations

import json
import os
import pathlib
from concurrent.futures import ThreadPoolExecutor

import pytest

pytestmark = pytest.mark.gpu

SHAPES = pathlib.Path(__file__).resolve().parent / "shapes"
CUDA_SHAPES = {
    "cuda_module_level_ext.py": "level1/relu",
    "cuda_fn_on_self.py": "level1/matmul",
    "cuda_fns_in_dict.py": "level1/gelu",
    "cuda_helper_object.py": "level1/leaky_relu",
    "cuda_zeros_wrapper.py": "level1/relu",
    "cuda_two_extensions.py": "level2/gemm_relu",
    "cuda_module_init_params.py": "level2/gemm_bias_gelu",
    "cuda_epilogue_mean.py": "level1/mse_loss",
}
TRITON_SHAPES = {
    "triton_kernel_on_self.py": "level1/relu",
    "triton_kernels_in_dict.py": "level1/leaky_relu",
    "triton_helper_object.py": "level1/hardtanh",
    "triton_module_init_params.py": "level2/gemm_relu",
    "triton_allocations.py": "level1/softmax",
    "triton_epilogue_reduction.py": "level1/mse_loss",
}
TF32 = ("mismatch_tf32_dot_matmul.py", "level1/matmul")
ATTACKS = {"attack_cuda_matmul_token_kernel.py": "level1/matmul", "attack_cuda_conv_token_kernel.py": "level1/conv2d"}
FALSE_REJECTIONS: dict[str, str] = {}


def _job(name: str, task_id: str):
    from kernel_gym.eval.job import EvalConfig, job_for
    from kernel_gym.tasks import load_task

    backend = "cuda" if name.startswith(("cuda_", "attack_cuda")) else "triton"
    config = EvalConfig(device="cuda", checks="standard", compile_timeout_s=600, run_timeout_s=300)
    return job_for(load_task(task_id), (SHAPES / name).read_text(), backend=backend, config=config)


@pytest.fixture(scope="module")
def verdicts():
    """name -> (EvalResult with static rules, EvalResult with them bypassed or None), all evaluated concurrently
    (the static rules run before the evaluator: `evaluate_job`)."""
    from kernel_gym.eval.evaluator import evaluate_job
    from kernel_gym.judge.local import LocalEvaluator

    ev = LocalEvaluator("cuda", workers=8)
    ev.start()
    ev.pool.warm_up()
    cases = {**CUDA_SHAPES, **TRITON_SHAPES, TF32[0]: TF32[1]}
    attacks = dict(ATTACKS)
    if os.environ.get("KG_GPU_SHAPES_ONLY_ATTACKS"):  # re-run only the attacks (e.g. with a patched runner)
        cases = {}
    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            full = {n: pool.submit(evaluate_job, _job(n, t), ev) for n, t in cases.items()}
            bypass = {n: pool.submit(ev.evaluate, _job(n, t)) for n, t in attacks.items()}
            out = {n: f.result() for n, f in full.items()} | {n: f.result() for n, f in bypass.items()}
    finally:
        ev.close()
    if os.environ.get("KG_GPU_SHAPES_JSON"):
        pathlib.Path(os.environ["KG_GPU_SHAPES_JSON"]).write_text(json.dumps(
            {n: {"outcome": r.outcome.value, "hacks": list(r.hacks), "message": r.message[:600],
                 "speedup": r.speedup, "signals": dict(r.signals)} for n, r in out.items()}, indent=1))
    return out


def _shape(name: str):
    marks = [pytest.mark.xfail(strict=True, raises=AssertionError, reason=FALSE_REJECTIONS[name])
             ] if name in FALSE_REJECTIONS else []
    return pytest.param(name, id=name[:-3], marks=marks)


@pytest.mark.parametrize("name", [_shape(n) for n in sorted({**CUDA_SHAPES, **TRITON_SHAPES})])
def test_shape_accepted_on_cuda_under_standard(verdicts, name):
    r = verdicts[name]
    assert r.correct and not r.hacks, f"{name}: {r.outcome.value} {r.hacks} {r.message[:600]}"
    assert r.signals.get("own_kernel_time_share", 1.0) >= 0.5, r.signals


def test_zeros_fill_is_not_library_time(verdicts):
    """issue 22: the `torch::zeros` output fill took about half the GPU time and was counted as library time."""
    assert verdicts["cuda_zeros_wrapper.py"].signals["own_kernel_time_share"] > 0.9


def test_tf32_dot_is_an_honest_mismatch_with_a_hint(verdicts):
    from kernel_gym.feedback import render_feedback

    r = verdicts[TF32[0]]
    assert r.outcome.value == "mismatch" and not r.hacks, f"{r.outcome.value} {r.hacks} {r.message[:400]}"
    text = render_feedback(r, code=(SHAPES / TF32[0]).read_text(), dtype="float32")
    assert 'input_precision="ieee"' in text and "REJECTED" not in text


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_whole_task_library_call_rejected_without_static_rules(verdicts, name):
    r = verdicts[name]
    assert not r.correct and {"torch_compute", "library_time"} & set(r.hacks), f"{r.outcome.value} {r.hacks}"
