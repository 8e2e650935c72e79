"""The prompt dataset of a verl run: one parquet row per task, in the columns verl's `RLHFDataset` reads.

    python -m kernel_gym.integrations.verl_data --suite level1 --out data/train.parquet [--split train|eval|all]
                                                [--max-turns 4] [--env KEY=VALUE ...] [--device cuda] [--repeat 1]

A row: `prompt` (one user message: the env's reset observation), `agent_name` ("kernel_gym", the agent loop that
runs it), `data_source` ("kernel_gym"), `reward_model` ({"style": "env", "ground_truth": task id}; verl's reward
manager is not called: the agent loop sets the reward) and `extra_info` ({"index": i, "kernel_gym": label}), the
label a JSON object string with `task` and every --max-turns/--env setting (gym.make keywords for that episode).
Flags and splits as `kernel-gym openrlhf-data` (held-out tasks stay out unless --split says otherwise).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

AGENT_NAME = "kernel_gym"  # kernel_gym.integrations.verl.AGENT_NAME (not imported: that module needs verl)
LABEL_KEY = "kernel_gym"


def verl_rows(records: list[dict[str, str]]) -> list[dict[str, Any]]:
    """`kernel_gym.commands.openrlhf.records` ({"prompt", "label"}) -> verl dataset rows."""
    import json

    rows = []
    for index, record in enumerate(records):
        task = json.loads(record["label"])["task"]
        rows.append({"data_source": "kernel_gym", "agent_name": AGENT_NAME,
                     "prompt": [{"role": "user", "content": record["prompt"]}],
                     "reward_model": {"style": "env", "ground_truth": task},
                     "extra_info": {"index": index, LABEL_KEY: record["label"]}})
    return rows


def write_parquet(rows: list[dict[str, Any]], out: str | Path) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), out)
    return out


def main(argv: list[str] | None = None) -> int:
    from kernel_gym.commands import add_split_argument
    from kernel_gym.commands.openrlhf import env_options, records

    parser = argparse.ArgumentParser(prog="python -m kernel_gym.integrations.verl_data", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suite", required=True, help="a task suite (level1, level2, ...) or 'all'")
    parser.add_argument("--out", required=True, help="the parquet file to write")
    add_split_argument(parser)
    parser.add_argument("--max-turns", type=int, default=None, help="max_turns written into every label")
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                        help="a gym.make keyword for every label (VALUE parsed as JSON when it can be), repeatable")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"), help="the device the prompts describe")
    parser.add_argument("--repeat", type=int, default=1, help="write each task this many times")
    args = parser.parse_args(argv)
    try:
        rows = verl_rows(records(args.suite, args.split, env_options(args.env, args.max_turns), args.repeat,
                                 args.device))
    except (ValueError, TypeError) as e:
        print(f"verl_data: {e}", file=sys.stderr)
        return 2
    if not rows:
        print(f"verl_data: no tasks in suite {args.suite!r} of split {args.split}", file=sys.stderr)
        return 2
    print(f"wrote {len(rows)} rows to {write_parquet(rows, args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
