"""NeMo Gym JSONL rows for kernel-gym: one row per task, `responses_create_params` (an empty input: the server's
`/reset` returns the task's prompt) and the episode's label under `kernel_gym`.

    python examples/nemo_gym/make_dataset.py --suite level1 --split train --out data/kernel_gym_level1.jsonl
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default="level1")
    parser.add_argument("--split", default="train")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--max-turns", type=int, default=None)
    args = parser.parse_args()
    from kernel_gym.tasks import list_tasks

    label = {} if args.max_turns is None else {"max_turns": args.max_turns}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w") as f:
        for task in list_tasks(args.suite, args.split):
            f.write(json.dumps({"responses_create_params": {"input": []}, "kernel_gym": {"task": task, **label}}) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
