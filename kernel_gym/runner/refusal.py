"""A request a runner ends with an outcome of its own, not an exception of candidate code."""

from __future__ import annotations

from typing import Any

CPU_ONLY = ("the CUDA sources compile ({how}), but CUDA kernels cannot run on the CPU backend; evaluate on a GPU "
            "(device='cuda') or write a Triton solution")


class Refusal(Exception):
    """Ends a request with an outcome the judge turns into a verdict (e.g. compile_error, unsupported)."""

    def __init__(self, outcome: str, message: str, **extra: Any):
        super().__init__(message)
        self.outcome, self.message, self.extra = outcome, message, extra
