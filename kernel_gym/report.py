"""`kernel-gym report DIR`: plots (PNG, rendered by matplotlib's Agg) and a markdown summary of a rollout folder.

Files written into the folder (or `out`):
- `speedup_vs_turn.png`: best-so-far mean speedup by turn, per configuration (best of all K trajectories; and the
  mean over trajectories of each one's best so far).
- `serial_vs_parallel.png`: mean best speedup and solved fraction against attempts per task (k·T for k = 1..K):
  every configuration at every budget up to its own, so the configurations meet at their common (equal) budget.
- `best_at_k.png`: best@k against k trajectories.
- `summary.md`: the run's settings, the metrics table, per-turn curves, Not-Okay reasons, per-task bests.
- `metrics.json`: every metric per configuration.

Every mean over tasks is shown with its 95 % bootstrap interval over tasks (error bars, `[low, high]` in the
tables), every y-axis starts at 0, configurations of unequal budgets are said to be so (titles and a warning), and a
CPU-backend run says that its speedups say nothing about GPU speed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from kernel_gym.errors import ConfigError
from kernel_gym.metrics import DEFAULT_THRESHOLDS, ConfigMetrics, Trajectory, by_task, paired_difference, summarize
from kernel_gym.rollout import log as rlog

PLOTS = ("speedup_vs_turn.png", "serial_vs_parallel.png", "best_at_k.png")


CPU_NOTE = ("CPU backend: speedups are wall-clock ratios of the Triton interpreter against eager PyTorch on CPU; "
            "they say nothing about GPU speed (run on device=cuda for speedups that mean something)")


def _fmt(value: float) -> str:
    """3 decimals from 1 up, 3 significant digits below: a CPU-scale speedup of 0.0004 is not shown as 0.000."""
    if value == 0 or abs(value) >= 1:
        return f"{value:.3f}"
    return f"{value:.3g}"


def _interval(ci: Sequence[float] | None) -> str:
    return "" if not ci else f" [{_fmt(ci[0])}, {_fmt(ci[1])}]"


def budget_note(metrics: dict[str, ConfigMetrics]) -> str | None:
    """A warning when the configurations compared do not have the same number of attempts per task, else None."""
    from kernel_gym.rollout.budget import parse_budgets, unequal_budgets

    return unequal_budgets(parse_budgets([m.config for m in metrics.values()])) if metrics else None


def comparison_lines(trajs: list[Trajectory], metrics: dict[str, ConfigMetrics]) -> list[str]:
    """The markdown section that says which configuration wins: each pair's paired difference of mean speedup with
    its 95 % interval, and a winner only when the interval excludes 0 (and the budgets are equal, and there is more
    than one task)."""
    configs = list(metrics)
    if len(configs) < 2:
        return []
    lines = ["", "## Which configuration wins (paired over tasks)", ""]
    unequal = budget_note(metrics)
    rows = []
    for i, a in enumerate(configs):
        for b in configs[i + 1:]:
            d = paired_difference(trajs, a, b)
            verdict = d.winner or "no winner (the interval includes 0)"
            if d.tasks < 2:
                verdict = "no winner (one task: no interval)"
            elif unequal:
                verdict = f"{verdict}; unequal budgets"
            rows.append([f"{a} - {b}", str(d.tasks), _fmt(d.difference) + _interval(d.ci), verdict])
    lines.append(table(["difference", "tasks", "mean speedup difference [95% CI]", "winner"], rows, True))
    lines += ["", "The same tasks' bests are resampled together (a paired bootstrap), so the spread between tasks "
              "cancels; a winner is stated only when the interval excludes 0." + (" Warning: " + unequal
                                                                                  if unequal else "")]
    return lines


def infra_note(metrics: dict[str, ConfigMetrics]) -> str | None:
    """Attempts the evaluation infrastructure failed on: counted as incorrect, they say nothing about the policy."""
    failed = {c: m.infra_failures for c, m in metrics.items() if m.infra_failures}
    if not failed:
        return None
    listed = ", ".join(f"{c}: {n}" for c, n in failed.items())
    return (f"the evaluation infrastructure failed on some attempts ({listed}); they count as incorrect here, so "
            "rerun them before comparing configurations")


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def summary_rows(metrics: dict[str, ConfigMetrics], thresholds: Sequence[float] | None = None) \
        -> tuple[list[str], list[list[str]]]:
    """(headers, rows) of the summary table: one row per configuration (fast_p for p >= 1 unless `thresholds`)."""
    if thresholds is None:
        thresholds = [p for p in next(iter(metrics.values())).fast_p if p >= 1] if metrics else []
    review = any("review_flag" in m.rates for m in metrics.values())  # an LLM reviewer: its flags beside the hacks
    fallback = any(m.rates.get("summary_fallback") for m in metrics.values())  # the model's summaries that failed
    headers = ["config", "tasks", "traj", "attempts", "correct", "solved", "mean speedup [95% CI]",
               *[f"fast_{p:g}" for p in thresholds], "best@1", "hack", *(["review"] if review else []), "format err",
               "not-okay", *(["summary fallback"] if fallback else [])]
    rows = []
    for m in metrics.values():
        rows.append([m.config, str(m.tasks), str(m.trajectories), str(m.attempts), _pct(m.rates["correct"]),
                     _pct(m.solved), _fmt(m.mean_speedup) + _interval(m.ci.get("mean_speedup")), *[_pct(m.fast_p.get(float(p), 0.0)) for p in thresholds],
                     _fmt(m.best_at_k.get(1, 0.0)), _pct(m.rates["hack"]),
                     *([_pct(m.rates.get("review_flag", 0.0))] if review else []), _pct(m.rates["format_error"]),
                     _pct(m.rates["not_okay"]), *([_pct(m.rates.get("summary_fallback", 0.0))] if fallback else [])])
    return headers, rows


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], markdown: bool = False) -> str:
    if markdown:
        lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
        return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])
    widths = [max(len(str(c)) for c in col) for col in zip(headers, *rows)]
    fmt = "  ".join(f"{{:>{w}}}" for w in widths)
    return "\n".join([fmt.format(*headers), fmt.format(*("-" * w for w in widths))] + [fmt.format(*r) for r in rows])


def summary_table(metrics: dict[str, ConfigMetrics], markdown: bool = False) -> str:
    """The metrics of every configuration as a text (or markdown) table."""
    if not metrics:
        return "(no complete trajectories)"
    return table(*summary_rows(metrics), markdown=markdown)


# ---- plots --------------------------------------------------------------------------------------------------------
def _figure(width: float, height: float):
    # A bare Figure (no pyplot): no global backend or figure registry is touched, so plotting is safe in threads,
    # in notebooks and on CI; savefig renders PNG through Agg.
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height))


def _log2_axis(ax) -> None:
    from matplotlib.ticker import FormatStrFormatter, NullFormatter

    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FormatStrFormatter("%g"))  # 1, 2, 4, ... rather than 2^0, 2^1, 2^2
    ax.xaxis.set_minor_formatter(NullFormatter())


def _curve(ax, xs: Sequence[float], ys: Sequence[float], ci: Sequence[Sequence[float]] | None, **kwargs) -> None:
    """A line with its 95 % bootstrap interval over tasks as error bars."""
    if ci and len(ci) == len(ys):
        low = [max(0.0, y - lo) for y, (lo, _) in zip(ys, ci)]
        high = [max(0.0, hi - y) for y, (_, hi) in zip(ys, ci)]
        ax.errorbar(xs, ys, yerr=[low, high], capsize=3, **kwargs)
    else:
        ax.plot(xs, ys, **kwargs)


def _finish(fig, axes, note: str | None) -> None:
    for ax in axes:
        ax.set_ylim(bottom=0)  # from 0: timing noise between identical kernels stays a small wiggle, not a gap
    caption = "error bars: 95% bootstrap intervals over tasks"
    fig.suptitle(caption + (f"\n{note}" if note else ""), fontsize=8, color="firebrick" if note else "black")


def plot_turns(metrics: dict[str, ConfigMetrics], path: Path | None = None, note: str | None = None):
    """Best-so-far mean speedup against the turn, per configuration. Returns the figure (saved when `path`)."""
    fig = _figure(11, 4.4)
    axes = fig.subplots(1, 2, sharey=True)
    for m in metrics.values():
        turns = list(range(1, len(m.turn_best) + 1))
        _curve(axes[0], turns, m.turn_best, m.ci.get("turn_best"), marker="o", label=m.config)
        _curve(axes[1], turns, m.turn_mean, m.ci.get("turn_mean"), marker="o", label=m.config)
    axes[0].set_title("best of all K trajectories, turns <= t")
    axes[1].set_title("one trajectory's best so far (mean over K)")
    for ax in axes:
        ax.set_xlabel("turn t")
        ax.grid(alpha=0.3)
        ax.xaxis.get_major_locator().set_params(integer=True)
    axes[0].set_ylabel("mean best speedup over tasks")
    if metrics:
        axes[0].legend(title="trajectories x turns")
    _finish(fig, axes, note)
    return _save(fig, path)


def plot_budget(metrics: dict[str, ConfigMetrics], path: Path | None = None, note: str | None = None):
    """Serial vs parallel at equal budget: mean best speedup and solved fraction against attempts per task."""
    fig = _figure(11, 4.4)
    axes = fig.subplots(1, 2)
    for m in metrics.values():
        turns = len(m.turn_best) or 1
        xs = [k * turns for k in m.pass_at_k]
        _curve(axes[0], [b for b, _ in m.budget_curve], [v for _, v in m.budget_curve],
               list(m.ci.get("best_at_k", {}).values()), marker=".", label=m.config)
        _curve(axes[1], xs, list(m.pass_at_k.values()), list(m.ci.get("pass_at_k", {}).values()), marker=".",
               label=m.config)
    budgets = sorted({m.budget_curve[-1][0] for m in metrics.values() if m.budget_curve})
    for ax in axes:
        for b in budgets:
            ax.axvline(b, color="grey", lw=0.8, ls="--")
        _log2_axis(ax)
        ax.set_xlabel("attempts per task (k trajectories x T turns)")
        ax.grid(alpha=0.3)
    equal = len(budgets) <= 1
    axes[0].set_ylabel("mean best speedup over tasks")
    axes[0].set_title("speedup at equal budget" if equal else "speedup by budget (unequal final budgets: dashed)")
    axes[1].set_ylabel("fraction of tasks solved")
    axes[1].set_title("correctness at equal budget" if equal else "correctness by budget (unequal final budgets)")
    if metrics:
        axes[0].legend(title="trajectories x turns")
    _finish(fig, axes, note)
    return _save(fig, path)


def plot_best_at_k(metrics: dict[str, ConfigMetrics], path: Path | None = None, note: str | None = None):
    """best@k (expected best speedup of k trajectories, mean over tasks) against k."""
    fig = _figure(6, 4.6)
    ax = fig.subplots()
    for m in metrics.values():
        _curve(ax, list(m.best_at_k), list(m.best_at_k.values()), list(m.ci.get("best_at_k", {}).values()),
               marker="o", label=m.config)
    _log2_axis(ax)
    ax.set_xlabel("k trajectories")
    ax.set_ylabel("best@k: mean best speedup")
    ax.grid(alpha=0.3)
    if metrics:
        ax.legend(title="trajectories x turns")
    _finish(fig, [ax], note)
    return _save(fig, path)


def _save(fig, path: Path | None):
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=110)
    return fig


# ---- the report ---------------------------------------------------------------------------------------------------
def write_report(folder: str | Path, out: str | Path | None = None,
                 thresholds: Sequence[float] = DEFAULT_THRESHOLDS) -> dict[str, Path]:
    """Read `folder`'s rollout log, write the PNGs, summary.md and metrics.json into `out` (default: the folder)."""
    folder = Path(folder)
    trajs = rlog.trajectories(folder)
    if not trajs:
        raise ConfigError(f"{folder} has no rollout log records ({rlog.log_path(folder)})")
    target = Path(out) if out is not None else folder
    target.mkdir(parents=True, exist_ok=True)
    metrics = summarize(trajs, thresholds)
    paths = {name: target / name for name in PLOTS}
    note = CPU_NOTE if run_device(folder) == "cpu" else None
    plot_turns(metrics, paths["speedup_vs_turn.png"], note)
    plot_budget(metrics, paths["serial_vs_parallel.png"], note)
    plot_best_at_k(metrics, paths["best_at_k.png"], note)
    paths["metrics.json"] = target / "metrics.json"
    paths["metrics.json"].write_text(json.dumps({k: _metrics_json(m) for k, m in metrics.items()}, indent=2) + "\n")
    paths["summary.md"] = target / "summary.md"
    paths["summary.md"].write_text(markdown_summary(folder, trajs, metrics, thresholds))
    return paths


def run_device(folder: str | Path) -> str | None:
    """The device a rollout folder's run evaluated on ("cpu" or "cuda"; None when run.json does not say)."""
    return ((rlog.read_run(Path(folder)) or {}).get("env") or {}).get("device")


def _metrics_json(m: ConfigMetrics) -> dict[str, Any]:
    data = asdict(m)
    data["fast_p"] = {f"{p:g}": v for p, v in m.fast_p.items()}
    return data


def markdown_summary(folder: Path, trajs: list[Trajectory], metrics: dict[str, ConfigMetrics],
                     thresholds: Sequence[float] = DEFAULT_THRESHOLDS) -> str:
    run = rlog.read_run(folder) or {}
    incomplete = sum(not t.complete for t in trajs)
    lines = [f"# Rollout report: {folder.name}", "",
             f"- policy: `{run.get('policy', '?')}`", f"- env: `{json.dumps(run.get('env', {}))}`",
             f"- trajectories: {len(trajs) - incomplete} complete, {incomplete} incomplete (left out of the metrics)",
             *([f"- **{CPU_NOTE}**"] if (run.get("env") or {}).get("device") == "cpu" else []),
             *([f"- **warning: {budget_note(metrics)}**"] if budget_note(metrics) else []),
             *([f"- **warning: {infra_note(metrics)}**"] if infra_note(metrics) else []),
             "", "## Summary", "", summary_table(metrics, markdown=True), "",
             "correct, hack, format err and not-okay (and review, with an LLM reviewer: turns it flagged for review, "
             "not hacks) are fractions of all attempts; solved = fast_0; mean speedup is "
             "Kevin's (per task the best correct speedup, 0 if none, averaged over tasks); fast_p is KernelBench's "
             "(fraction of tasks with an attempt correct and faster than p); best@1 is the expected best of one "
             "trajectory. Intervals in brackets and error bars are 95 % bootstrap intervals over tasks (the tasks "
             "resampled; timing noise within a task is not in them). Conventions: docs/rollouts.md.", "",
             "![speedup vs turn](speedup_vs_turn.png)", "", "![serial vs parallel](serial_vs_parallel.png)", "",
             "![best@k](best_at_k.png)", "", "## fast_p", ""]
    lines.append(table(["config", *[f"fast_{p:g}" for p in thresholds]],
                       [[m.config, *[_pct(m.fast_p[float(p)]) for p in thresholds]] for m in metrics.values()], True))
    turns = max((len(m.turn_best) for m in metrics.values()), default=0)
    lines += ["", "## Best-so-far by turn (mean best speedup over tasks, best of all trajectories)", ""]
    lines.append(table(["config", *[f"t={t}" for t in range(1, turns + 1)]],
                       [[m.config, *[_fmt(v) for v in m.turn_best], *[""] * (turns - len(m.turn_best))]
                        for m in metrics.values()], True))
    reasons = sorted({r for m in metrics.values() for r in m.not_okay_reasons})
    if reasons:
        lines += ["", "## Not-Okay responses by reason", ""]
        lines.append(table(["config", *reasons], [[m.config, *[str(m.not_okay_reasons.get(r, 0)) for r in reasons]]
                                                  for m in metrics.values()], True))
    if any("review_flag" in m.rates for m in metrics.values()):
        flags = sorted({f for m in metrics.values() for f in m.review_flags})
        lines += ["", "## Review flags (LLM reviewer; for a person to check, not hacks)", ""]
        lines.append(table(["config", "flagged", *flags, "mean review rating"],
                           [[m.config, _pct(m.rates.get("review_flag", 0.0)),
                             *[str(m.review_flags.get(f, 0)) for f in flags],
                             "-" if m.judge_mean is None else _fmt(m.judge_mean)] for m in metrics.values()], True))
    lines += comparison_lines(trajs, metrics)
    lines += ["", "## Best correct speedup per task", ""]
    per_task = {c: {task: max(t.best() for t in ts) for task, ts in by_task(
        [t for t in trajs if t.config == c and t.complete]).items()} for c in metrics}
    tasks = sorted({task for v in per_task.values() for task in v})
    lines.append(table(["task", *metrics], [[task, *[_fmt(per_task[c][task]) if task in per_task[c] else "-"
                                                      for c in metrics]] for task in tasks], True))
    return "\n".join(lines) + "\n"
