"""Sandbox: candidate code runs only in persistent, pre-initialized worker processes."""

from kernel_gym.sandbox.pool import WorkerPool

__all__ = ["WorkerPool"]
