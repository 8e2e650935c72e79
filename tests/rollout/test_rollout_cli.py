"""`kernel-gym rollout` and `kernel-gym report`, run as real subprocesses."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CLI = Path(sys.executable).with_name("kernel-gym")
PNG = b"\x89PNG\r\n\x1a\n"


def kernel_gym(*args: str, cwd: Path, timeout: float = 240) -> subprocess.CompletedProcess:
    command = [str(CLI)] if CLI.exists() else [shutil.which("kernel-gym") or "kernel-gym"]
    return subprocess.run(command + list(args), cwd=cwd, capture_output=True, text=True, timeout=timeout)


@pytest.mark.timeout(300)
def test_rollout_then_report(repo_root, tmp_path, solution, respond, relu_code):
    # Replay: trajectory 0 of every configuration is wrong on turn 1; everything else is the genuine solution.
    responses = tmp_path / "responses.jsonl"
    good, wrong = respond(solution("level1/relu")), respond(relu_code(body="tl.minimum(x, 0.0)"))
    rows = [{"task": "level1/relu", "response": good},
            {"task": "level1/relu", "trajectory": 0, "turn": 1, "response": wrong}]
    responses.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "run"
    proc = kernel_gym("rollout", "--policy", f"replay:{responses}", "--tasks", "level1/relu", "--configs", "2x1,1x2",
                      "--out", str(out), "--device", "cpu", "--workers", "1", "--no-progress", cwd=repo_root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "3 trajectories run, 0 already complete" in proc.stdout
    table = proc.stdout.splitlines()
    header = next(i for i, line in enumerate(table) if line.split()[:2] == ["config", "tasks"])
    rows_2x1 = table[header + 2].split()
    assert rows_2x1[:5] == ["2x1", "1", "2", "2", "50.0%"]  # config, tasks, trajectories, attempts, correct
    assert table[header + 3].split()[:5] == ["1x2", "1", "1", "2", "50.0%"]

    again = kernel_gym("rollout", "--policy", f"replay:{responses}", "--tasks", "level1/relu", "--configs", "2x1",
                       "--out", str(out), "--device", "cpu", "--workers", "1", "--no-progress", cwd=repo_root)
    assert again.returncode == 0 and "0 trajectories run, 2 already complete" in again.stdout

    report_dir = tmp_path / "report"
    rep = kernel_gym("report", str(out), "--out", str(report_dir), "--thresholds", "0,1", cwd=repo_root)
    assert rep.returncode == 0, rep.stderr[-3000:]
    for name in ("speedup_vs_turn.png", "serial_vs_parallel.png", "best_at_k.png"):
        data = (report_dir / name).read_bytes()
        assert data.startswith(PNG) and len(data) > 5000, name
    summary = (report_dir / "summary.md").read_text()
    assert "| 2x1 | 1 | 2 | 2 | 50.0% | 100.0% |" in summary and "![serial vs parallel](serial_vs_parallel.png)" in summary
    assert "replay:" in summary and "level1/relu" in summary
    assert "## Which configuration wins" in summary and "| 2x1 - 1x2 | 1 |" in summary
    assert "no winner (one task: no interval)" in summary  # one task: the report does not name a winner
    metrics = json.loads((report_dir / "metrics.json").read_text())
    assert set(metrics) == {"2x1", "1x2"} and metrics["1x2"]["solved"] == 1.0
    assert set(metrics["2x1"]["fast_p"]) == {"0", "1"}


def test_usage_errors_exit_2(repo_root, tmp_path):
    proc = kernel_gym("rollout", "--policy", "nope:x", "--tasks", "level1/relu", "--out", str(tmp_path),
                      cwd=repo_root, timeout=60)
    assert proc.returncode == 2 and "unknown policy kind" in proc.stderr
    proc = kernel_gym("report", str(tmp_path / "missing"), cwd=repo_root, timeout=60)
    assert proc.returncode == 2 and "no such folder" in proc.stderr
    proc = kernel_gym("report", str(tmp_path), cwd=repo_root, timeout=60)
    assert proc.returncode == 2 and "no rollout log records" in proc.stderr


def test_fail_on_summary_error_exits_1_when_summaries_fell_back(monkeypatch, tmp_path, capsys):
    """`--fail-on-summary-error`: a rollout whose summarizer failed (turns fell back to the extractive summary) exits
    1 and says the rate, instead of passing silently."""
    import argparse
    from types import SimpleNamespace

    import kernel_gym.rollout as rollout
    from kernel_gym.commands import rollout as command
    from kernel_gym.metrics import Attempt, Trajectory, summarize

    attempts = (Attempt(turn=1, correct=False, summary_fallback=True), Attempt(turn=2, correct=False))
    trajs = [Trajectory("level1/relu", "1x2", 0, attempts, turns=2)]
    fake = SimpleNamespace(tasks=["level1/relu"], budgets=[SimpleNamespace(label="1x2")], ran=1, skipped=0,
                           metrics=lambda: summarize(trajs))
    monkeypatch.setattr(rollout, "evaluate", lambda *a, **k: fake)
    parser = argparse.ArgumentParser()
    command.register(parser.add_subparsers())
    args = parser.parse_args(["rollout", "--policy", "scripted:demo", "--tasks", "level1/relu", "--out",
                              str(tmp_path), "--no-progress"])
    assert command.run_rollout(args) == 0
    args.fail_on_summary_error = True
    assert command.run_rollout(args) == 1
    assert "summary_fallback rate: 1x2 50.0%" in capsys.readouterr().err


@pytest.mark.timeout(300)
def test_ctrl_c_stops_a_rollout_within_2_s_and_keeps_the_log(repo_root, tmp_path, respond, relu_code,
                                                             runner_scratch):
    """SIGINT during a rollout whose steps are slow (a forward that takes 6 s), once one of them is inside its
    forward: out within 2 s (it waited for the live trajectories' current steps: ~25 s with real evaluations), exit
    code 130, every logged turn kept (trajectory 0's first turn, an answer with no code, is logged at once)."""
    import signal
    import subprocess
    import sys
    import time

    responses = tmp_path / "responses.jsonl"
    inside = runner_scratch / "inside_forward"
    slow = respond(relu_code(extra=f"import time\nopen({str(inside)!r}, 'w').close()\ntime.sleep(6)"))
    rows = [{"task": "level1/relu", "response": slow},
            {"task": "level1/relu", "trajectory": 0, "turn": 1, "response": "I have no kernel for this yet."}]
    responses.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "kernel_gym.cli", "rollout", "--policy", f"replay:{responses}",
                             "--tasks", "level1/relu", "--configs", "4x2", "--device", "cpu", "--out", str(out),
                             "--no-progress", "--workers", "2", "--env", "checks=none"], cwd=repo_root,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    log = out / "rollout.jsonl"
    deadline = time.monotonic() + 240
    while not (inside.exists() and log.exists() and log.read_text().count("\n") >= 1):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.2)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    took = time.monotonic() - t0
    assert proc.returncode == 130 and "interrupted" in err, (proc.returncode, err[-2000:])
    assert took < 2.0, took
    assert log.read_text().count("\n") >= 1
