"""The Task model: a KernelBench-format reference program plus what we read from it statically."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernel_gym.errors import TaskFormatError
from kernel_gym.pyast import parse_source

REQUIRED = ("Model", "get_inputs", "get_init_inputs")
METADATA_NAME = "KERNEL_GYM"


@dataclass(frozen=True)
class Task:
    """A reference program in KernelBench format.

    The file defines `class Model(nn.Module)`, `get_inputs()` and `get_init_inputs()`. It may define a literal
    dict `KERNEL_GYM = {"cpu": {...}, "alt": {...}, "dtype": "float32"}`: "cpu" overrides size globals for
    evaluation on the CPU backend, "alt" gives a second shape for the anti-specialisation check.
    """

    id: str
    source: str
    path: Path | None = None
    level: int | None = None
    description: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    size_globals: dict[str, Any] = field(default_factory=dict)  # the file's own size constants

    @property
    def dtype(self) -> str:
        return str(self.metadata.get("dtype", "float32"))

    @property
    def allow_precision(self) -> bool:
        """Whether the task allows reduced precision (fp16/bf16/tf32) inside an fp32 contract."""
        return bool(self.metadata.get("allow_precision", False))

    @property
    def outlier_fraction(self) -> float:
        """The fraction of each output's elements the error budget may leave out of its worst-element measure
        (KERNEL_GYM["outlier_fraction"], 0 by default, at most 0.01): for outputs that follow a discrete choice, such
        as top-k routing, where a near-tie flips under any other summation order, a correct kernel included."""
        return min(max(float(self.metadata.get("outlier_fraction", 0.0) or 0.0), 0.0), 0.01)

    def sizes_for(self, device: str, size: str | dict = "auto") -> dict[str, Any]:
        """Size overrides: "full" = the file's own sizes, "cpu" = its small sizes, or an explicit dict."""
        if isinstance(size, dict):
            return dict(size)
        if size == "auto":
            size = "cpu" if device == "cpu" else "full"
        if size == "full":
            return {}
        if size in ("cpu", "small"):
            return dict(self.metadata.get("cpu", {}))
        raise TaskFormatError(f"unknown size {size!r}: use 'auto', 'full', 'cpu' or a dict of globals")

    def alt_sizes_for(self, device: str) -> dict[str, Any] | None:
        """A second shape for the specialisation check; on cuda the alt sizes are scaled from the full ones."""
        alt = self.metadata.get("alt")
        if not alt:
            return None
        if device == "cpu":
            return dict(alt)
        full = self.metadata.get("full_alt")
        return dict(full) if full else None


def _literal_assignments(tree: ast.Module) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                out[node.targets[0].id] = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError, RecursionError):
                continue
    return out


def parse_task(task_id: str, source: str, path: Path | None = None, level: int | None = None) -> Task:
    """Validate the KernelBench shape of `source` without running it, and read its metadata."""
    try:
        tree = parse_source(source)
    except SyntaxError as e:
        raise TaskFormatError(f"task {task_id!r} is not valid Python: {e}") from e
    defined = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    missing = [name for name in REQUIRED if name not in defined]
    if missing:
        raise TaskFormatError(f"task {task_id!r} lacks {', '.join(missing)} (KernelBench format needs {', '.join(REQUIRED)})")
    literals = _literal_assignments(tree)
    metadata = literals.pop(METADATA_NAME, {}) or {}
    if not isinstance(metadata, dict):
        raise TaskFormatError(f"task {task_id!r}: {METADATA_NAME} must be a dict literal")
    sizes = {k: v for k, v in literals.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    doc = ast.get_docstring(tree) or ""
    return Task(
        id=task_id,
        source=source,
        path=path,
        level=level if level is not None else metadata.get("level"),
        description=doc.strip().splitlines()[0] if doc.strip() else "",
        metadata=metadata,
        size_globals=sizes,
    )
