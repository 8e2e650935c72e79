"""`kernel-gym rollout` (agent evaluation at equal budget) and `kernel-gym report DIR` (plots and a summary)."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

POLICY_HELP = ("replay:FILE (JSONL/JSON responses), scripted:demo | scripted:DIR | scripted:FILE.py[:NAME], "
               "openai:URL (an OpenAI-compatible server), hf:MODEL (transformers)")

# CLI option -> the keyword each policy kind takes for it.
POLICY_OPTIONS = {
    "openai": {"model": "model", "temperature": "temperature", "top_p": "top_p", "max_tokens": "max_tokens",
               "policy_concurrency": "concurrency"},
    "hf": {"temperature": "temperature", "top_p": "top_p", "max_tokens": "max_new_tokens", "batch_size": "batch_size"},
    "replay": {"on_missing": "on_missing"},
    "scripted": {},
}


def register(sub: argparse._SubParsersAction) -> None:
    ro = sub.add_parser("rollout", help="run K trajectories x T turns per task for a policy (resumable)",
                        description="Evaluate a policy: for each configuration KxT, K trajectories of T turns on "
                                    "every task; the log in --out makes a re-run skip finished trajectories.")
    ro.add_argument("--policy", required=True, help=POLICY_HELP)
    ro.add_argument("--tasks", required=True, help="ids (comma-separated), a suite (level1), suite:NAME, or all")
    ro.add_argument("--configs", default="128x1,32x4,16x8", help="trajectories x turns, comma-separated")
    ro.add_argument("--out", required=True, help="folder for rollout.jsonl, run.json (and the report)")
    env = ro.add_argument_group("environment")
    env.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    env.add_argument("--backend", default=None, choices=("auto", "triton", "cuda"))
    env.add_argument("--checks", default=None, help="anti-hack preset (default: the env's, standard)")
    env.add_argument("--preset", default=None, help="an env preset in envs/ (e.g. kevin)")
    env.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                     help="any other gym.make keyword (VALUE parsed as JSON when it can be); repeatable")
    run = ro.add_argument_group("run")
    run.add_argument("--workers", type=int, default=2, help="sandbox workers of the evaluator")
    run.add_argument("--concurrency", type=int, default=64, help="trajectories live at once (the policy's batch)")
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--schedule", default="auto", choices=("auto", "async", "rounds"),
                     help="async: a thread per trajectory; rounds: one batched call per round (auto: by policy)")
    run.add_argument("--system-prompt", default=None, help="a system message for chat policies (@FILE reads a file)")
    run.add_argument("--no-prompts", action="store_true", help="do not log prompts (smaller log; no samples)")
    run.add_argument("--no-progress", action="store_true")
    run.add_argument("--report", action="store_true", help="write the report (plots, summary.md) at the end")
    run.add_argument("--fail-on-summary-error", action="store_true",
                     help="exit 1 when any turn's summary fell back to the extractive one (the summarizer failed)")
    pol = ro.add_argument_group("policy")
    pol.add_argument("--model", default=None, help="openai: the served model (default: the server's first)")
    pol.add_argument("--temperature", type=float, default=None)
    pol.add_argument("--top-p", type=float, default=None)
    pol.add_argument("--max-tokens", type=int, default=None, help="completion limit (hf: max_new_tokens)")
    pol.add_argument("--batch-size", type=int, default=None, help="hf: prompts per generate call")
    pol.add_argument("--policy-concurrency", type=int, default=None, help="openai: requests in flight")
    pol.add_argument("--on-missing", default=None, choices=("error", "empty"), help="replay: a response not found")
    pol.add_argument("--policy-opt", action="append", default=[], metavar="KEY=VALUE",
                     help="any other keyword of the policy (VALUE parsed as JSON when it can be); repeatable")
    ro.set_defaults(func=run_rollout)

    rp = sub.add_parser("report", help="plots (PNG) and a markdown summary of a rollout folder")
    rp.add_argument("dir", help="a `kernel-gym rollout --out` folder")
    rp.add_argument("--out", default=None, help="where to write (default: DIR)")
    rp.add_argument("--thresholds", default=None, help="the p of fast_p, comma-separated (default 0,0.5,0.8,1,1.5,2)")
    rp.set_defaults(func=run_report)


def _pairs(items: list[str], what: str) -> dict[str, Any]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"{what} takes KEY=VALUE, got {item!r}")
        try:
            out[key.strip().replace("-", "_")] = json.loads(value)
        except json.JSONDecodeError:
            out[key.strip().replace("-", "_")] = value
    return out


def _policy_options(args: argparse.Namespace) -> dict[str, Any]:
    kind = args.policy.partition(":")[0]
    options = {kw: getattr(args, opt) for opt, kw in POLICY_OPTIONS.get(kind, {}).items()
               if getattr(args, opt) is not None}
    options.update(_pairs(args.policy_opt, "--policy-opt"))
    return options


def _env_options(args: argparse.Namespace) -> dict[str, Any]:
    env = {"device": args.device}
    for key in ("backend", "checks", "preset"):
        if getattr(args, key) is not None:
            env[key] = getattr(args, key)
    env.update(_pairs(args.env, "--env"))
    return env


def _interrupted(signum: int, frame: Any) -> None:
    """Ctrl-C during a rollout: every finished turn is already in the log (fsynced per turn), so the process ends
    now instead of waiting for the trajectories' current steps (~25 s before); its runners end with it (their
    parent-death signal) and the machine's judge cancels the jobs of a client that left."""
    print("\nkernel-gym rollout: interrupted; every finished turn is in the log (run the same command again to "
          "resume)", file=sys.stderr, flush=True)
    os._exit(130)


def run_rollout(args: argparse.Namespace) -> int:
    from kernel_gym.errors import KernelGymError
    from kernel_gym.policies import PolicyError, make_policy
    from kernel_gym.report import summary_table, write_report
    from kernel_gym.rollout import evaluate

    system = args.system_prompt
    try:
        if system and system.startswith("@"):
            system = Path(system[1:]).read_text()
        policy = make_policy(args.policy, **_policy_options(args))
    except (KernelGymError, ValueError, OSError, TypeError) as e:
        print(f"kernel-gym rollout: {e}", file=sys.stderr)
        return 2
    previous = signal.signal(signal.SIGINT, _interrupted)  # Ctrl-C: out at once (the log already has every turn)
    try:
        result = evaluate(policy, args.tasks, args.configs, out=args.out, env=_env_options(args),
                          workers=args.workers, concurrency=args.concurrency, seed=args.seed, system_prompt=system,
                          log_prompts=not args.no_prompts, progress=not args.no_progress,
                          schedule=args.schedule)
    except PolicyError as e:
        print(f"kernel-gym rollout: the policy failed: {e}\n(the log keeps every finished trajectory: run the same "
              "command again to resume)", file=sys.stderr)
        return 1
    except (KernelGymError, ValueError) as e:
        print(f"kernel-gym rollout: {e}", file=sys.stderr)
        return 2
    finally:
        signal.signal(signal.SIGINT, previous)
        policy.close()
    resumed = getattr(result, "resumed", 0)
    note = f" ({resumed} continued from their last logged turn)" if resumed else ""
    print(f"{len(result.tasks)} tasks, configurations {', '.join(b.label for b in result.budgets)}: "
          f"{result.ran} trajectories run{note}, {result.skipped} already complete in {args.out}\n")
    metrics = result.metrics()
    print(summary_table(metrics))
    _cpu_note(args.out)
    if args.report:
        paths = write_report(args.out)
        print(f"\nreport: {paths['summary.md']}")
    failed = {c: m.rates.get("summary_fallback", 0.0) for c, m in metrics.items()}
    if args.fail_on_summary_error and any(failed.values()):
        print("kernel-gym rollout: summaries fell back to the extractive one (summary_fallback rate: "
              + ", ".join(f"{c} {r:.1%}" for c, r in failed.items()) + "); each turn's info['summary_error'] says "
              "why", file=sys.stderr)
        return 1
    return 0


def run_report(args: argparse.Namespace) -> int:
    from kernel_gym.errors import KernelGymError
    from kernel_gym.metrics import DEFAULT_THRESHOLDS, summarize
    from kernel_gym.report import summary_table, write_report
    from kernel_gym.rollout import trajectories

    if not Path(args.dir).is_dir():
        print(f"kernel-gym report: no such folder: {args.dir}", file=sys.stderr)
        return 2
    try:
        thresholds = [float(p) for p in args.thresholds.split(",")] if args.thresholds else list(DEFAULT_THRESHOLDS)
        paths = write_report(args.dir, args.out, thresholds)
    except (KernelGymError, ValueError) as e:
        print(f"kernel-gym report: {e}", file=sys.stderr)
        return 2
    print(summary_table(summarize(trajectories(args.dir), thresholds)))
    _cpu_note(args.dir)
    print("\nwrote " + ", ".join(str(p) for p in paths.values()))
    return 0


def _cpu_note(folder: str) -> None:
    from kernel_gym.report import CPU_NOTE, run_device

    if run_device(folder) == "cpu":
        print(f"\nnote: {CPU_NOTE}")
