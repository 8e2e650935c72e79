"""`kernel-gym tasks`: list tasks, show suites, import a KernelBench checkout, generate held-out tasks.

    kernel-gym tasks [--suite S] [--split train|eval]       one line per task, then "N tasks"
    kernel-gym tasks suites                                  suites with task and split counts
    kernel-gym tasks import PATH [--out FILE]                index a KernelBench checkout
    kernel-gym tasks generate --n 80 --seed 0 --out DIR      sampled (or --llm-url/--model) held-out tasks
    kernel-gym tasks generate --level 3 --n 20 --out DIR     level-3-style blocks (norm + attention + MLP, ...)
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("tasks", help="list tasks; suites, import, generate", description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suite", default=None, help="level1, level2, kernelbench, kernelbench/level1, ...")
    parser.add_argument("--split", default=None, choices=("train", "eval"))
    parser.set_defaults(func=run, tasks_command=None)
    commands = parser.add_subparsers(dest="tasks_command", metavar="{suites,import,generate}")
    commands.add_parser("suites", help="suites with their task and split counts")
    imp = commands.add_parser("import", help="index a KernelBench checkout (KernelBench/level1/*.py, ...)")
    imp.add_argument("path", help="the checkout (its root, its KernelBench/ folder, or one levelN folder)")
    imp.add_argument("--out", default=None, help="write the index here instead of the user cache")
    imp.add_argument("--no-estimate", action="store_true", help="skip the roofline baseline estimates")
    gen = commands.add_parser("generate", help="generate held-out level-2 tasks (Kevin's appendix A.2), or level-3 blocks")
    gen.add_argument("--n", type=int, required=True, help="how many tasks to accept")
    gen.add_argument("--level", type=int, default=2, choices=(2, 3),
                     help="2: a main operator and 2-5 cheaper ones; 3: whole blocks of several (bf16 natively)")
    gen.add_argument("--seed", type=int, default=0)
    gen.add_argument("--out", required=True, help="folder for <name>.py files and manifest.json")
    gen.add_argument("--min-ms", type=float, default=0.1, help="minimum full-size reference time (estimated)")
    gen.add_argument("--measure", action="store_true", help="time candidates on cuda (when available)")
    gen.add_argument("--max-attempts", type=int, default=None)
    gen.add_argument("--against", nargs="*", default=[], metavar="DIR",
                     help="generated folders whose operator sequences count as existing too")
    gen.add_argument("--llm-url", default=None, help="OpenAI-compatible endpoint (e.g. http://host:8000/v1)")
    gen.add_argument("--model", default=None, help="model name for --llm-url")


def run(args: argparse.Namespace) -> int:
    return {None: _list, "suites": _suites, "import": _import, "generate": _generate}[args.tasks_command](args)


def _baseline_text(entry: dict) -> str:
    ms, source = entry.get("baseline_ms"), entry.get("baseline_ms_source")
    if ms is None:
        return "-"
    return f"{ms:.4f} {'gpu' if source == 'measured' else 'est'}"


def _list(args: argparse.Namespace) -> int:
    from kernel_gym.errors import KernelGymError
    from kernel_gym.tasks import kernelbench, list_tasks, load_task, split_of
    from kernel_gym.tasks.manifest import read_manifest

    try:
        ids = list_tasks(args.suite, args.split)
    except KernelGymError as e:
        print(f"kernel-gym tasks: {e}", file=sys.stderr)
        return 2
    entries = {**kernelbench.index(), **read_manifest().get("tasks", {})}
    print(f"{'task':48} {'level':>5} {'dtype':>8} {'split':>6} {'baseline_ms':>12}  sizes (full) | cpu")
    for task_id in ids:
        t = load_task(task_id)
        full = ", ".join(f"{k}={v}" for k, v in t.size_globals.items())
        cpu = ", ".join(f"{k}={v}" for k, v in t.metadata.get("cpu", {}).items()) or "- (pass size=)"
        base = _baseline_text(entries.get(task_id, {}))
        print(f"{task_id:48} {t.level or '-':>5} {t.dtype:>8} {split_of(task_id) or '-':>6} {base:>12}  {full} | {cpu}")
    print(f"{len(ids)} tasks")
    return 0


def _suites(args: argparse.Namespace) -> int:
    from kernel_gym.tasks import kernelbench, list_tasks, split_of, tasks_dir

    print(f"{'suite':24} {'tasks':>6} {'train':>6} {'eval':>6}  where")
    for suite in sorted({t.split("/", 1)[0] for t in list_tasks()}):
        ids = list_tasks(suite)
        splits = Counter(split_of(t) for t in ids)
        print(f"{suite:24} {len(ids):>6} {splits['train']:>6} {splits['eval']:>6}  {tasks_dir() / suite}")
    index = kernelbench.index()
    checkout = os.environ.get(kernelbench.ENV_CHECKOUT)
    where = f"{kernelbench.ENV_CHECKOUT}={checkout}" if checkout else str(kernelbench.index_path())
    levels = Counter(t.rsplit("/", 1)[0] for t in index)
    for suite, count in sorted(levels.items()):
        print(f"{suite:24} {count:>6} {'-':>6} {'-':>6}  {where}")
    if not index:
        print("(no KernelBench checkout indexed: `kernel-gym tasks import PATH`)")
    print("baselines: tasks/manifest.json ('gpu' = measured on an H200, 'est' = roofline estimate)")
    return 0


def _import(args: argparse.Namespace) -> int:
    from kernel_gym.errors import KernelGymError
    from kernel_gym.tasks import kernelbench

    try:
        path, data = kernelbench.write_index(args.path, args.out, estimate=not args.no_estimate)
    except KernelGymError as e:
        print(f"kernel-gym tasks import: {e}", file=sys.stderr)
        return 2
    levels = Counter(t.rsplit("/", 1)[0].split("/", 1)[1] for t in data["tasks"])
    shown = ", ".join(f"{k}: {v}" for k, v in sorted(levels.items()))
    print(f"indexed {len(data['tasks'])} tasks ({shown}) from {data['root']} into {path}")
    if data["skipped"]:
        print(f"skipped {len(data['skipped'])} files that are not KernelBench programs: "
              + ", ".join(sorted(data["skipped"])[:10]))
    if args.out:
        print(f"note: ids resolve through {kernelbench.index_path()} or ${kernelbench.ENV_CHECKOUT}; "
              "--out only wrote a copy")
    return 0


def _generate(args: argparse.Namespace) -> int:
    from kernel_gym.errors import KernelGymError
    from kernel_gym.tasks.generator import folder_signatures, generate, suite_signatures, write_suite

    existing = suite_signatures()
    for folder in args.against:
        existing |= folder_signatures(folder)
    info = {"generator": "llm" if args.llm_url else "sampled", "seed": args.seed, "n": args.n, "min_ms": args.min_ms,
            "against": list(args.against)}
    if args.level != 2:  # (a level-2 manifest stays as it was)
        info["level"] = args.level
    try:
        if args.llm_url:
            if args.level != 2:
                print("kernel-gym tasks generate: --llm-url writes level-2 tasks; --level 3 samples blocks",
                      file=sys.stderr)
                return 2
            if not args.model:
                print("kernel-gym tasks generate: --llm-url needs --model", file=sys.stderr)
                return 2
            from kernel_gym.tasks.llm import generate_llm

            info["model"] = args.model
            result = generate_llm(args.n, args.seed, args.llm_url, args.model, min_ms=args.min_ms,
                                  measure=args.measure, existing=existing, max_attempts=args.max_attempts)
        else:
            result = generate(args.n, args.seed, min_ms=args.min_ms, measure=args.measure, existing=existing,
                              max_attempts=args.max_attempts, level=args.level)
    except KernelGymError as e:
        print(f"kernel-gym tasks generate: {e}", file=sys.stderr)
        return 2
    manifest = write_suite(result, args.out, info)
    rejected = ", ".join(f"{k} {v}" for k, v in sorted(result.rejected.items())) or "none"
    print(f"wrote {len(result.tasks)} tasks to {args.out} ({manifest.name}); {result.attempts} candidates tried, "
          f"rejected: {rejected}")
    if len(result.tasks) < args.n:
        print(f"only {len(result.tasks)} of {args.n} requested tasks passed", file=sys.stderr)
        return 1
    return 0
