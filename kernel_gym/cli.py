"""`kernel-gym`: demo, eval, samples (more sub-commands, e.g. `tasks`, in kernel_gym/commands/)."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path


def _demo(args: argparse.Namespace) -> int:
    import gymnasium as gym

    import kernel_gym  # noqa: F401
    from kernel_gym.demo import RESPONSES, TASK

    print(f"kernel-gym demo: {len(RESPONSES)} scripted turns on {TASK} (device={args.device})\n")
    env = gym.make("KernelRefine-v0", task=TASK, device=args.device, max_turns=len(RESPONSES))
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
    from kernel_gym.errors import KernelGymError

    solution = Path(args.solution)
    if not solution.is_file():
        print(f"kernel-gym eval: no such solution file: {solution}", file=sys.stderr)
        return 2
    try:
        env = gym.make("KernelRefine-v0", task=args.task, backend=args.backend, device=args.device,
                       checks=args.checks, max_turns=1)
        env.reset(seed=args.seed)
    except KernelGymError as e:
        print(f"kernel-gym eval: {e}", file=sys.stderr)
        return 2
    try:
        text = solution.read_text(errors="replace")
        response = text if "```" in text else f"```python\n{text}\n```\n"
        _, _, _, _, info = env.step(response)
    finally:
        env.close()
    if args.json:
        print(json.dumps(info, default=str))
    else:
        print(f"{info['outcome']}: score {info['score']:.4f}\n{info['feedback']}")
    return 0


def _samples(args: argparse.Namespace) -> int:
    from kernel_gym.errors import KernelGymError
    from kernel_gym.samples import episode_samples, episodes, log_files

    missing = [p for p in args.logs if not Path(p).exists()]
    if missing:
        print(f"kernel-gym samples: no such log: {', '.join(missing)}", file=sys.stderr)
        return 2
    try:
        eps = episodes(args.logs)
        samples = [s for e in eps for s in episode_samples(e, gamma=args.gamma, mode=args.mode, chat=args.chat)]
    except KernelGymError as e:
        print(f"kernel-gym samples: {e}", file=sys.stderr)
        return 2
    with open(args.out, "w", encoding="utf-8") as f:
        for sample in samples:
            f.write(json.dumps(sample, ensure_ascii=False) + "\n")
    incomplete = sum(not e.complete for e in eps)
    print(f"wrote {len(samples)} samples from {len(eps)} episodes ({incomplete} incomplete) in "
          f"{len(log_files(args.logs))} log files to {args.out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kernel-gym", description="GPU-kernel refinement as a Gymnasium env.")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="a scripted episode on the CPU backend")
    demo.add_argument("--device", default="cpu", choices=("cpu", "cuda", "auto"))
    ev = sub.add_parser("eval", help="evaluate one solution file as one turn")
    ev.add_argument("--task", required=True)
    ev.add_argument("--solution", required=True)
    ev.add_argument("--backend", default="auto", choices=("auto", "triton", "cuda"))
    ev.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    ev.add_argument("--checks", default="standard")
    ev.add_argument("--seed", type=int, default=0)
    ev.add_argument("--json", action="store_true", help="print the step's info as one JSON object")
    sm = sub.add_parser("samples", help="trajectory logs -> one training sample per turn (JSONL)")
    sm.add_argument("logs", nargs="+", metavar="LOG", help="trajectory .jsonl files or folders of them")
    sm.add_argument("--out", required=True, help="the JSONL file to write")
    sm.add_argument("--gamma", type=float, default=None, help="recompute returns with this gamma")
    sm.add_argument("--mode", default=None, choices=("sum", "max"), help="recompute returns with this aggregation")
    sm.add_argument("--chat", action="store_true", help="chat messages (user prompt, assistant response)")
    _register_plugins(sub)
    args = parser.parse_args(argv)
    import logging

    logging.basicConfig(level=logging.WARNING)
    if getattr(args, "func", None) is not None:
        return args.func(args)
    return {"demo": _demo, "eval": _eval, "samples": _samples}[args.command](args)


def _register_plugins(sub: argparse._SubParsersAction) -> None:
    """Sub-commands living in kernel_gym/commands/ (each module's `register(sub)`)."""
    import importlib
    import pkgutil

    import kernel_gym.commands as commands

    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        importlib.import_module(f"kernel_gym.commands.{info.name}").register(sub)


if __name__ == "__main__":
    sys.exit(main())
