"""Issue 22: the regression set of genuine solution shapes (shapes/*.py), one per common shape of LLM-written
Triton and `load_inline` code, must be accepted under `standard` end to end: the Triton forms here, on the cpu
backend through the env; the CUDA forms on a GPU (test_gpu_shapes.py); their static checks in
tests/checks/test_checks_shapes.py. FALSE_REJECTIONS names shapes the harness still rejects (strict xfail)."""

from __future__ import annotations

import pathlib

import pytest

SHAPES = pathlib.Path(__file__).resolve().parent / "shapes"
TRITON_SHAPES = {  # file -> task
    "triton_kernel_on_self.py": "level1/relu",
    "triton_kernels_in_dict.py": "level1/leaky_relu",
    "triton_helper_object.py": "level1/hardtanh",
    "triton_module_init_params.py": "level2/gemm_relu",
    "triton_allocations.py": "level1/softmax",
    "triton_epilogue_reduction.py": "level1/mse_loss",
}
FALSE_REJECTIONS: dict[str, str] = {}


def _shape(name: str):
    marks = [pytest.mark.xfail(strict=True, raises=AssertionError, reason=FALSE_REJECTIONS[name])
             ] if name in FALSE_REJECTIONS else []
    return pytest.param(name, id=name[:-3], marks=marks)


def test_every_triton_shape_is_listed():
    assert {p.name for p in SHAPES.glob("triton_*.py")} == set(TRITON_SHAPES)


@pytest.mark.parametrize("name", [_shape(n) for n in sorted(TRITON_SHAPES)])
def test_triton_shape_accepted_under_standard(through_env, name):
    info = through_env((SHAPES / name).read_text(), task=TRITON_SHAPES[name], checks="standard")
    where = f"{name}: {info['error']} {info['hacks']} {info['message'][:500]}"
    assert info["error"] is None and info["hacks"] == [], where
    assert info["correct"] is True and info["score"] > 0, where


def test_epilogue_shape_keeps_kevins_rule_under_strict(through_env):
    """Under strict the epilogue reduction is PyTorch compute (library_op), with feedback that names it."""
    info = through_env((SHAPES / "triton_epilogue_reduction.py").read_text(), task="level1/mse_loss", checks="strict")
    assert info["hacks"] == ["library_op"] and "partials.sum" in info["feedback"]



def test_partial_pytorch_permissive_accepts_standard_names_every_op(through_env):
    """issue 22 item 4: `permissive` accepts what KernelBench accepts (own kernel for the GEMM, PyTorch for the
    rest); `standard` keeps Kevin's rule, and its feedback names each op left in PyTorch and what to do."""
    code = (SHAPES / "partial_pytorch_gemm_relu.py").read_text()
    ok = through_env(code, task="level2/gemm_relu", checks="permissive")
    assert ok["error"] is None and ok["correct"] is True and ok["hacks"] == [], ok["message"][:400]
    info = through_env(code, task="level2/gemm_relu", checks="standard")
    assert info["hacks"] == ["library_op"] and info["score"] == 0
    for op in ("torch.relu", "torch.mul"):
        assert f"`{op}(...)`" in info["feedback"], info["feedback"]
    assert info["feedback"].count("Do this op in your own Triton/CUDA kernel") == 2
