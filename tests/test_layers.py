"""The package's layers, bottom to top, and the imports between them (module-level and lazy alike): a job followed
from `env.step` only goes down; at most `MAX_UP` imports anywhere go up a layer (each one named here, with why);
no import circle inside the judge."""

from __future__ import annotations

import ast
from pathlib import Path

import kernel_gym

ROOT = Path(kernel_gym.__file__).parent
LAYERS: list[tuple[str, tuple[str, ...]]] = [  # bottom to top; a module's layer is its longest matching prefix
    ("base", ("errors", "paths", "pyast", "device", "forking", "c_params", "version", "backends")),
    ("sources", ("tasks", "actions", "checks", "signals")),  # tasks and their loading, the static rules
    ("contract", ("eval",)),  # what the env and trainers see: job, result, config of a job, the evaluator protocol
    ("harness", ("harness", "sandbox", "cuda_raw", "nvrtc")),  # what judge and runner share
    ("runner", ("runner", "signals.collect")),  # the candidate's side (signals.collect: read in the runner)
    ("judge", ("judge",)),
    ("env", ("config", "feedback", "rewards", "env", "registration", "trajectory", "samples", "spaces", "history")),
    ("edges", ("", "tasks.measure", "tasks.validate", "tasks.generator", "tasks.llm")),  # trainers, CLI, tools
]
UP = {  # the imports that go up a layer, each for a reason
    ("kernel_gym.env", "kernel_gym.preference.online"): "the LLM reviewer, imported only when one is configured",
    ("kernel_gym.eval.evaluator", "kernel_gym.judge.local"): "LocalEvaluator's old path, a deprecated alias",
}
MAX_UP = 3


def _modules() -> dict[str, Path]:
    mods = {}
    for path in ROOT.rglob("*.py"):
        name = ".".join(("kernel_gym", *path.relative_to(ROOT).with_suffix("").parts))
        mods[name.removesuffix(".__init__")] = path
    return mods


def _layer(module: str) -> int:
    rel = module.removeprefix("kernel_gym").lstrip(".")
    best = (-1, -1)
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (rel == p or rel.startswith(p + ".") or p == "") and len(p) > best[1]:
                best = (i, len(p))
    return best[0]


def _imports() -> list[tuple[str, str]]:
    mods = _modules()

    def resolve(name: str) -> str:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name

    edges = set()
    for name, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("kernel_gym"):
                edges |= {(name, resolve(f"{node.module}.{a.name}")) for a in node.names}
            elif isinstance(node, ast.Import):
                edges |= {(name, resolve(a.name)) for a in node.names if a.name.startswith("kernel_gym")}
    return sorted((a, b) for a, b in edges if b and a != b)


def test_imports_go_down_the_layers_but_for_the_named_few():
    up = {(a, b) for a, b in _imports() if _layer(b) > _layer(a)}
    assert up <= set(UP), sorted(up - set(UP))
    assert len(UP) <= MAX_UP


def test_no_import_circle_in_the_judge():
    graph: dict[str, set[str]] = {}
    for a, b in _imports():
        if a.startswith("kernel_gym.judge") and b.startswith("kernel_gym.judge") and not a.endswith(".dynamic"):
            graph.setdefault(a, set()).add(b)  # (a package's __init__ registering its own modules is no circle)

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for nxt in graph.get(start, ()):
            if nxt == goal or (nxt not in seen and (seen.add(nxt) or reaches(nxt, goal, seen))):
                return True
        return False

    circles = sorted(m for m in graph if reaches(m, m, set()))
    assert not circles, circles


def test_a_job_from_env_step_only_goes_down():
    """Everything env.py reaches (transitively) sits at or below the env's layer: no edge module (trainer, CLI,
    service) is on a job's path, but the LLM reviewer imported only when configured."""
    edges: dict[str, set[str]] = {}
    for a, b in _imports():
        edges.setdefault(a, set()).add(b)
    seen, todo = set(), ["kernel_gym.env"]
    while todo:
        m = todo.pop()
        for nxt in edges.get(m, ()):
            if nxt not in seen and (m, nxt) not in UP:
                seen.add(nxt)
                todo.append(nxt)
    above = sorted(m for m in seen if _layer(m) > _layer("kernel_gym.env"))
    assert not above, above


MAX_MODULE_LINES, MAX_FUNCTION_LINES, MAX_JUDGE_RUN_LINES = 400, 60, 200


def test_modules_and_functions_stay_small():
    """Issue 38's bounds: no module of the package over 400 lines, no function over 60, JudgeRun (state and runner
    I/O only) at most 200."""
    long_modules, long_functions = [], []
    for path in sorted(ROOT.rglob("*.py")):
        text = path.read_text()
        where = path.relative_to(ROOT)
        if len(text.splitlines()) > MAX_MODULE_LINES:
            long_modules.append(f"{where}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long_functions.append(f"{where}:{node.lineno} {node.name}: {lines} lines")
            if isinstance(node, ast.ClassDef) and node.name == "JudgeRun":
                assert node.end_lineno - node.lineno + 1 <= MAX_JUDGE_RUN_LINES, node.end_lineno - node.lineno + 1
    assert not long_modules, long_modules
    assert not long_functions, long_functions
