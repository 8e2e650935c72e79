"""Anti-hack presets: which static rules run, and how strict ``library_op`` is.

- ``strict``: no PyTorch compute in the forward path (Kevin's "pure kernel" setting).
- ``kevin-strict``: ``strict`` plus the paper's textual rule (``kevin_text``).
- ``standard``: like strict, but the heavy GEMM/convolution may stay a library call when the
  solution's own kernels do the rest (CUDA Agent's rule).
- ``permissive``: any PyTorch op may stay (``library_op`` off); an own kernel must still run.
- ``none``: no static rule; the dynamic checks and the judge alone, with ``standard``'s dynamic policy.
"""

from __future__ import annotations

from dataclasses import dataclass

COMMON = ("no_kernel", "try_except", "reference_reuse", "monkeypatch", "introspection",
          "precision", "side_stream")


@dataclass(frozen=True)
class Preset:
    name: str
    rules: tuple[str, ...]
    library: str | None  # "strict", "standard" or None (library_op off)


PRESETS: dict[str, Preset] = {
    "strict": Preset("strict", ("library_op",) + COMMON, "strict"),
    "kevin-strict": Preset("kevin-strict", ("library_op",) + COMMON + ("kevin_text",), "strict"),
    "standard": Preset("standard", ("library_op",) + COMMON, "standard"),
    "permissive": Preset("permissive", COMMON, None),
    # No static rule at all: every dynamic check and the judge stay on, with `standard`'s dynamic policy (for studying
    # the dynamic layer, and so the trust boundary is tested without the denylist in front of it).
    "none": Preset("none", (), None),
}
