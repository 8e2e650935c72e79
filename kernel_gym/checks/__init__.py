"""Static anti-reward-hacking checks on a candidate solution's source (``ast``, never executed).

    >>> from kernel_gym.checks import run_static_checks
    >>> [v.rule for v in run_static_checks(code, preset="strict")]

Each rule lives in its own module under ``kernel_gym/checks/rules/`` and is registered by name;
a preset (``strict``, ``kevin-strict``, ``standard``, ``permissive``) selects which rules run.
"""

from __future__ import annotations

from kernel_gym.pyast import parse_source

from . import rules as _rules  # noqa: F401  (registers every rule)
from .context import Context
from .presets import PRESETS, Preset
from .registry import RULES, Violation, rule
from .task_policy import TaskPolicy, task_policy

__all__ = ["Violation", "list_rules", "list_presets", "run_static_checks", "get_preset", "rule", "RULES",
           "PRESETS", "Preset", "TaskPolicy", "task_policy"]


def list_rules() -> list[str]:
    """Names of every registered static rule."""
    return sorted(RULES)


def list_presets() -> list[str]:
    """Names of the anti-hack presets: strict, kevin-strict, standard, permissive."""
    return list(PRESETS)


def get_preset(name: str) -> Preset:
    """The preset called ``name``; raises ``kernel_gym.errors.UnknownPresetError`` otherwise."""
    if name not in PRESETS:
        from kernel_gym.errors import UnknownPresetError

        raise UnknownPresetError("preset", name, list(PRESETS))
    return PRESETS[name]


def run_static_checks(code: str, preset: str = "standard", *, backend: str | None = None,
                      task_dtype: str = "float32", allow_precision: bool = False,
                      task_source: str | None = None) -> list[Violation]:
    """Run the preset's static rules on ``code``; an empty list means no rule fired.

    ``backend`` ("triton", "cuda", "cuda_raw", "auto" or None) narrows which own kernels count for
    ``no_kernel``. ``precision`` only runs on float32 tasks and when ``allow_precision`` is False.
    ``task_source`` (the task's reference program) lets ``standard`` apply its task policy
    (:mod:`kernel_gym.checks.task_policy`): a library GEMM/conv may stay only beside other work of the task, an
    epilogue reduction only on a task that is not reductions only; without it both are allowed as before.
    Code that does not parse yields no violations (the compile stage reports syntax errors).
    """
    p = get_preset(preset)
    try:
        tree = parse_source(code)
    except (SyntaxError, ValueError):
        return []
    ctx = Context(code, tree, p, backend, task_dtype, allow_precision, task_policy(task_source))
    found: dict[tuple[str, int | None, str], Violation] = {}
    for name in p.rules:
        for v in RULES[name](ctx):
            found.setdefault((v.rule, v.line, v.message), v)
    return sorted(found.values(), key=lambda v: (v.line or 0, v.rule, v.message))
