"""What a new user trips over on the command line (issue 24): each mistake gets one clear line and a non-zero exit,
never a traceback; training-data commands keep held-out tasks out by default."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kernel_gym.cli import main
from kernel_gym.tasks import list_tasks

CLI = Path(sys.executable).with_name("kernel-gym")
TRAIN, HELD_OUT = list_tasks("level1", "train")[0], list_tasks("level1", "eval")[0]


def cli(*args: str, cwd: Path, timeout: float = 120, **kwargs) -> subprocess.CompletedProcess:
    command = [str(CLI)] if CLI.exists() else [sys.executable, "-m", "kernel_gym.cli"]
    return subprocess.run(command + list(args), cwd=cwd, capture_output=True, text=True, timeout=timeout, **kwargs)


def one_line_error(proc: subprocess.CompletedProcess, *needles: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


def no_gpu() -> bool:
    import torch

    return not torch.cuda.is_available()


# ---- 1. training data: the train split unless asked otherwise ---------------------------------------------------
def test_openrlhf_data_defaults_to_the_train_split_and_says_so(tmp_path, capsys):
    out = tmp_path / "prompts.jsonl"
    assert main(["openrlhf-data", "--suite", "level1", "--out", str(out), "--device", "cpu"]) == 0
    tasks = {json.loads(json.loads(line)["label"])["task"] for line in out.read_text().splitlines()}
    assert tasks == set(list_tasks("level1", "train")) and HELD_OUT not in tasks
    assert "the train split only; the eval split is held out" in capsys.readouterr().out
    assert main(["openrlhf-data", "--suite", "level1", "--out", str(out), "--device", "cpu", "--split", "all"]) == 0
    assert len(out.read_text().splitlines()) == len(list_tasks("level1"))
    assert "train and eval splits mixed" in capsys.readouterr().out


def step_record(task: str, episode: str, speedup: float | None) -> dict:
    correct = speedup is not None
    info = {"turn": 1, "task": task, "score": 0.3 + speedup if correct else 0.0, "correct": correct,
            "speedup": speedup, "error": None if correct else "mismatch", "hacks": [], "returns": [0.0],
            "runtime_ms": 1.0 / speedup if correct else None, "baseline_ms": 1.0 if correct else None,
            "timing": {"runtime_cv": 0.01, "baseline_cv": 0.01} if correct else None, "device": "cpu"}
    if correct:
        info["returns"] = [info["score"]]
    return {"episode_id": episode, "task": task, "turn": 1, "prompt": f"prompt of {task}",
            "action": f"```python\n# {episode}\nclass ModelNew: pass\n```", "info": info}


@pytest.fixture
def mixed_log(tmp_path):
    """A log with episodes of a train task and a held-out task, each a correct and an incorrect response."""
    path = tmp_path / "log.jsonl"
    records = [step_record(task, f"{task}-{i}", speedup) for task in (TRAIN, HELD_OUT)
               for i, speedup in enumerate((2.0, None))]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_samples_default_to_the_train_split(mixed_log, tmp_path, capsys):
    out = tmp_path / "samples.jsonl"
    assert main(["samples", str(mixed_log), "--out", str(out)]) == 0
    assert {json.loads(line)["task"] for line in out.read_text().splitlines()} == {TRAIN}
    err = capsys.readouterr().err
    assert "left out 2 episodes of tasks outside the train split (--split all keeps them)" in err
    assert main(["samples", str(mixed_log), "--out", str(out), "--split", "all"]) == 0
    assert {json.loads(line)["task"] for line in out.read_text().splitlines()} == {TRAIN, HELD_OUT}
    assert main(["samples", str(mixed_log), "--out", str(out), "--split", "eval"]) == 0
    assert {json.loads(line)["task"] for line in out.read_text().splitlines()} == {HELD_OUT}


def test_pairs_default_to_the_train_split(mixed_log, tmp_path, capsys):
    out = tmp_path / "pairs.jsonl"
    assert main(["pairs", str(mixed_log), "--out", str(out)]) == 0
    assert {json.loads(line)["task"] for line in out.read_text().splitlines()} == {TRAIN}
    assert "left out 2 responses to tasks outside the train split" in capsys.readouterr().err
    assert main(["pairs", str(mixed_log), "--out", str(out), "--split", "all"]) == 0
    assert {json.loads(line)["task"] for line in out.read_text().splitlines()} == {TRAIN, HELD_OUT}


# ---- 3. no GPU, asked for one -----------------------------------------------------------------------------------
@pytest.mark.skipif(not no_gpu(), reason="a GPU is visible: device='cuda' is allowed here")
@pytest.mark.parametrize("command", [["demo", "--device", "cuda"],
                                     ["eval", "--task", "level1/relu", "--solution", "tests/solutions/level1_relu.py",
                                      "--device", "cuda", "--json"]])
def test_cuda_without_a_gpu_is_one_line_and_exit_2(repo_root, command):
    proc = cli(*command, cwd=repo_root)
    one_line_error(proc, f"kernel-gym {command[0]}: device='cuda' but no CUDA GPU is visible")
    assert proc.stdout == ""


@pytest.mark.skipif(not no_gpu(), reason="a GPU is visible: device='cuda' is allowed here")
def test_gym_make_cuda_without_a_gpu_raises_before_any_step():
    import gymnasium as gym

    from kernel_gym.errors import DeviceUnavailableError

    with pytest.raises(DeviceUnavailableError, match="no CUDA GPU is visible"):
        gym.make("KernelRefine-v0", task="level1/relu", device="cuda")


# ---- 6. silent no-ops ---------------------------------------------------------------------------------------------
def test_unknown_suite_is_an_error(repo_root):
    one_line_error(cli("tasks", "--suite", "level4", cwd=repo_root), "unknown suite 'level4'", "Did you mean")


@pytest.mark.parametrize("command", ["samples", "pairs"])
def test_a_file_that_is_not_a_log_is_an_error(repo_root, tmp_path, command):
    proc = cli(command, "README.md", "--out", str(tmp_path / "out.jsonl"), cwd=repo_root)
    one_line_error(proc, "README.md is not a trajectory log")
    assert not (tmp_path / "out.jsonl").exists()
    binary = tmp_path / "model.bin"
    binary.write_bytes(bytes(range(256)) * 10)
    one_line_error(cli(command, str(binary), "--out", str(tmp_path / "out.jsonl"), cwd=repo_root), "not a trajectory log")


def test_output_into_a_closed_pipe_ends_quietly(repo_root):
    """`kernel-gym tasks | head -1`: the reader is gone before the output is; no BrokenPipeError traceback."""
    import os

    read_end, write_end = os.pipe()
    os.close(read_end)  # closed before the first write: deterministic, whatever the pipe buffer holds
    command = [str(CLI)] if CLI.exists() else [sys.executable, "-m", "kernel_gym.cli"]
    try:
        proc = subprocess.run(command + ["tasks"], cwd=repo_root, stdout=write_end, stderr=subprocess.PIPE,
                              timeout=60)
    finally:
        os.close(write_end)
    assert proc.returncode == 141 and proc.stderr.decode() == ""  # 128 + SIGPIPE, as `ls | head` reports


# ---- 7. CLI gaps --------------------------------------------------------------------------------------------------
def test_version(repo_root):
    import kernel_gym

    proc = cli("--version", cwd=repo_root)
    assert proc.returncode == 0 and proc.stdout.strip() == f"kernel-gym {kernel_gym.__version__}"


def test_eval_help_shows_every_flag_with_its_default(repo_root):
    proc = cli("eval", "--help", cwd=repo_root)
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    for flag in ("--task", "--solution", "--backend", "--device", "--checks", "--seed", "--json"):
        assert flag in text
    assert "{auto,triton,cuda,cuda_raw,helion,cute_dsl,tilelang}" in text and "(default: standard)" in text and "(default: auto)" in text
    assert "docs/info.md" in text


def test_eval_empty_solution_is_a_usage_error(repo_root, tmp_path):
    empty = tmp_path / "empty.py"
    empty.write_text("\n \n")
    one_line_error(cli("eval", "--task", "level1/relu", "--solution", str(empty), "--device", "cpu", cwd=repo_root),
                   "is empty")


def test_eval_missing_task_file_says_file_not_found(repo_root, tmp_path):
    one_line_error(cli("eval", "--task", str(tmp_path / "nope.py"), "--solution", "tests/solutions/level1_relu.py",
                       "--device", "cpu", cwd=repo_root), "task file not found")


@pytest.mark.timeout(150)
def test_eval_accepts_the_cuda_raw_backend(repo_root):
    proc = cli("eval", "--task", "level1/relu", "--solution", "tests/solutions/level1_relu.py", "--backend", "cuda_raw",
               "--device", "cpu", "--json", cwd=repo_root)
    assert proc.returncode == 0, proc.stderr[-2000:]  # evaluated: a Triton solution where cuda_raw is asked for
    info = json.loads(proc.stdout)
    assert info["error"] == "format_error" and "cuda_raw" in info["feedback"]


def test_a_run_folder_may_hold_other_jsonl_files(mixed_log, tmp_path):
    """Samples written beside a run's log do not make the folder "not a log" on the next export."""
    out = mixed_log.parent / "samples.jsonl"
    assert main(["samples", str(mixed_log.parent), "--out", str(out)]) == 0
    assert main(["samples", str(mixed_log.parent), "--out", str(out)]) == 0
    assert main(["pairs", str(mixed_log.parent), "--out", str(tmp_path / "pairs.jsonl")]) == 0
    empty = tmp_path / "empty_dir"
    empty.mkdir()
    assert main(["samples", str(empty), "--out", str(tmp_path / "s.jsonl")]) == 2
