"""The `kernel-gym` command line, run as a real subprocess."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernel_gym.tasks import list_tasks

CLI = Path(sys.executable).with_name("kernel-gym")


def kernel_gym(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    command = [str(CLI)] if CLI.exists() else [shutil.which("kernel-gym") or "kernel-gym"]
    return subprocess.run(command + list(args), cwd=cwd, capture_output=True, text=True, timeout=timeout)


def test_tasks_lists_every_id(repo_root):
    proc = kernel_gym("tasks", cwd=repo_root)
    assert proc.returncode == 0, proc.stderr
    listed = {line.split()[0] for line in proc.stdout.splitlines()[1:-1]}
    assert listed == set(list_tasks())
    assert proc.stdout.splitlines()[-1] == f"{len(list_tasks())} tasks"


def test_tasks_of_one_suite(repo_root):
    proc = kernel_gym("tasks", "--suite", "level2", cwd=repo_root)
    assert proc.returncode == 0
    assert {line.split()[0] for line in proc.stdout.splitlines()[1:-1]} == set(list_tasks("level2"))


@pytest.mark.timeout(150)
def test_eval_correct_solution_prints_one_json_object(repo_root):
    proc = kernel_gym(
        "eval",
        "--task",
        "level1/relu",
        "--solution",
        "tests/solutions/level1_relu.py",
        "--device",
        "cpu",
        "--json",
        cwd=repo_root,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stdout
    info = json.loads(lines[0])
    assert info["correct"] is True and info["error"] is None
    assert info["task"] == "level1/relu" and info["turn"] == 1
    assert info["score"] == pytest.approx(0.3 + info["speedup"])
    assert info["returns"] == [info["score"]]


@pytest.mark.timeout(150)
def test_eval_incorrect_solution_still_exits_zero(repo_root, relu_code, tmp_path):
    wrong = tmp_path / "wrong.py"
    wrong.write_text(relu_code(body="tl.minimum(x, 0.0)"))
    proc = kernel_gym(
        "eval", "--task", "level1/relu", "--solution", str(wrong), "--device", "cpu", "--json", cwd=repo_root
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    info = json.loads(proc.stdout)
    assert info["correct"] is False and info["error"] == "mismatch" and info["score"] == 0.0


def test_eval_missing_file_is_a_usage_error(repo_root, tmp_path):
    proc = kernel_gym(
        "eval",
        "--task",
        "level1/relu",
        "--solution",
        str(tmp_path / "nope.py"),
        "--device",
        "cpu",
        "--json",
        cwd=repo_root,
    )
    assert proc.returncode != 0
    assert "no such solution file" in proc.stderr
    assert proc.stdout == ""


@pytest.mark.timeout(150)
def test_eval_unknown_task_is_a_usage_error(repo_root):
    proc = kernel_gym(
        "eval",
        "--task",
        "level1/rleu",
        "--solution",
        "tests/solutions/level1_relu.py",
        "--device",
        "cpu",
        "--json",
        cwd=repo_root,
    )
    assert proc.returncode != 0
    assert "unknown task 'level1/rleu'" in proc.stderr and "level1/relu" in proc.stderr
    assert proc.stdout == ""


def test_missing_subcommand_is_a_usage_error(repo_root):
    assert kernel_gym(cwd=repo_root).returncode != 0


@pytest.mark.timeout(150)
def test_demo_runs_and_prints_scores(repo_root):
    proc = kernel_gym("demo", cwd=repo_root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "TURN 1" in out and "TURN 3" in out
    assert "outcome=correct" in out
    scores_line = next(line for line in out.splitlines() if line.startswith("scores  = "))
    returns_line = next(line for line in out.splitlines() if line.startswith("returns = "))
    scores = json.loads(scores_line.split("=", 1)[1])
    assert len(scores) == 3 and scores[-1] > 0.3
    assert json.loads(returns_line.split("=", 1)[1].split("(")[0])[-1] == scores[-1]
