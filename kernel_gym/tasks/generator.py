"""Held-out task generator (Kevin, appendix A.2): a main operator plus 2-5 sampled cheaper operators; with
`level=3`, whole blocks of several operators (norms, attention, MLPs, convolutions; kernel_gym/tasks/blocks.py).

    kernel-gym tasks generate --n 80 --seed 0 --out DIR        # DIR/<name>.py + DIR/manifest.json
    kernel-gym tasks generate --level 3 --n 20 --seed 0 --out DIR    # level-3 compositions, bf16 natively

Each candidate is rendered as a KernelBench-format program with a `KERNEL_GYM` dict and must pass every check
in validate.py (runs at cpu and alt sizes, deterministic, finite, non-constant, uses every input, > `min_ms` at
full size). A candidate whose ATen operator sequence (roofline.Trace.signature, e.g. `convolution, gelu,
native_group_norm, mean`) equals that of a built-in task, of a task generated earlier in the run, or of a task
in an `against` folder is rejected as a duplicate. A level-3 candidate must also fit the level-3 memory bound
(kernel_gym.tasks.memory: its judged run's estimated peak at full size, else "too_large"), and its manifest entry
records that estimate. Everything is drawn from `random.Random(seed)`, so a seed gives the same files, byte for byte.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from kernel_gym.tasks import ops as oplib
from kernel_gym.tasks.roofline import MODEL, trace_source
from kernel_gym.tasks.validate import MIN_MS, Verdict, validate_source

MIN_FOLLOWERS, MAX_FOLLOWERS = 2, 5
LEVELS = (2, 3)


@dataclass(frozen=True)
class Program:
    """A rendered candidate: its operator names (main first) and source text."""

    ops: tuple[str, ...]
    source: str


@dataclass
class GeneratedTask:
    name: str
    program: Program
    verdict: Verdict


@dataclass
class GenerationResult:
    tasks: list[GeneratedTask] = field(default_factory=list)
    rejected: Counter = field(default_factory=Counter)  # reason -> count
    attempts: int = 0


# ---------------------------------------------------------------------------------------------- sampling
def sample_program(rng: random.Random, mains: Mapping[str, Callable] = oplib.MAINS,
                   followers: Mapping[str, oplib.Follower] = oplib.FOLLOWERS) -> Program | None:
    """One candidate: a main operator, then 2-5 applicable followers; None if too few followers apply."""
    main, state = mains[rng.choice(sorted(mains))](rng)
    pieces = [main]
    names = sorted(followers)
    for k in range(1, rng.randint(MIN_FOLLOWERS, MAX_FOLLOWERS) + 1):
        ctx = oplib.Ctx(state, rng, k)
        for name in rng.sample(names, len(names)):
            piece = followers[name](ctx)
            if piece is not None:
                pieces.append(piece)
                break
        else:
            return None
    return Program(tuple(p.name for p in pieces), render(pieces))


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _fmt(sizes: dict[str, int]) -> str:
    return "{" + ", ".join(f'"{k}": {v}' for k, v in sizes.items()) + "}"


def render(pieces: list[oplib.Piece]) -> str:
    """The KernelBench-format source of a main piece followed by its followers."""
    main = pieces[0]
    sizes = {name: per for p in pieces for name, per in p.globals.items()}
    constants = {name: v for p in pieces for name, v in p.constants.items()}
    init_args = _unique(a for p in pieces for a in p.init_args)
    chain = " -> ".join(p.name for p in pieces)
    forward = list(main.forward)
    if any(p.needs_skip for p in pieces):
        forward.append("skip = x")
    forward += [line for p in pieces[1:] for line in p.forward]
    lines = [f'"""Generated task: {chain}."""', "import torch", "import torch.nn as nn", ""]
    lines += [f"{name} = {per['full']}" for name, per in sizes.items()]
    lines += [f"{name} = {value}" for name, value in constants.items()]
    lines += ["", "KERNEL_GYM = {"]
    lines += [f'    "{v}": {_fmt({n: per[v] for n, per in sizes.items()})},' for v in ("cpu", "alt", "full_alt")]
    lines += ['    "dtype": "float32",', '    "level": 2,', "}", "", ""]
    lines += ["class Model(nn.Module):", f'    """{chain} (sampled by kernel-gym\'s task generator)."""', ""]
    lines += [f"    def __init__(self{''.join(f', {a}: int' for a in init_args)}):", "        super().__init__()"]
    lines += [f"        {line}" for p in pieces for line in p.init]
    lines += ["", f"    def forward(self, {main.fwd_args}) -> torch.Tensor:"]
    lines += [f"        {line}" for line in forward] + ["        return x", "", ""]
    lines += ["def get_inputs():", f"    return {main.inputs}", "", ""]
    lines += ["def get_init_inputs():", f"    return [{', '.join(init_args)}]", ""]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------- duplicates
def suite_signatures() -> set[tuple[str, ...]]:
    """Operator sequences of the built-in tasks (from tasks/manifest.json, traced when missing there)."""
    from kernel_gym.tasks import list_tasks, load_task
    from kernel_gym.tasks.manifest import read_manifest

    recorded = read_manifest().get("tasks", {})
    out = set()
    for tid in list_tasks():
        ops = recorded.get(tid, {}).get("ops")
        out.add(tuple(ops) if ops else trace_source(load_task(tid).source).signature)
    return out


def folder_signatures(folder: str | Path) -> set[tuple[str, ...]]:
    """Operator sequences recorded in a generated folder's manifest.json."""
    path = Path(folder) / "manifest.json"
    if not path.is_file():
        return set()
    return {tuple(e["signature"]) for e in json.loads(path.read_text()).get("tasks", {}).values()}


class Collector:
    """Validates candidates, rejects duplicates and failures (counted by reason), keeps the accepted ones."""

    def __init__(self, existing: set[tuple[str, ...]], validate: Callable[[str], Verdict]):
        self.seen = set(existing)
        self.validate = validate
        self.result = GenerationResult()

    def offer(self, program: Program, name: str) -> bool:
        self.result.attempts += 1
        verdict = self.validate(program.source)
        if verdict.ok and verdict.signature in self.seen:
            verdict = Verdict(False, "duplicate", " -> ".join(verdict.signature))
        if not verdict.ok:
            self.result.rejected[verdict.reason] += 1
            return False
        self.seen.add(verdict.signature)
        self.result.tasks.append(GeneratedTask(name, program, verdict))
        return True


def task_name(index: int, ops: Iterable[str]) -> str:
    return f"{index:03d}_" + "_".join(ops)


def sample_level3(rng: random.Random) -> Program:
    """One level-3 candidate: a whole block (kernel_gym.tasks.blocks), rendered at its sizes."""
    from kernel_gym.tasks import blocks

    block = blocks.sample_block(rng)
    return Program(block.ops, blocks.render_block(block, blocks.sizes_of(block)))


def validate_level3(source: str, *, min_ms: float = MIN_MS, measure: bool = False) -> Verdict:
    """`validate_source`, then the level-3 memory bound on the judged run's estimated peak at full size."""
    from kernel_gym.tasks.memory import MEMORY_BOUND_MIB, peak_mib_estimate

    verdict = validate_source(source, min_ms=min_ms, measure=measure)
    if not verdict.ok:
        return verdict
    peak = peak_mib_estimate(source, verdict.metadata.get("full_alt"))
    if peak > MEMORY_BOUND_MIB:
        return Verdict(False, "too_large", f"a judged run would take ~{peak:.0f} MiB, over {MEMORY_BOUND_MIB} MiB")
    return verdict


def generate(n: int, seed: int = 0, *, min_ms: float = MIN_MS, measure: bool = False,
             existing: set[tuple[str, ...]] | None = None, mains: Mapping[str, Callable] = oplib.MAINS,
             followers: Mapping[str, oplib.Follower] = oplib.FOLLOWERS, max_attempts: int | None = None,
             level: int = 2) -> GenerationResult:
    """Sample until `n` candidates pass (or `max_attempts`, default 20 n, were tried). `level=3` draws whole blocks
    (kernel_gym.tasks.blocks; `mains` and `followers` are level 2's)."""
    from kernel_gym.errors import ConfigError

    if level not in LEVELS:
        raise ConfigError(f"level must be one of {LEVELS}, got {level!r}")
    rng = random.Random(seed)
    validate = partial(validate_level3 if level == 3 else validate_source, min_ms=min_ms, measure=measure)
    collector = Collector(suite_signatures() if existing is None else existing, validate)
    limit = max_attempts if max_attempts is not None else 20 * n
    while len(collector.result.tasks) < n and collector.result.attempts < limit:
        program = sample_level3(rng) if level == 3 else sample_program(rng, mains, followers)
        if program is None:
            collector.result.attempts += 1
            collector.result.rejected["no_applicable_op"] += 1
            continue
        collector.offer(program, task_name(len(collector.result.tasks), program.ops))
    return collector.result


def write_suite(result: GenerationResult, out: str | Path, info: dict[str, Any]) -> Path:
    """DIR/<name>.py for every accepted task and DIR/manifest.json describing them (deterministic content)."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    tasks = {}
    for t in result.tasks:
        (folder / f"{t.name}.py").write_text(t.program.source)
        v = t.verdict
        measured = v.measured_ms is not None
        level = int(v.metadata.get("level", 2))
        tasks[t.name] = {
            "file": f"{t.name}.py",
            "level": level,
            "dtype": str(v.metadata.get("dtype", "float32")),
            "split": "heldout",
            "ops": list(t.program.ops),
            "signature": list(v.signature),
            "sizes": {k: v.metadata[k] for k in ("cpu", "alt", "full_alt") if k in v.metadata},
            "input_mib": round(v.input_bytes / 2**20, 1),
            "estimate_ms": round(v.estimate_ms, 4),
            "baseline_ms": round(v.measured_ms if measured else v.estimate_ms, 4),
            "baseline_ms_source": "measured" if measured else "estimate",
        }
        if level == 3:  # sized for the memory bound, as the level-3 suite (validate_level3 checked it)
            from kernel_gym.tasks.memory import peak_mib_estimate

            tasks[t.name]["peak_mib_estimate"] = peak_mib_estimate(t.program.source, v.metadata.get("full_alt"))
    manifest = {"version": 1, **info, "accepted": len(tasks), "attempts": result.attempts,
                "rejected": dict(sorted(result.rejected.items())), "roofline": MODEL, "tasks": tasks}
    path = folder / "manifest.json"
    path.write_text(json.dumps(manifest, indent=1) + "\n")
    return path
