"""Reports that do not mislead: CPU-scale speedups keep their digits, every mean over tasks has a bootstrap interval,
plots start at 0 with error bars, unequal budgets are called so, and CPU runs say their speedups mean nothing."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kernel_gym.metrics import Attempt, Trajectory, bootstrap_ci, summarize
from kernel_gym.report import _fmt, plot_best_at_k, plot_budget, plot_turns, summary_table
from kernel_gym.rollout.budget import parse_budgets, unequal_budgets

CLI = Path(sys.executable).with_name("kernel-gym")


def trajectories(speedups: dict[str, list[float]], config: str = "2x1") -> list[Trajectory]:
    return [Trajectory(task, config, i, (Attempt(turn=1, correct=True, speedup=s),))
            for task, values in speedups.items() for i, s in enumerate(values)]


def test_cpu_scale_speedups_keep_their_digits():
    assert _fmt(0.000412) == "0.000412" and _fmt(0.0) == "0.000" and _fmt(1.23456) == "1.235" and _fmt(0.267) == "0.267"


def test_bootstrap_interval_over_tasks():
    assert bootstrap_ci([2.0]) == [(2.0, 2.0)]  # one task: no spread to estimate
    values = [1.0, 1.2, 0.8, 1.1, 0.9, 1.0, 1.3, 0.7]
    (low, high), = bootstrap_ci(values)
    assert low < sum(values) / len(values) < high and bootstrap_ci(values) == [(low, high)]  # seeded
    (wide_low, wide_high), = bootstrap_ci(values[:3])
    assert wide_high - wide_low > high - low  # fewer tasks, wider interval
    curve = bootstrap_ci([[1.0, 2.0], [3.0, 4.0]])
    assert len(curve) == 2 and curve[0][0] >= 1.0 and curve[1][1] <= 4.0


def test_identical_kernels_differ_inside_their_intervals():
    """Two configurations of the same kernels, timing noise of 1 %: their intervals overlap, and both plots start
    at 0 so the 1 % reads as the wiggle it is."""
    a = trajectories({f"t{i}": [1.00 + 0.01 * (i % 3)] * 2 for i in range(6)}, "2x1")
    b = trajectories({f"t{i}": [1.01 - 0.01 * (i % 2)] * 2 for i in range(6)}, "2x1b")
    metrics = summarize([*a, *[Trajectory(t.task, "1x2", t.index, t.attempts, 0) for t in b]])
    (la, ha), (lb, hb) = metrics["2x1"].ci["mean_speedup"], metrics["1x2"].ci["mean_speedup"]
    assert la <= hb and lb <= ha
    assert "mean speedup [95% CI]" in summary_table(metrics) and f"[{_fmt(la)}, {_fmt(ha)}]" in summary_table(metrics)
    for fig in (plot_turns(metrics), plot_budget(metrics), plot_best_at_k(metrics)):
        for ax in fig.axes:
            assert ax.get_ylim()[0] == 0
            assert ax.containers, "no error bars"  # ErrorbarContainer per curve
        assert "95% bootstrap intervals over tasks" in fig._suptitle.get_text()


def test_unequal_budgets_are_named():
    assert unequal_budgets(parse_budgets("128x1,32x4,16x8")) is None
    note = unequal_budgets(parse_budgets("3x1,1x2"))
    assert "unequal budgets" in note and "3x1 = 3" in note and "1x2 = 2" in note
    metrics = summarize(trajectories({"t": [1.0, 1.1, 1.2]}, "3x1") + trajectories({"t": [1.0]}, "1x1"))
    assert "unequal" in plot_budget(metrics).axes[0].get_title()
    assert "equal budget" in plot_budget(summarize(trajectories({"t": [1.0]}, "1x1"))).axes[0].get_title()


@pytest.mark.timeout(300)
def test_rollout_warns_on_unequal_budgets_and_cpu(repo_root, tmp_path, solution, respond):
    responses = tmp_path / "responses.jsonl"
    responses.write_text(json.dumps({"task": "level1/relu", "response": respond(solution("level1/relu"))}) + "\n")
    command = [str(CLI)] if CLI.exists() else [sys.executable, "-m", "kernel_gym.cli"]
    out = tmp_path / "run"
    proc = subprocess.run(command + ["rollout", "--policy", f"replay:{responses}", "--tasks", "level1/relu",
                                     "--configs", "2x1,1x1", "--out", str(out), "--device", "cpu", "--no-progress",
                                     "--report"], cwd=repo_root, capture_output=True, text=True, timeout=280)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "unequal budgets (attempts per task: 2x1 = 2, 1x1 = 1)" in proc.stderr
    assert "CPU backend: speedups are wall-clock ratios" in proc.stdout and "[95% CI]" in proc.stdout
    summary = (out / "summary.md").read_text()
    assert "warning: unequal budgets" in summary and "say nothing about GPU speed" in summary
