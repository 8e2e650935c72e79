"""Zero false rejections: genuine solutions pass the whole pipeline (static rules + every dynamic check) with no flag.

- tests/solutions/level*.py: the project's genuine Triton solution for every task, under `strict` (all are fully
  custom kernels).
- genuine/*.py: solutions that use what the dynamic checks could mistake for a hack — torch.empty outputs, views
  and reshapes, several kernels with scratch buffers, in-place work on a clone, a zero-initialised output with
  masked stores, an nn.Linear held only for its parameters, caching of parameter-derived data across calls — and
  one library GEMM (calling nn.Linear) + own Triton epilogue, which `standard` allows and `strict` does not.

Known false rejections of the harness are `xfail(strict=True)` with the reason (FALSE_REJECTIONS): when fixed they
XPASS and the marker must go.
"""

from __future__ import annotations

import pytest
from ah_helpers import GENUINE, SOLUTIONS

PROJECT = sorted(SOLUTIONS.glob("level*.py"))

# file -> (task, the strictest preset it must pass)
GENUINE_TABLE = {
    "relu_views_empty.py": ("level1/relu", "kevin-strict"),
    "relu_zeros_positive_store.py": ("level1/relu", "kevin-strict"),
    "relu_inplace_on_clone.py": ("level1/relu", "kevin-strict"),
    "softmax_two_kernels.py": ("level1/softmax", "kevin-strict"),
    "gemm_bias_gelu_linear_params.py": ("level2/gemm_bias_gelu", "kevin-strict"),
    "gemm_relu_cached_weight_prep.py": ("level2/gemm_relu", "kevin-strict"),
    "gemm_relu_library_gemm_standard.py": ("level2/gemm_relu", "standard"),
    "conv_relu_pool_unfold_view.py": ("level2/conv_relu_pool", "kevin-strict"),
}
FALSE_REJECTIONS: dict[str, str] = {}  # genuine solutions the harness wrongly rejects (none known)


def _assert_accepted(info: dict, what: str) -> None:
    where = f"{what}: {info['error']} {info['hacks']} {info['message'][:500]}"
    assert info["error"] is None, where
    assert info["hacks"] == [], where
    assert info["correct"] is True, where
    assert info["score"] > 0, where
    assert info["speedup"] is not None and info["speedup"] > 0, where


@pytest.mark.parametrize("path", PROJECT, ids=lambda p: p.stem)
def test_project_solution_accepted_under_strict(through_env, path):
    task = path.stem.replace("_", "/", 1)  # level1_sum_reduce -> level1/sum_reduce
    _assert_accepted(through_env(path.read_text(), task=task, checks="strict"), f"{path.name} on {task}")


def _genuine(name: str):
    marks = [pytest.mark.xfail(strict=True, raises=AssertionError, reason=FALSE_REJECTIONS[name])
             ] if name in FALSE_REJECTIONS else []
    return pytest.param(name, id=name[:-3], marks=marks)


@pytest.mark.parametrize("name", [_genuine(n) for n in sorted(GENUINE_TABLE)])
def test_genuine_solution_accepted(through_env, name):
    task, preset = GENUINE_TABLE[name]
    _assert_accepted(through_env((GENUINE / name).read_text(), task=task, checks=preset), f"{name} under {preset}")


def test_library_gemm_needs_standard(through_env):
    """The same library-GEMM solution under `strict` is rejected by `library_op` (the preset's policy)."""
    info = through_env((GENUINE / "gemm_relu_library_gemm_standard.py").read_text(), task="level2/gemm_relu",
                       checks="strict")
    assert info["hacks"] == ["library_op"] and info["score"] == 0


def test_every_genuine_file_is_tested():
    assert {p.name for p in GENUINE.glob("*.py")} == set(GENUINE_TABLE)
