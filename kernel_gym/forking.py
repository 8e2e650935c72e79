"""Fork safety: a process forked from one that imported kernel_gym runs torch on one CPU thread.

GNU OpenMP (torch's intra-op pool on Linux) cannot be used in a child forked after its parent used it: the child's
first parallel torch op waits forever for pool threads that were not copied. gymnasium's `AsyncVectorEnv` forks its
sub-envs by default, and a sub-env's step runs torch (on the cpu backend the judge generates inputs and compares
outputs in the env's process), so a parent that had already run a parallel op (a test, a rollout, an earlier env)
hung its sub-envs. A child forked while torch is loaded sets `torch.set_num_threads(1)` first, as PyTorch's own
DataLoader workers do; call `torch.set_num_threads(n)` in the child to take more threads where that is safe.
"""

from __future__ import annotations

import os
import sys

_registered = False


def _one_thread_in_child() -> None:
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "set_num_threads"):
        torch.set_num_threads(1)


def register() -> None:
    """Install the fork handler once per process (kernel_gym's import does)."""
    global _registered
    if not _registered and hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_one_thread_in_child)
        _registered = True
