"""`kernel-gym openrlhf-agent-path` and `kernel-gym openrlhf-data`: what an OpenRLHF run needs from kernel-gym.

    kernel-gym openrlhf-agent-path                     the file for --train.agent_func_path
    kernel-gym openrlhf-data --suite level1 --out prompts.jsonl [--split train|eval|all] [--max-turns 4]
                             [--env KEY=VALUE]

Only the train split's tasks are written unless --split says otherwise: the eval split is held out, and
`--split all` (mixing it into training data) is for when that is what you mean.

Each JSONL record is {"prompt": <the env's reset observation>, "label": <JSON object string>}: the label holds
"task" plus every --max-turns/--env setting, which the agent passes to gym.make. Train with
`--data.input_key prompt --data.label_key label --data.apply_chat_template` (see docs/openrlhf.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from kernel_gym.commands import add_split_argument


def register(sub: argparse._SubParsersAction) -> None:
    path = sub.add_parser("openrlhf-agent-path", help="print the OpenRLHF agent file (--train.agent_func_path)")
    path.set_defaults(func=_agent_path)
    data = sub.add_parser("openrlhf-data", help="write an OpenRLHF prompt dataset (JSONL: prompt, label)",
                          description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    data.add_argument("--suite", required=True, help="a task suite (level1, level2, ...) or 'all'")
    data.add_argument("--out", required=True, help="the JSONL file to write")
    add_split_argument(data)
    data.add_argument("--max-turns", type=int, default=None, help="max_turns written into every label")
    data.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                      help="a gym.make keyword for every label (VALUE parsed as JSON when it can be), repeatable")
    data.add_argument("--device", default="cuda", choices=("cuda", "cpu"),
                      help="the device the prompts describe (where training evaluates); --env device=... wins")
    data.add_argument("--repeat", type=int, default=1, help="write each task this many times (epochs in one file)")
    data.set_defaults(func=_data)


def _agent_path(args: argparse.Namespace) -> int:
    # Path arithmetic only: importing the module would need OpenRLHF installed.
    import kernel_gym

    print(Path(kernel_gym.__file__).resolve().parent / "integrations" / "openrlhf.py")
    return 0


def env_options(pairs: list[str], max_turns: int | None) -> dict:
    """--env KEY=VALUE pairs (+ --max-turns) -> the label's gym.make keywords."""
    options: dict = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--env takes KEY=VALUE, got {pair!r}")
        try:
            options[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            options[key.strip()] = value
    if max_turns is not None:
        options["max_turns"] = max_turns
    return options


def records(suite: str | None, split: str | None, options: dict, repeat: int = 1, device: str = "cuda") -> list[dict]:
    """One {"prompt", "label"} record per task of `suite` in `split` ("train", "eval", "all"; None: all) (the prompt
    is the env's reset observation with these options)."""
    from kernel_gym.env import KernelRefineEnv
    from kernel_gym.tasks import in_split, list_tasks

    class _NoEvaluation:  # rendering a prompt evaluates nothing: no worker pool needed
        def evaluate(self, job):
            raise RuntimeError("openrlhf-data does not evaluate")

        def close(self) -> None:
            pass

    out = []
    env = KernelRefineEnv(evaluator=_NoEvaluation(), **{"device": device, **options})
    try:
        for task_id in [t for t in list_tasks(None if suite == "all" else suite) if in_split(t, split or "all")]:
            obs, _ = env.reset(seed=0, options={"task": task_id})
            label = json.dumps({"task": task_id, **options}, sort_keys=True)
            out.extend({"prompt": obs, "label": label} for _ in range(repeat))
    finally:
        env.close()
    return out


def _data(args: argparse.Namespace) -> int:
    try:
        rows = records(args.suite, args.split, env_options(args.env, args.max_turns), args.repeat, args.device)
    except (ValueError, TypeError) as e:  # kernel_gym's own errors are printed by kernel_gym.cli
        print(f"kernel-gym openrlhf-data: {e}", file=sys.stderr)
        return 2
    if not rows:
        print(f"kernel-gym openrlhf-data: no tasks in suite {args.suite!r} of split {args.split}", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    tasks = len(rows) // max(1, args.repeat)
    note = {"train": "the train split only; the eval split is held out (--split all to include it)",
            "eval": "the eval split only (held-out tasks)",
            "all": "train and eval splits mixed (--split all)"}[args.split]
    print(f"wrote {len(rows)} prompts ({tasks} tasks: {note}) to {out}")
    return 0
