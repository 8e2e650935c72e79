"""SkyRL dataset rows for kernel-gym: one parquet row per task, `env_class` "kernel_gym", a placeholder prompt (the env
renders the real one in `init`) and the episode's label in `extra_info["kernel_gym"]`.

    python examples/skyrl/make_dataset.py --suite level1 --out data/kernel_gym [--max-turns 4]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def rows(tasks: list[str], **label) -> list[dict]:
    return [{"data_source": "kernel_gym", "env_class": "kernel_gym",
             "prompt": [{"role": "user", "content": f"Task {task}"}],
             "extra_info": {"kernel_gym": json.dumps({"task": task, **label})}} for task in tasks]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default="level1")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--max-turns", type=int, default=None)
    args = parser.parse_args()
    import pandas as pd

    from kernel_gym.tasks import list_tasks

    label = {} if args.max_turns is None else {"max_turns": args.max_turns}
    args.out.mkdir(parents=True, exist_ok=True)
    for split, name in (("train", "train"), ("eval", "validation")):
        path = args.out / f"{name}.parquet"
        pd.DataFrame(rows(list_tasks(args.suite, split), **label)).to_parquet(path)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
