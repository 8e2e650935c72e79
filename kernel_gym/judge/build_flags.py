"""A candidate's `load_inline` flags, made to fit the torch this judge builds against: a `-std=` older than the
C++ standard torch's own headers require (torch 2.10+ stops with `#error C++20 or later compatible compiler is
required to use ATen`) is raised to it. Solutions written for an older torch commonly pass `-std=c++17`; their
failure to build would be the toolchain's, not theirs. Any other flag is left as given."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

_STD = re.compile(r"^(-std=|--std=|-std\s+)(c|gnu)\+\+(\d\d|\w+)$")
_YEARS = {"98": 1998, "03": 2003, "0x": 2011, "11": 2011, "1y": 2014, "14": 2014, "1z": 2017, "17": 2017,
          "2a": 2020, "20": 2020, "2b": 2023, "23": 2023, "2c": 2026, "26": 2026}
_REQUIRED = re.compile(r"#error C\+\+(\d\d) or later compatible compiler is required")


@functools.cache
def required_standard() -> int | None:
    """The C++ standard torch's headers require (2-digit year, e.g. 20), or None when they name none."""
    import torch

    try:
        text = (Path(torch.__file__).parent / "include" / "ATen" / "ATen.h").read_text(errors="replace")
    except OSError:
        return None
    found = _REQUIRED.search(text)
    return int(found.group(1)) if found else None


def _raised(flag: Any, need: int) -> Any:
    if not isinstance(flag, str):
        return flag
    m = _STD.match(flag.strip())
    if m is None or _YEARS.get(m.group(3), 9999) >= 2000 + need:
        return flag
    return f"-std={m.group(2)}++{need}"


def fit_standard(params: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """`params` with every too-old `-std=` in its flags raised to torch's required standard; the flags changed."""
    need = required_standard()
    if need is None:
        return params, []
    out, changed = dict(params), []
    for key in ("extra_cflags", "extra_cuda_cflags"):
        flags = params.get(key)
        if isinstance(flags, str):
            flags = [flags]
        if not isinstance(flags, list):
            continue
        fixed = [_raised(f, need) for f in flags]
        changed += [f for f, g in zip(flags, fixed) if f != g]
        out[key] = fixed
    return out, changed
