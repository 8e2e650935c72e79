"""parse_action: response text -> (reasoning, code, backend) or an error message; never raises on agent input."""

import random

import pytest

from kernel_gym.actions import DEFAULT_MAX_CODE_CHARS, detect_backend, parse_action

TRITON_CODE = """import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    pass


class ModelNew(nn.Module):
    def forward(self, x):
        return x
"""

CUDA_CODE = """import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

src = "__global__ void k(float* x) { x[0] = 1.0f; }"
mod = load_inline(name="m", cpp_sources="", cuda_sources=src, functions=[])


class ModelNew(nn.Module):
    def forward(self, x):
        return x
"""


def fenced(code: str, lang: str = "python") -> str:
    return f"```{lang}\n{code}```"


def test_code_and_reasoning_are_split(respond):
    parsed = parse_action(respond(TRITON_CODE, reasoning="First I tile.\nThen I fuse."))
    assert parsed.ok and parsed.error is None
    assert parsed.code.strip() == TRITON_CODE.strip()
    assert parsed.reasoning == "First I tile.\nThen I fuse."
    assert parsed.backend == "triton"
    assert parsed.language == "python"


def test_last_fenced_block_wins_and_reasoning_is_the_text_around_it():
    first = "class ModelNew:\n    wrong = 1\n"
    text = f"Plan A.\n{fenced(first)}\nPlan B is better.\n{fenced(TRITON_CODE)}\nDone, that is all."
    parsed = parse_action(text)
    assert parsed.ok
    assert parsed.code == TRITON_CODE
    assert "wrong = 1" not in parsed.code
    assert parsed.reasoning.startswith("Plan A.")
    assert "Plan B is better." in parsed.reasoning
    assert parsed.reasoning.endswith("Done, that is all.")
    assert "import triton" not in parsed.reasoning
    start, end = parsed.code_span
    assert text[start:end] == TRITON_CODE


def test_tilde_fence_and_longer_fences():
    parsed = parse_action("why\n~~~~python\n" + TRITON_CODE + "~~~~\n")
    assert parsed.ok and parsed.code == TRITON_CODE
    # a ``` line inside a ```` block does not close it
    inner = TRITON_CODE + "# ```\n"
    parsed = parse_action("why\n````python\n" + inner + "````\n")
    assert parsed.ok and parsed.code == inner


@pytest.mark.parametrize("text", ["", "   \n\t  \n"])
def test_empty_or_whitespace_response(text):
    parsed = parse_action(text)
    assert not parsed.ok
    assert "empty" in parsed.error
    assert parsed.code is None and parsed.backend is None


def test_no_code_block_keeps_the_text_as_reasoning():
    parsed = parse_action("I think the kernel should tile by 128.")
    assert not parsed.ok
    assert "no fenced code block" in parsed.error
    assert parsed.reasoning == "I think the kernel should tile by 128."
    assert parsed.code is None


def test_unclosed_block_is_a_cut_off_response():
    parsed = parse_action("Reasoning.\n```python\n" + TRITON_CODE)
    assert not parsed.ok
    assert "not closed" in parsed.error
    assert parsed.code == TRITON_CODE  # kept for the feedback
    assert parsed.reasoning == "Reasoning."


def test_empty_block():
    parsed = parse_action("text\n```python\n\n```\n")
    assert not parsed.ok and "empty" in parsed.error


def test_nul_bytes_are_binary():
    parsed = parse_action("hello\x00\x00world\n" + fenced(TRITON_CODE))
    assert not parsed.ok
    assert "NUL" in parsed.error


def test_random_bytes_decoded_are_binary():
    rng = random.Random(0)
    junk = bytes(rng.randrange(1, 256) for _ in range(5000))  # no NUL: caught by the control-character rule
    parsed = parse_action(junk.decode("utf-8", errors="replace"))
    assert not parsed.ok
    assert "binary" in parsed.error


def test_bytes_action_is_decoded_not_raised():
    parsed = parse_action(fenced(TRITON_CODE).encode())
    assert parsed.ok and parsed.code == TRITON_CODE


@pytest.mark.parametrize("action", [None, 42, ["code"], {"a": 1}])
def test_non_string_action_is_an_error_not_an_exception(action):
    parsed = parse_action(action)
    assert not parsed.ok
    assert type(action).__name__ in parsed.error


def test_ten_megabytes_of_text_is_rejected_quickly():
    text = "a" * (10 * 1024 * 1024) + fenced(TRITON_CODE)
    parsed = parse_action(text)
    assert not parsed.ok
    assert "over the limit" in parsed.error
    assert f"{len(text):,}" in parsed.error


def test_response_limit_is_configurable():
    text = fenced(TRITON_CODE)
    assert parse_action(text).ok
    parsed = parse_action(text, max_response_chars=len(text) - 1)
    assert not parsed.ok and "over the limit" in parsed.error


def test_oversized_code_with_a_configurable_limit():
    big = TRITON_CODE + "# padding\n" * (DEFAULT_MAX_CODE_CHARS // 10 + 1)
    parsed = parse_action(fenced(big))
    assert not parsed.ok
    assert "code block" in parsed.error and f"{DEFAULT_MAX_CODE_CHARS:,}" in parsed.error
    assert parse_action(fenced(big), max_code_chars=len(big)).ok
    small = parse_action(fenced(TRITON_CODE), max_code_chars=100)
    assert not small.ok and "100" in small.error


def test_syntax_error_names_line_and_text():
    code = TRITON_CODE.replace("def forward(self, x):", "def forward(self, x)")
    parsed = parse_action(fenced(code))
    assert not parsed.ok
    line = code.splitlines().index("    def forward(self, x)") + 1
    assert parsed.error.startswith(f"syntax error at line {line}, column ")
    assert "expected ':'" in parsed.error
    assert "def forward(self, x)" in parsed.error
    assert parsed.code == code


def test_code_without_model_new():
    parsed = parse_action(fenced("import triton\nx = 1\n"))
    assert not parsed.ok and "ModelNew" in parsed.error


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (TRITON_CODE, "triton"),
        (CUDA_CODE, "cuda"),
        ("class ModelNew:\n    pass\n", None),
        ("import triton\nsrc = '__global__ void f() {}'\n", "cuda"),
    ],
)
def test_detect_backend(code, expected):
    assert detect_backend(code) == expected


def test_backend_detected_in_parse():
    assert parse_action(fenced(CUDA_CODE)).backend == "cuda"
    assert parse_action(fenced(TRITON_CODE)).backend == "triton"


def test_declared_backend_is_used_when_detection_finds_nothing():
    code = "class ModelNew:\n    x = 1\n"
    assert parse_action(fenced(code)).backend is None
    assert parse_action(fenced(code), backend="triton").backend == "triton"


@pytest.mark.parametrize(
    ("declared", "code", "found"), [("triton", CUDA_CODE, "cuda"), ("cuda", TRITON_CODE, "triton")]
)
def test_backend_mismatch(declared, code, found):
    parsed = parse_action(fenced(code), backend=declared)
    assert not parsed.ok
    assert f"expects a {declared} solution" in parsed.error and f"the code is {found}" in parsed.error
    assert parsed.backend is None


def test_same_backend_declared_is_fine():
    parsed = parse_action(fenced(TRITON_CODE), backend="triton")
    assert parsed.ok and parsed.backend == "triton"
