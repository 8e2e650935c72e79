"""`kernel-gym pairs`: trajectory or rollout logs -> preference pairs (JSONL: prompt, chosen, rejected, evidence).

    kernel-gym pairs LOG... --out pairs.jsonl [--min-gap 0.02] [--noise-k 2] [--max-per-task 64]
                     [--group task|prompt] [--format plain|chat] [--no-hacked-pairs] [--seed 0]
                     [--split train|eval|all]

Only responses to training tasks are paired unless --split says otherwise (held-out tasks stay out of training data).

LOG is a .jsonl log or a folder searched for them (an env's log_dir, a rollout folder). The rules and the timing
noise band are in docs/preference.md; the summary line goes to stderr, so --out - writes the pairs to stdout.
"""

from __future__ import annotations

import argparse
import json
import sys

from kernel_gym.commands import add_split_argument


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
    add_split_argument(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from kernel_gym.preference.candidates import read_candidates
    from kernel_gym.preference.pairs import PairConfig, PairStats, make_pairs, stats_dict, write_pairs
    from kernel_gym.samples import check_logs
    from kernel_gym.tasks import in_split

    files = check_logs(args.logs)  # a missing path or a file that is not a log: one line, exit 2 (kernel_gym.cli)
    config = PairConfig(min_gap=args.min_gap, noise_k=args.noise_k, missing_cv=args.missing_cv,
                        max_per_task=args.max_per_task or None, group=args.group, format=args.format,
                        hacked_pairs=not args.no_hacked_pairs, seed=args.seed)
    candidates = read_candidates(files)
    kept = [c for c in candidates if in_split(c.task, args.split)]
    if len(kept) < len(candidates):
        print(f"left out {len(candidates) - len(kept)} responses to tasks outside the {args.split} split "
              f"(--split all keeps them)", file=sys.stderr)
    stats = PairStats()
    records = make_pairs(kept, config, stats)
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
