"""The precompiled headers of load_inline's main.cpp: `torch/extension.h` (or the light binding header) precompiled
once per (compiler, flags, include paths, torch version) into `$KERNEL_GYM_CACHE/pch/<key>/`, whose folder goes first
on the include path. g++ uses the `.gch` when it is valid and silently parses the real header when it is not (never a
wrong build). A build process makes a missing PCH in its own scratch folder; the judge publishes only the folders of
the request's own keys (`publish_pch`), and a cached folder is used only when its text files are exactly this
module's (`cached_pch`).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shlex
import subprocess
import sysconfig
import time
from pathlib import Path
from typing import Any

from kernel_gym.judge.torch_headers import BIND_HEADER, bind_text
from kernel_gym.paths import cache_dir

_FORWARD_TEXT = """#pragma once
// kernel-gym: beside the precompiled torch/extension.h.gch (judge/fast_build.py); an include that cannot use the .gch
#include_next <torch/extension.h>
"""


def write_once(path: Path, text: str) -> Path:
    if not path.exists() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
    return path


def as_list(v: Any) -> list[str]:
    if v is None:
        return []
    return [v] if isinstance(v, str) else list(v)


def _pch_flags(extra_cflags: list[str], extra_include_paths: list[str]) -> tuple[str, list[str]]:
    import torch
    from torch.utils.cpp_extension import get_cxx_compiler

    include = Path(torch.__file__).parent / "include"
    return get_cxx_compiler(), [f"-I{include}", f"-I{sysconfig.get_path('include')}",
                                f"-I{include / 'torch/csrc/api/include'}", *[f"-I{p}" for p in extra_include_paths],
                                *extra_cflags, "-DTORCH_API_INCLUDE_EXTENSION_H", "-std=c++20", "-fPIC"]


def pch_key(extra_cflags: list[str], extra_include_paths: list[str], header: str = "stock") -> str:
    """The precompiled header's key: the compiler, every flag, torch's version and the header's text."""
    import torch

    compiler, flags = _pch_flags(extra_cflags, extra_include_paths)
    text = bind_text() if header == "lite" else ""
    return hashlib.sha256(repr((compiler, flags, torch.__version__, text)).encode()).hexdigest()[:20]


def _pch_texts(header: str) -> dict[str, str]:
    """The text files of a PCH folder (relative name: content), as this module writes them."""
    return {BIND_HEADER: bind_text()} if header == "lite" else {"torch/extension.h": _FORWARD_TEXT}


def _pch_file(header: str) -> str:
    return f"{BIND_HEADER}.gch" if header == "lite" else "torch/extension.h.gch"


def cached_pch(key: str, header: str) -> Path | None:
    """The cache's PCH folder for `key`, if it holds the PCH and its text files are exactly this module's."""
    folder = cache_dir() / "pch" / key
    try:
        if not (folder / _pch_file(header)).is_file():
            return None
        if any((folder / name).read_text() != text for name, text in _pch_texts(header).items()):
            return None
    except (OSError, UnicodeDecodeError):
        return None
    return folder


def build_pch(out_dir: Path, extra_cflags: list[str], extra_include_paths: list[str], header: str) -> Path | None:
    """`out_dir` holding the precompiled header for main.cpp built with these flags (built now if missing), or None
    when precompiling fails."""
    import torch

    compiler, flags = _pch_flags(extra_cflags, extra_include_paths)
    include = Path(torch.__file__).parent / "include"
    for name, text in _pch_texts(header).items():
        # (stock: g++ takes a .gch only for a file's first include; a second `#include <torch/extension.h>` —
        # load_inline puts one before the solution's own — looks for the header beside it: the forwarder sends it on)
        write_once(out_dir / name, text)
    source = out_dir / BIND_HEADER if header == "lite" else include / "torch" / "extension.h"
    gch = out_dir / _pch_file(header)
    if gch.exists():
        return out_dir
    gch.parent.mkdir(parents=True, exist_ok=True)
    with open(out_dir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one worker builds, the others wait for it
        if gch.exists():
            return out_dir
        tmp = gch.with_suffix(f".{os.getpid()}.tmp")
        cmd = [compiler, "-x", "c++-header", str(source), "-o", str(tmp), *flags]
        t0 = time.perf_counter()
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            (out_dir / "error.log").write_text(shlex.join(cmd) + "\n" + run.stderr[-4000:])
            tmp.unlink(missing_ok=True)
            return None
        os.replace(tmp, gch)
        (out_dir / "built.txt").write_text(f"{time.perf_counter() - t0:.1f} s\n{shlex.join(cmd)}\n")
    return out_dir


def pch_keys(params: dict[str, Any]) -> dict[str, str]:
    """{key: header} of the PCHs a fast build of `params` (load_inline's arguments) may make: what the judge
    publishes from a build process's scratch, and nothing else."""
    extra_cflags, paths = as_list(params.get("extra_cflags")), as_list(params.get("extra_include_paths"))
    return {pch_key(extra_cflags, paths, header): header for header in ("stock", "lite")}


def publish_pch(scratch: Path, params: dict[str, Any]) -> list[str]:
    """Move the PCH folders a build process made under `scratch` into the cache (keys of `params` only, each with its
    PCH and this module's text files, none the cache has already); returns the keys published. The caller runs it
    after the build process ended."""
    published = []
    for key, header in pch_keys(params).items():
        made, final = scratch / "pch" / key, cache_dir() / "pch" / key
        if not (made / _pch_file(header)).is_file() or cached_pch(key, header) is not None:
            continue
        try:
            if any((made / name).read_text() != text for name, text in _pch_texts(header).items()):
                continue
            final.parent.mkdir(parents=True, exist_ok=True)
            if final.exists():  # an older folder without a valid PCH
                import shutil

                shutil.rmtree(final, ignore_errors=True)
            from kernel_gym.sandbox import isolation

            isolation.seal(made)  # root's and read-only, before it is shared
            os.rename(made, final)
            published.append(key)
        except (OSError, UnicodeDecodeError):
            continue
    return published
