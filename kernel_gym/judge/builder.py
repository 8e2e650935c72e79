"""The build process: one `load_inline` build of a candidate's sources, for the judge's build service
(`judge/builds.py`).

    python -m kernel_gym.judge.builder  < request.json   (the judge starts it; the last stdout line is the result)

It confines itself before it reads a line of the candidate's sources (writes only beneath its staging folder; reads
only the toolchain, the Python install, its staging folder and the PCH cache; seccomp; no network: its compilers run
with the candidate's flags, which may name any output file), builds with the light and precompiled headers of
`judge/fast_build.py` (a light build that fails for a missing declaration is retried with `torch/types.h`, then the
stock way), and never imports what it built: a solution's static initializers run only in its own runner. Its
answer is `{"ok": true, "module": NAME}` (the attempt that built: `staging/NAME/NAME.so`) or
`{"ok": false, "log": TEXT}`.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


def _load_inline(unique: str, params: dict[str, Any], staging: Path) -> None:
    """Build, without the import that ends torch's `load_inline` (that would run the solution's C++ here)."""
    import torch.utils.cpp_extension as ext

    ext._import_module_from_library = lambda *args, **kwargs: None  # noqa: SLF001 - the one step we must skip
    build_dir = staging / unique
    build_dir.mkdir(parents=True, exist_ok=True)
    ext.load_inline(unique, build_directory=str(build_dir), **params)


def build(name: str, params: dict[str, Any], staging: Path, fast: bool = True) -> str:
    """Build `params` (load_inline's keyword arguments) under `staging`; the name of the attempt that built. The
    fast attempts (`fast`: the judge's KERNEL_GYM_FAST_BUILD) are optimisations: the stock build's error, if any, is
    the candidate's."""
    from kernel_gym.judge import build_flags, fast_build

    params, raised = build_flags.fit_standard({**params, "verbose": False})
    if raised:
        log.info("raised %s to the C++ standard torch's headers require", raised)
    try:  # the header caches may be out of reach (a build process that dropped its uid cannot write them)
        fast, changes = fast_build.fast_params(params) if fast else (None, {})
    except OSError as e:
        log.info("no fast build (%s): building the stock way", e)
        fast, changes = None, {}
    if fast is not None:
        try:
            _load_inline(f"{name}f", fast, staging)
            return f"{name}f"
        except Exception as e:  # noqa: BLE001
            if not {"cuda_header", "cpp_header"} & changes.keys() and not fast_build.pch_failed(str(e), changes):
                raise  # same sources as the stock build: its error is the candidate's
            log.info("fast build failed (%s); retrying with a heavier header", type(e).__name__)
            missing = fast_build.missing_declaration(str(e))
        if changes.get("cuda_header") == "lite" and missing:  # e.g. tensor operators (a + b): torch/types.h
            fast, _ = fast_build.fast_params(params, cuda_header="types")
            try:
                _load_inline(f"{name}t", fast, staging)
                return f"{name}t"
            except Exception as e:  # noqa: BLE001
                log.info("types-header build failed (%s); building the stock way", type(e).__name__)
    _load_inline(name, params, staging)
    return name


def main() -> None:
    from kernel_gym.sandbox import isolation, limits, mount_ns

    limits.die_with_parent()
    early = mount_ns.prepare("builder")  # while root and single-threaded: what its uid must reach (isolation.py)
    # the imports first: a build process started ahead (judge/builds.py, SpareBuilders) waits here, ready
    import torch.utils.cpp_extension  # noqa: F401

    from kernel_gym.judge import fast_build

    request = json.loads(sys.stdin.read())
    staging = Path(request["staging"])
    result: dict[str, Any]
    pieces: list[str] = []
    try:
        pieces = early + limits.confine(staging, request.get("device", "cpu"), "builder")
        fast_build.SCRATCH = staging / "headers"  # what it makes is its own: the judge publishes the PCH (builds.py)
        result = {"ok": True, "module": build(request["name"], request["params"], staging,
                                             fast=request.get("fast", True) is not False)}
    except Exception as e:  # noqa: BLE001 - a failed build is an answer, not a crash
        result = {"ok": False, "log": str(e) or type(e).__name__}
    result["isolation"] = isolation.self_report(pieces)  # what it built under (the judge's `judge status`)
    sys.stdout.write("\n" + json.dumps(result) + "\n")
    sys.stdout.flush()
    os._exit(0)  # noqa: SLF001 - nothing of the build is worth a clean interpreter exit


if __name__ == "__main__":
    main()
