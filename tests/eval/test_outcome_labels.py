"""The outcome table of docs/evaluation.md ("Outcomes"), row by row through the env, and feedback that shows the
policy its own code's frames and never the harness's."""

import re

import pytest

import kernel_gym

HARNESS_DIR = str(__import__("pathlib").Path(kernel_gym.__file__).resolve().parent)


def step(make_env, respond, code):
    env = make_env(max_turns=1)
    env.reset(seed=0)
    return env.step(respond(code))[4]


def assert_clean_feedback(info):
    for text in (info["message"], info["feedback"]):
        assert "runner.py" not in text and "kernel_gym/" not in text and HARNESS_DIR not in text, text
        assert not re.search(r"(/[\w.-]+){2,}/(site|dist)-packages", text), text  # no install paths
        assert "candidate_" not in text, text  # the module's file is solution.py


CASES = {
    # name: (change to the template, outcome, compiled, words the message must hold)
    "import_error": ({"header": "import no_such_module_xyz"}, "compile_error", False,
                     ["importing the solution failed", "solution.py, line", "ModuleNotFoundError"]),
    "value_error_in_first_call": ({"extra": "raise ValueError('bad shape')"}, "runtime_error", True,
                                  ["the first call of forward() failed", "solution.py, line", "ValueError: bad shape"]),
    "triton_error_in_first_call": ({"body": "tl.maximum(x, 0.0) + tl.arange(0, 3)"}, "compile_error", False,
                                   ["solution.py, line", "power of 2"]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_outcome_table_rows(make_env, respond, relu_code, name):
    change, outcome, compiled, words = CASES[name]
    info = step(make_env, respond, relu_code(**change))
    assert (info["error"], info["compiled"]) == (outcome, compiled), info["message"]
    for word in words:
        assert word in info["message"], info["message"]
    assert_clean_feedback(info)


def test_a_constructor_signature_mismatch_names_the_constructor(make_env, respond, relu_code):
    code = relu_code().replace("def __init__(self):", "def __init__(self, weight, bias):")
    info = step(make_env, respond, code)
    assert (info["error"], info["compiled"]) == ("runtime_error", True)
    assert "ModelNew.__init__() missing 2 required positional arguments" in info["message"]
    assert "constructor takes the same arguments as Model's" in info["message"]
    assert_clean_feedback(info)


def test_a_raising_constructor_shows_its_own_frame(make_env, respond, relu_code):
    code = relu_code().replace("self.calls = 0", "self.calls = 0\n        raise RuntimeError('no weights')")
    info = step(make_env, respond, code)
    assert info["error"] == "runtime_error"
    assert "solution.py, line" in info["message"] and "in __init__" in info["message"]
    assert_clean_feedback(info)


def test_describe_failure_names_the_stage():
    """What the runner should say before the traceback (the constructor is not "the first call of forward()")."""
    from kernel_gym.harness.errors import describe_failure

    try:
        exec(compile("class ModelNew:\n    def __init__(self):\n        pass\nModelNew(1, 2)\n", "/x/kernel_gym/eval/"
                     "runner.py", "exec"), {})
    except TypeError as e:
        text = describe_failure(e, "first_call")
    assert text.startswith("constructing ModelNew(*get_init_inputs()) failed:")
    assert "runner.py" not in text and "takes 1 positional argument but 3 were given" in text
    try:
        raise ValueError("boom")
    except ValueError as e:
        assert describe_failure(e, "correctness").startswith("the correctness stage failed:")


def test_classify_follows_the_table():
    from kernel_gym.eval.result import Outcome
    from kernel_gym.harness.errors import classify

    assert classify(ValueError("x"), "compile")[0] is Outcome.COMPILE_ERROR
    assert classify(ValueError("x"), "first_call")[0] is Outcome.RUNTIME_ERROR
    assert classify(TypeError("x"), "correctness")[0] is Outcome.RUNTIME_ERROR
    assert classify(MemoryError(), "timing") == (Outcome.OOM, False)
    assert classify(RuntimeError("CUDA error: an illegal memory access"), "timing") == (Outcome.CRASH, True)
