"""`kernel-gym lint`: the static rules alone on a solution file, nothing executed (issue 22)."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernel_gym.cli import main

ROOT = Path(__file__).resolve().parents[1]
SHAPES = ROOT / "tests" / "anti_hacking" / "shapes"
ATTACKS = ROOT / "tests" / "anti_hacking" / "attacks"


def lint(capsys, *args: str) -> tuple[int, dict | str]:
    code = main(["lint", *args])
    out = capsys.readouterr().out
    return code, (json.loads(out) if "--json" in args else out)


def test_genuine_cuda_solution_passes_without_building_it(capsys):
    """A load_inline CUDA solution is linted on a machine without nvcc use: nothing is compiled."""
    code, verdict = lint(capsys, "--task", "level1/matmul", "--solution", str(SHAPES / "cuda_fn_on_self.py"), "--json")
    assert code == 0
    assert verdict["ok"] is True and verdict["violations"] == [] and verdict["backend"] == "cuda"
    assert verdict["task_policy"] == {"library_gemm": False, "epilogue_reduction": False, "single_gemm": True,
                                      "final_reductions": []}


def test_library_call_that_is_the_whole_task_is_reported(capsys):
    path = str(ATTACKS / "01_library_gemm_whole_task.py")
    code, verdict = lint(capsys, "--task", "level1/matmul", "--solution", path, "--json")
    assert code == 0  # a verdict, not a usage error
    assert verdict["ok"] is False and verdict["hacks"] == ["library_op"]
    assert verdict["violations"][0]["line"] and "nothing else" in verdict["violations"][0]["message"]
    code, verdict = lint(capsys, "--task", "level1/matmul", "--solution", path, "--checks", "permissive", "--json")
    assert verdict["ok"] is True and verdict["checks"] == "permissive"
    assert main(["lint", "--task", "level1/matmul", "--solution", path, "--exit-code"]) == 1
    assert "[library_op]" in capsys.readouterr().out


def test_a_response_is_linted_on_its_last_code_block(capsys, tmp_path):
    response = tmp_path / "response.md"
    body = (SHAPES / "triton_kernel_on_self.py").read_text()
    response.write_text(f"Some reasoning.\n\n```python\nprint('draft')\n```\n\nFinal:\n```python\n{body}```\n")
    code, verdict = lint(capsys, "--task", "level1/relu", "--solution", str(response), "--json")
    assert code == 0 and verdict["ok"] is True and verdict["backend"] == "triton" and verdict["error"] is None


@pytest.mark.parametrize("args", [
    ["--task", "level1/relu", "--solution", "no/such/file.py"],
    ["--task", "level1/no_such_task", "--solution", str(SHAPES / "triton_kernel_on_self.py")],
    ["--task", "level1/relu", "--solution", str(SHAPES / "triton_kernel_on_self.py"), "--checks", "nope"],
])
def test_usage_errors_exit_2(capsys, args):
    assert main(["lint", *args]) == 2
    assert "kernel-gym lint:" in capsys.readouterr().err


def test_lint_as_a_real_subprocess():
    cli = Path(sys.executable).with_name("kernel-gym")
    command = [str(cli)] if cli.exists() else [shutil.which("kernel-gym") or "kernel-gym"]
    proc = subprocess.run(command + ["lint", "--task", "level1/mse_loss", "--solution",
                                     str(SHAPES / "triton_epilogue_reduction.py"), "--checks", "strict", "--json"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    verdict = json.loads(proc.stdout)
    assert verdict["hacks"] == ["library_op"] and "partials.sum" in verdict["violations"][0]["message"]
