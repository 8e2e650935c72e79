"""The pool of judge slots (kernel_gym.judge.pool), under the name every caller knows."""

from kernel_gym.judge.pool import ROOT_PREFIX, Slot, WorkerPool, sweep_stale_roots

__all__ = ["ROOT_PREFIX", "Slot", "WorkerPool", "sweep_stale_roots"]
