"""The judge's dynamic checks, one file per verdict (`<verdict>.py`), run in `ORDER` by stage
(judge/dynamic/registry.py). Static (source) rules live in `kernel_gym.checks`; both kinds report their names in
`info["hacks"]`.

Adding a check: a file named by its verdict, whose docstring's first line is the verdict's rule, registering a
function per stage with `@check(verdict, stage)`; the verdict's name in ORDER at that stage; a test and a line in
docs/anti-hacking.md.
"""

from __future__ import annotations

import importlib

from kernel_gym.judge.dynamic.registry import (
    ORDER,
    REGISTRY,
    RETIRED,
    VERDICTS,
    Check,
    Hack,
    Stop,
    check,
    rule_of,
    run_stage,
)

for _verdict in VERDICTS:  # each verdict's file registers its checks
    importlib.import_module(f"{__name__}.{_verdict}")

DYNAMIC_CHECKS: dict[str, str] = {v: rule_of(v) for v in (*VERDICTS, *RETIRED)}  # verdict -> its rule

__all__ = ["DYNAMIC_CHECKS", "ORDER", "REGISTRY", "Check", "Hack", "Stop", "check", "run_stage"]
