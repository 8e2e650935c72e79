"""`kernel-gym`: demo, eval, samples (more sub-commands, e.g. `tasks`, in kernel_gym/commands/)."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path

from kernel_gym.backends import CHOICES as BACKEND_CHOICES


def _demo(args: argparse.Namespace) -> int:
    import gymnasium as gym

    import kernel_gym  # noqa: F401
    from kernel_gym.demo import RESPONSES, TASK

    env = gym.make("KernelRefine-v0", task=TASK, device=args.device, max_turns=len(RESPONSES))
    print(f"kernel-gym demo: {len(RESPONSES)} scripted turns on {TASK} (device={env.unwrapped.device})\n")
    try:
        obs, info = env.reset(seed=0)
        print("=" * 100 + f"\nPROMPT ({len(obs)} characters), first lines:\n" + "\n".join(obs.splitlines()[:12]) + "\n...")
        for response in RESPONSES:
            obs, reward, terminated, truncated, info = env.step(response)
            print("=" * 100)
            print(f"TURN {info['turn']}  outcome={info['outcome']}  score={info['score']:.4f}  "
                  f"speedup={info['speedup'] if info['speedup'] is None else round(info['speedup'], 4)}  "
                  f"stages(ms)={ {k: round(v) for k, v in info['stage_ms'].items()} }")
            print("reasoning summary: " + info["reasoning_summary"])
            print("feedback:\n" + textwrap.indent(info["feedback"][:1500], "  "))
        print("=" * 100)
        print(f"scores  = {[round(s, 4) for s in info['scores']]}")
        print(f"returns = {[round(r, 4) for r in info['returns']]}  (sum, gamma=0.4)")
        print(f"\nthe next observation would be {len(obs)} characters; its history section:\n")
        start = obs.find("## Your earlier attempts")
        print(textwrap.indent(obs[start:start + 1200], "  ") + "\n  ...")
    finally:
        env.close()
    return 0


def _eval(args: argparse.Namespace) -> int:
    import gymnasium as gym

    import kernel_gym  # noqa: F401
    from kernel_gym.solution_file import as_response

    solution = Path(args.solution)
    if not solution.is_file():
        raise UsageError(f"no such solution file: {solution}")
    text = solution.read_text(errors="replace")
    if not text.strip():
        raise UsageError(f"the solution file {solution} is empty: it should define ModelNew (see README.md)")
    env = gym.make("KernelRefine-v0", task=args.task, backend=args.backend, device=args.device, checks=args.checks,
                   precision=args.precision, max_turns=1)  # a bad task, device or preset raises here: one line, exit 2 (main)
    try:
        env.reset(seed=args.seed)
        # a .py file is code (fenced here); any other file is a response, judged as env.step judges it
        _, _, _, _, info = env.step(as_response(text, solution, args.solution_format))
    finally:
        env.close()
    if args.json:
        print(json.dumps(info, default=str))
    else:
        print(f"{info['outcome']}: score {info['score']:.4f}\n{info['feedback']}")
    return 0


def _samples(args: argparse.Namespace) -> int:
    from kernel_gym.samples import check_logs, episode_samples, episodes
    from kernel_gym.tasks import in_split

    files = check_logs(args.logs)  # a missing path or a file that is not a log: one line, exit 2
    eps = episodes(files)
    kept = [e for e in eps if in_split(str(e.records[0].get("task", "")), args.split)]
    samples = [s for e in kept for s in episode_samples(e, gamma=args.gamma, mode=args.mode, chat=args.chat)]
    with open(args.out, "w", encoding="utf-8") as f:
        for sample in samples:
            f.write(json.dumps(sample, ensure_ascii=False) + "\n")
    incomplete = sum(not e.complete for e in kept)
    print(f"wrote {len(samples)} samples from {len(kept)} episodes ({incomplete} incomplete) in "
          f"{len(files)} log files to {args.out} (split {args.split})")
    if len(kept) < len(eps):
        print(f"left out {len(eps) - len(kept)} episodes of tasks outside the {args.split} split "
              f"(--split all keeps them)", file=sys.stderr)
    return 0


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows each option's default, except for flags and options whose default is "not given"."""

    def _get_help_string(self, action: argparse.Action) -> str:
        if action.default is None or action.default is False or action.required:
            return action.help or ""
        return super()._get_help_string(action)


class UsageError(Exception):
    """A mistake in the command line (a missing or empty file, ...): main prints it in one line and exits 2."""


def build_parser() -> argparse.ArgumentParser:
    from kernel_gym import __version__
    from kernel_gym.solution_file import FORMATS as SOLUTION_FORMATS

    defaults = HelpFormatter
    parser = argparse.ArgumentParser(prog="kernel-gym", description="GPU-kernel refinement as a Gymnasium env.")
    parser.add_argument("--version", action="version", version=f"kernel-gym {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="a scripted episode on the CPU backend", formatter_class=defaults)
    demo.add_argument("--device", default="cpu", choices=("cpu", "cuda", "auto"), help="where the episode runs")
    ev = sub.add_parser("eval", help="evaluate one solution file as one turn", formatter_class=defaults,
                        description="Evaluate one solution file as the single turn of an episode and print the "
                                    "verdict (--json: the step's info, see docs/info.md). Exit code 0 whenever the "
                                    "evaluation ran, whatever the verdict; 2 for a usage error.")
    ev.add_argument("--task", required=True, help="a task id (kernel-gym tasks) or a KernelBench-format .py file")
    ev.add_argument("--solution", required=True,
                    help="a .py file defining ModelNew (code), or a model response (.md, .txt, ...) whose last fenced "
                         "block is the code, as env.step reads it (no fenced block: format_error)")
    ev.add_argument("--solution-format", default="auto", choices=SOLUTION_FORMATS,
                    help="auto: a .py file is code, any other file a model response")
    ev.add_argument("--backend", default="auto", choices=BACKEND_CHOICES,
                    help="auto: detected from the code")
    ev.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"),
                    help="auto: cuda when a GPU is visible, else cpu (the CPU backend)")
    ev.add_argument("--checks", default="standard",
                    help="anti-hack preset: strict, kevin-strict, standard, permissive or none")
    ev.add_argument("--precision", default=None, choices=("fp32", "fp16", "bf16"),
                    help="cast the task's floating inputs and both models to this precision (KernelBench's option); "
                         "default: the task's own")
    ev.add_argument("--seed", type=int, default=0, help="seed of the episode (input and trial seeds)")
    ev.add_argument("--json", action="store_true", help="print the step's info as one JSON object")
    sm = sub.add_parser("samples", help="trajectory logs -> one training sample per turn (JSONL)",
                        formatter_class=defaults)
    sm.add_argument("logs", nargs="+", metavar="LOG", help="trajectory .jsonl files or folders of them")
    sm.add_argument("--out", required=True, help="the JSONL file to write")
    sm.add_argument("--gamma", type=float, default=None, help="recompute returns with this gamma (default: the log's)")
    sm.add_argument("--mode", default=None, choices=("sum", "max"),
                    help="recompute returns with this aggregation (default: the log's)")
    sm.add_argument("--chat", action="store_true", help="chat messages (user prompt, assistant response)")
    from kernel_gym.commands import add_split_argument

    add_split_argument(sm)
    _register_plugins(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    import logging

    from kernel_gym.errors import KernelGymError

    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s: %(message)s")
    run = getattr(args, "func", None) or {"demo": _demo, "eval": _eval, "samples": _samples}[args.command]
    try:
        code = run(args)
        sys.stdout.flush()
        return code
    except (UsageError, KernelGymError) as e:  # our users' mistakes: one line, no traceback
        print(f"kernel-gym {args.command}: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"kernel-gym {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `kernel-gym tasks | head`: the reader left; say nothing more
        import os

        devnull = os.open(os.devnull, os.O_WRONLY)  # Python flushes stdout again at exit: send that nowhere
        os.dup2(devnull, sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, as a shell tool killed by the signal reports


def _register_plugins(sub: argparse._SubParsersAction) -> None:
    """Sub-commands living in kernel_gym/commands/ (each module's `register(sub)`)."""
    import importlib
    import pkgutil

    import kernel_gym.commands as commands

    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        importlib.import_module(f"kernel_gym.commands.{info.name}").register(sub)


if __name__ == "__main__":
    sys.exit(main())
