"""The rule registry: a plain dict from a stable snake_case name to a check function.

A rule is a function ``check(ctx) -> Iterable[Violation]`` taking the analysed solution
(:class:`kernel_gym.checks.context.Context`). Register it with ``@rule("name")``; its docstring
states the rule.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .context import Context


@dataclass(frozen=True)
class Violation:
    """One static anti-hack finding."""

    rule: str          # stable name, e.g. "library_op", reported in info["hacks"]
    message: str       # explanation for the agent: offending call, line, and what to do instead
    line: int | None


RuleFn = Callable[["Context"], Iterable[Violation]]
RULES: dict[str, RuleFn] = {}


def rule(name: str) -> Callable[[RuleFn], RuleFn]:
    """Register ``fn`` under ``name`` (snake_case, unique)."""

    def deco(fn: RuleFn) -> RuleFn:
        if name in RULES:
            raise ValueError(f"rule {name!r} registered twice")
        fn.rule_name = name  # type: ignore[attr-defined]
        RULES[name] = fn
        return fn

    return deco


def violation(rule_name: str, node_or_line, text: str) -> Violation:
    """Build a Violation whose message starts with 'line N: '."""
    line = node_or_line if isinstance(node_or_line, int) or node_or_line is None else getattr(
        node_or_line, "lineno", None)
    where = f"line {line}: " if line is not None else ""
    return Violation(rule_name, where + text, line)
