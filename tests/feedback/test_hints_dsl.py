"""Hints for CuTe DSL and TileLang solutions (kernel_gym.feedback.hints_dsl)."""

from __future__ import annotations

import pathlib

from kernel_gym.eval.result import EvalResult, Outcome
from kernel_gym.feedback.hints import HintContext, hints_for

TL = pathlib.Path(__file__).resolve().parents[1] / "tilelang"


def hints(outcome: Outcome, message: str, code: str, dtype: str = "float32") -> list[str]:
    return hints_for(EvalResult(outcome=outcome, message=message), HintContext(code=code, dtype=dtype))


def test_a_missing_package_is_the_machines_fault():
    for module, extra in (("cutlass", "cute_dsl"), ("tilelang", "tilelang")):
        text = " ".join(hints(Outcome.COMPILE_ERROR, f"ModuleNotFoundError: No module named '{module}'", "x"))
        assert f"kernel-gym[{extra}]" in text and "no fault of the solution" in text


def test_a_cute_dsl_error_gets_the_dsls_rules():
    message = "DSLUserCodeError: cannot bind arguments of gemm_kernel (cutlass.base_dsl.dsl)"
    text = " ".join(hints(Outcome.COMPILE_ERROR, message, "import cutlass.cute as cute"))
    assert "from_dlpack" in text and "cutlass.Constexpr" in text


def test_a_tilelang_error_gets_the_languages_rules():
    message = "tvm.error.InternalError: Check failed: layout inference"
    text = " ".join(hints(Outcome.COMPILE_ERROR, message, "import tilelang"))
    assert "T.Kernel" in text and "T.copy" in text
    assert not hints(Outcome.COMPILE_ERROR, message, "import triton")  # (not TileLang code)


def test_t_gemm_on_fp32_mismatch_says_tf32():
    code = (TL / "solutions" / "level1_matmul_bf16.py").read_text()
    assert any("TF32 tensor cores" in h for h in hints(Outcome.MISMATCH, "mismatch", code))
    assert not any("TF32 tensor cores" in h for h in hints(Outcome.MISMATCH, "mismatch", code, dtype="bfloat16"))
