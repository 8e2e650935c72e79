"""Zero false rejections: genuine solutions pass strict and standard with no violation."""

import ast
import pathlib

import pytest

from kernel_gym.checks import list_presets, run_static_checks
from kernel_gym.checks.context import Context
from kernel_gym.checks.presets import PRESETS
from kernel_gym.tasks import list_tasks, load_task

HERE = pathlib.Path(__file__).resolve().parent
GENUINE = sorted(HERE.glob("genuine/*.py"))
PROJECT_SOLUTIONS = sorted((HERE.parents[1] / "tests" / "solutions").rglob("level*.py"))
SHARED_EXAMPLE = pathlib.Path("/work/shared/examples/square_plus_one_triton.py")
ALL = GENUINE + PROJECT_SOLUTIONS


@pytest.mark.parametrize("path", GENUINE, ids=lambda p: p.name)
@pytest.mark.parametrize("preset", ["strict", "standard", "permissive"])
def test_genuine_solution_passes(path, preset):
    assert run_static_checks(path.read_text(), preset) == []


def _task_dtype(path: pathlib.Path) -> str:
    """The dtype of the task a project solution is for (level3_kv_cache_decode.py -> level3/kv_cache_decode), as
    the env passes it to the rules (a bf16 task's solution may compute in bf16/tf32)."""
    task = path.stem.replace("_", "/", 1)
    return load_task(task).dtype if task in list_tasks() else "float32"


@pytest.mark.parametrize("path", PROJECT_SOLUTIONS, ids=lambda p: p.name)
def test_project_solutions_pass(path):
    """The project's reference solutions (tests/solutions) pass standard; strict may only object
    to a library GEMM/conv kept on purpose."""
    code, dtype = path.read_text(), _task_dtype(path)
    assert run_static_checks(code, "standard", task_dtype=dtype) == []
    assert run_static_checks(code, "permissive", task_dtype=dtype) == []
    assert {v.rule for v in run_static_checks(code, "strict", task_dtype=dtype)} <= {"library_op"}


@pytest.mark.skipif(not SHARED_EXAMPLE.exists(), reason="shared example missing")
@pytest.mark.parametrize("preset", list_presets())
def test_shared_example_passes_every_preset(preset):
    assert run_static_checks(SHARED_EXAMPLE.read_text(), preset) == []


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_genuine_solution_has_launches_found(path):
    code = path.read_text()
    ctx = Context(code, ast.parse(code), PRESETS["strict"], None, "float32", False)
    assert ctx.launches, "the analysis should see the solution's own kernel launch"


def test_cuda_solution_passes_with_cuda_backend_and_fails_triton_backend():
    code = (HERE / "genuine" / "cuda_load_inline.py").read_text()
    assert run_static_checks(code, "strict", backend="cuda") == []
    assert [v.rule for v in run_static_checks(code, "strict", backend="triton")] == ["no_kernel"]


def test_linear_params_only_passes_strict():
    code = (HERE / "genuine" / "linear_params_only.py").read_text()
    assert "self.linear.weight" in code
    assert run_static_checks(code, "strict") == []
