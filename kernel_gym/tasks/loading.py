"""Load the reference and the candidate as fresh modules inside a worker (never in the env process)."""

from __future__ import annotations

import importlib.util
import secrets
import sys
import types
from pathlib import Path
from typing import Any


def load_reference(source: str, sizes: dict[str, Any]) -> types.ModuleType:
    """Execute the task's source as a module that is NOT in sys.modules, then apply size overrides.

    KernelBench files read their size globals at call time, so overriding the globals resizes the inputs.
    """
    module = types.ModuleType(f"_kg_reference_{secrets.token_hex(6)}")
    module.__file__ = "<reference>"
    exec(compile(source, "<reference>", "exec"), module.__dict__)  # noqa: S102 - trusted task code
    module.__dict__.update(sizes)
    return module


def load_candidate(code: str, workdir: Path) -> types.ModuleType:
    """Import the candidate from a real file (Triton reads kernel source through `inspect`)."""
    name = f"candidate_{secrets.token_hex(6)}"
    path = workdir / f"{name}.py"
    path.write_text(code)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses, triton and inspect look modules up by name
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def unload(module: types.ModuleType | None) -> None:
    if module is not None:
        sys.modules.pop(module.__name__, None)
