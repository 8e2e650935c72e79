"""`kernel-gym pairs`: trajectory or rollout logs -> preference pairs (JSONL: prompt, chosen, rejected, evidence).

    kernel-gym pairs LOG... --out pairs.jsonl [--min-gap 0.02] [--noise-k 2] [--max-per-task 64]
                     [--group task|prompt] [--format plain|chat] [--no-hacked-pairs] [--seed 0]

LOG is a .jsonl log or a folder searched for them (an env's log_dir, a rollout folder). The rules and the timing
noise band are in docs/preference.md; the summary line goes to stderr, so --out - writes the pairs to stdout.
"""

from __future__ import annotations

import argparse
import json
import sys


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("pairs", help="trajectory logs -> chosen/rejected preference pairs (JSONL)",
                            description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("logs", nargs="+", metavar="LOG", help="a .jsonl log or a folder of them")
    parser.add_argument("--out", required=True, help="output JSONL file ('-' for stdout)")
    parser.add_argument("--min-gap", type=float, default=0.02,
                        help="floor of the speed margin between two correct kernels (0.02 = 2%%)")
    parser.add_argument("--noise-k", type=float, default=2.0,
                        help="a speed margin must exceed k * sqrt(cv_a^2 + cv_b^2)")
    parser.add_argument("--missing-cv", type=float, default=0.05, help="CV assumed when a log has none")
    parser.add_argument("--max-per-task", type=int, default=64, help="most pairs per task (0: no cap)")
    parser.add_argument("--group", choices=("task", "prompt"), default="task",
                        help="pair any two responses to a task, or only responses to the same observation")
    parser.add_argument("--format", choices=("plain", "chat"), default="plain",
                        help="strings, or chat message lists (for --apply_chat_template trainers)")
    parser.add_argument("--no-hacked-pairs", action="store_true", help="skip 'honest failure beats hack' pairs")
    parser.add_argument("--seed", type=int, default=0, help="seed of the per-task subset")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from kernel_gym.errors import KernelGymError
    from kernel_gym.preference.pairs import PairConfig, PairStats, pairs_from_logs, stats_dict, write_pairs

    missing = [p for p in args.logs if not Path(p).exists()]
    if missing:
        print(f"kernel-gym pairs: no such log: {', '.join(missing)}", file=sys.stderr)
        return 2
    try:
        config = PairConfig(min_gap=args.min_gap, noise_k=args.noise_k, missing_cv=args.missing_cv,
                            max_per_task=args.max_per_task or None, group=args.group, format=args.format,
                            hacked_pairs=not args.no_hacked_pairs, seed=args.seed)
    except KernelGymError as e:
        print(f"kernel-gym pairs: {e}", file=sys.stderr)
        return 2
    stats = PairStats()
    records = pairs_from_logs(args.logs, config, stats)
    if args.out == "-":
        for record in records:
            sys.stdout.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
    else:
        write_pairs(records, args.out)
    s = stats_dict(stats)
    rules = ", ".join(f"{k} {v}" for k, v in s["rules"].items()) or "none"
    print(f"wrote {len(records)} pairs ({rules}) from {s['candidates']} responses to "
          f"{'stdout' if args.out == '-' else args.out}; {s['duplicates']} duplicate kernels, "
          f"{s['ties_in_band']} ties inside the noise band, {s['capped']} over the per-task cap", file=sys.stderr)
    return 0
