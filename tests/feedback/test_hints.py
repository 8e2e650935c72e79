"""Plain hints for honest failures (kernel_gym/feedback/hints.py): the TF32 `tl.dot` hint of issue 22. The real
TF32 mismatch needs a GPU (the cpu interpreter computes tl.dot in fp32): tests/anti_hacking/test_gpu_shapes.py."""

import pathlib

import pytest

from kernel_gym.eval.result import EvalResult, Outcome
from kernel_gym.feedback import render_feedback
from kernel_gym.feedback.hints import tf32_dot_lines

TF32 = (pathlib.Path(__file__).resolve().parents[1] / "anti_hacking" / "shapes" / "mismatch_tf32_dot_matmul.py"
        ).read_text()
MISMATCH = EvalResult(outcome=Outcome.MISMATCH, message="max abs diff 3.1e-03 at [0, 5] (atol 1e-4, rtol 1e-4)")


def test_tf32_dot_on_an_fp32_mismatch_gets_the_hint():
    text = render_feedback(MISMATCH, code=TF32, dtype="float32")
    assert text.startswith("WRONG OUTPUT")
    assert 'Hint: `tl.dot` on float32 inputs runs in TF32' in text and 'input_precision="ieee"' in text
    assert f"line {tf32_dot_lines(TF32)[0]}" in text
    assert "hack" not in text.lower() and "REJECTED" not in text


@pytest.mark.parametrize("fix", ['input_precision="ieee"', 'input_precision="tf32x3"', "allow_tf32=False"])
def test_full_precision_dot_gets_no_hint(fix):
    code = TF32.replace("tl.dot(a, b)", f"tl.dot(a, b, {fix})")
    assert tf32_dot_lines(code) == []
    assert "Hint" not in render_feedback(MISMATCH, code=code, dtype="float32")


@pytest.mark.parametrize("result, dtype, allow", [
    (MISMATCH, "float16", False),  # a half task: tl.dot is exact enough
    (MISMATCH, "float32", True),  # the task allows reduced precision
    (EvalResult(outcome=Outcome.RUNTIME_ERROR, message="boom"), "float32", False),  # not a mismatch
])
def test_no_hint_outside_an_fp32_mismatch(result, dtype, allow):
    assert "Hint" not in render_feedback(result, code=TF32, dtype=dtype, allow_precision=allow)


def test_without_code_the_feedback_is_unchanged():
    assert render_feedback(MISMATCH) == render_feedback(MISMATCH, code=None)
    assert "Hint" not in render_feedback(MISMATCH)


def test_other_spellings_of_dot_are_seen():
    code = "import triton.language as lang\nfrom triton.language import dot\n" \
           "def k(a, b):\n    x = lang.dot(a, b)\n    y = dot(a, b)\n    z = triton.language.dot(a, b)\n"
    assert tf32_dot_lines(code) == [4, 5, 6]
