"""Sandbox plumbing of the judge and its runners: the channel, shared memory, process limits; `WorkerPool` (the
pool of judge slots, kernel_gym.judge.pool) under its old name."""

from typing import Any

__all__ = ["WorkerPool"]


def __getattr__(name: str) -> Any:
    if name == "WorkerPool":  # lazily: kernel_gym.judge imports this package's modules
        from kernel_gym.judge.pool import WorkerPool

        return WorkerPool
    raise AttributeError(name)
