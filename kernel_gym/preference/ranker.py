"""A user-supplied ranker's judgment as one more signal (CudaPerf's two-stage recipe: train a ranker offline on
`kernel-gym pairs` data, then reward with it online through the `linear` score's `ranker` term).

A ranker is a plain callable, given as an object, a registered name (`register_ranker`), or a dotted path
"package.module:function" (or "path/to/file.py:function"):
- pointwise: `ranker(candidate: RankerInput) -> float` in [0, 1], how good the kernel is;
- pairwise: `ranker(candidate: RankerInput, anchor: RankerInput) -> float` in [0, 1], the probability that the
  candidate is better than the anchor. Online, the anchor is the episode's best earlier correct kernel (highest
  speedup), or the task's reference program when there is none yet.
The mode is the callable's `mode` attribute ("pointwise"/"pairwise"), else the spec's `mode`, else inferred from
its number of required positional parameters (2 → pairwise). A value outside [0, 1] is clipped; anything that is
not a finite number, or an exception, gives no signal (with a note) instead of stopping the env.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernel_gym.errors import ConfigError, UnknownNameError

logger = logging.getLogger(__name__)

MODES = ("pointwise", "pairwise")


@dataclass(frozen=True)
class RankerInput:
    """What a ranker sees of one kernel (the same fields for a candidate and its anchor)."""

    task: str
    """The task id."""
    code: str
    """The kernel's code (for the reference anchor: the reference program)."""
    reference: str = ""
    """The task's reference program."""
    response: str = ""
    """The whole response (reasoning and code); "" for the reference anchor."""
    correct: bool = True
    speedup: float | None = None
    """baseline/runtime when correct (1.0 for the reference anchor)."""
    signals: Mapping[str, float] = field(default_factory=dict)
    """Measured signals (structural, profiler) of this evaluation."""
    turn: int = 0
    """The turn that produced it; 0 for the reference anchor."""


_REGISTRY: dict[str, Callable[..., float]] = {}


def register_ranker(name: str) -> Callable[[Callable[..., float]], Callable[..., float]]:
    """Decorator: make a ranker callable available as `ranker="<name>"`."""

    def add(fn: Callable[..., float]) -> Callable[..., float]:
        _REGISTRY[name] = fn
        return fn

    return add


def list_rankers() -> list[str]:
    return sorted(_REGISTRY)


def import_object(path: str) -> Any:
    """The object named by "package.module:attr.attr" or "path/to/file.py:attr"."""
    module_name, sep, attr = path.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(f"a dotted path is 'module:function', got {path!r}")
    try:
        if module_name.endswith(".py"):
            spec = importlib.util.spec_from_file_location(Path(module_name).stem, module_name)
            if spec is None or spec.loader is None:
                raise ImportError(f"cannot load {module_name}")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        else:
            module = importlib.import_module(module_name)
    except (ImportError, OSError) as e:
        raise ConfigError(f"cannot import {module_name!r} for {path!r}: {e}") from e
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ConfigError(f"{module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    return obj


def _infer_mode(fn: Callable[..., Any]) -> str:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return "pointwise"
    required = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]
    return "pairwise" if len(required) >= 2 else "pointwise"


@dataclass(frozen=True)
class Ranker:
    """A loaded ranker: the callable, its mode and a name for notes."""

    fn: Callable[..., Any]
    mode: str = "pointwise"
    name: str = "ranker"

    def rate(self, candidate: RankerInput, anchor: RankerInput | None = None) -> tuple[float | None, str]:
        """(value in [0, 1] or None, note). Never raises."""
        try:
            raw = self.fn(candidate, anchor) if self.mode == "pairwise" else self.fn(candidate)
        except Exception as e:  # a user's model must not stop the env: no signal, and say why
            logger.warning("ranker %s failed: %s", self.name, e)
            return None, f"ranker failed: {type(e).__name__}: {e}"[:300]
        if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not math.isfinite(float(raw)):
            return None, f"ranker returned {str(raw)[:80]!r}, not a finite number"
        value = min(1.0, max(0.0, float(raw)))
        return value, "" if value == float(raw) else f"clipped {float(raw):g} to [0, 1]"


def load_ranker(spec: Any) -> Ranker:
    """A Ranker from a callable, a registered name, a dotted path, or a dict {"ranker": ..., "mode": ...}."""
    if isinstance(spec, Ranker):
        return spec
    mode = None
    if isinstance(spec, Mapping):
        mode, spec = spec.get("mode"), spec.get("ranker") or spec.get("path") or spec.get("name")
    if isinstance(spec, str):
        name = spec
        if spec in _REGISTRY:
            fn = _REGISTRY[spec]
        elif ":" in spec:
            fn = import_object(spec)
        else:
            raise UnknownNameError("ranker", spec, list(_REGISTRY))
    elif callable(spec):
        fn, name = spec, getattr(spec, "__name__", type(spec).__name__)
    else:
        raise ConfigError(f"ranker must be a callable, a registered name or 'module:function', got {spec!r}")
    if not callable(fn):
        raise ConfigError(f"ranker {name!r} is not callable")
    mode = mode or getattr(fn, "mode", None) or _infer_mode(fn)
    if mode not in MODES:
        raise ConfigError(f"ranker mode must be one of {MODES}, got {mode!r}")
    return Ranker(fn, mode, name)
