"""The Helion hints (kernel_gym/feedback/hints.py): TF32 dots without dot_precision="ieee", a kernel given no config,
Helion missing where solutions run, libdevice math under the CPU interpreter. Plain text: no verdict changes."""

import pathlib

from kernel_gym.eval.result import EvalResult, Outcome
from kernel_gym.feedback import render_feedback

MATMUL = (pathlib.Path(__file__).resolve().parents[1] / "helion" / "solutions" / "level1_matmul.py").read_text()
TF32 = MATMUL.replace(', dot_precision="ieee"', "")
MISMATCH = EvalResult(outcome=Outcome.MISMATCH, message="max abs diff 3.1e-03 at [0, 5] (atol 1e-4, rtol 1e-4)")


def compile_error(message: str) -> EvalResult:
    return EvalResult(outcome=Outcome.COMPILE_ERROR, message=message)


def test_helion_matmul_without_ieee_gets_the_dot_precision_hint():
    text = render_feedback(MISMATCH, code=TF32, dtype="float32")
    assert 'dot_precision=\\"ieee\\"' not in text and 'dot_precision="ieee"' in text
    assert "Hint" not in render_feedback(MISMATCH, code=MATMUL, dtype="float32")
    assert "Hint" not in render_feedback(MISMATCH, code=TF32, dtype="float16")


def test_missing_config_gets_the_fixed_config_hint():
    result = compile_error("the first call of forward() failed:\nAutotuningDisabledInEnvironment: Autotuning is "
                           "disabled by HELION_DISALLOW_AUTOTUNING=1, please provide a config")
    text = render_feedback(result, code=MATMUL)
    assert "helion.Config(block_sizes=" in text and 'autotune_effort="none"' in text


def test_helion_not_installed_is_said_to_be_the_machines():
    text = render_feedback(compile_error("importing the solution failed:\nModuleNotFoundError: No module named "
                                         "'helion'"), code=MATMUL)
    assert "kernel-gym[helion]" in text and "no fault of the solution" in text


def test_libdevice_under_the_interpreter_is_explained_for_helion_only():
    result = compile_error("InterpreterError: TypeError(\"cannot convert None of type <class 'NoneType'>\")")
    assert "libdevice" in render_feedback(result, code=MATMUL)
    assert "libdevice" not in render_feedback(result, code="import triton\n")
