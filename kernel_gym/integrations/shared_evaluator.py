"""One evaluator per process, shared by every env a training framework creates in it.

Trainers such as OpenRLHF create one agent (so one env) per sampled episode, hundreds at once in one vLLM actor;
each must not start its own worker pool. `shared_evaluator()` returns the process-wide evaluator for a spec:

- `KERNEL_GYM_EVALUATOR` (or the `spec` argument): "local" (default), "ray[:address]" or "http(s)://host:port",
  as `kernel_gym.integrations.evaluators.evaluator_from_spec` reads it;
- `KERNEL_GYM_EVAL_WORKERS`: sandbox workers of a local pool (default 1);
- `device`: the device of the envs that use it (a local pool runs its workers there).

`offload(fn, ...)` runs a blocking call (an env step waiting for its evaluation) on the process's thread pool of
`KERNEL_GYM_EVAL_THREADS` threads (default 64: episodes whose evaluations may be in flight at once; asyncio's
default pool would cap them at cpu_count + 4), so the caller's event loop (vLLM's) keeps running.

The cache lives in this module (not in the agent file, which OpenRLHF loads a second time under another name), so
every copy of the agent shares it. `close_shared_evaluators()` closes them (also at interpreter exit).
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

logger = logging.getLogger(__name__)

ENV_EVALUATOR = "KERNEL_GYM_EVALUATOR"
ENV_WORKERS = "KERNEL_GYM_EVAL_WORKERS"
ENV_THREADS = "KERNEL_GYM_EVAL_THREADS"

_lock = threading.Lock()
_evaluators: dict[tuple[str, str, int], Any] = {}
_threads: ThreadPoolExecutor | None = None


def evaluator_settings(spec: str | None = None, workers: int | None = None) -> tuple[str, int]:
    """(spec, workers) after applying the environment variables to the arguments left as None."""
    spec = (os.environ.get(ENV_EVALUATOR, "") if spec is None else spec).strip() or "local"
    if workers is None:
        workers = int(os.environ.get(ENV_WORKERS, "1") or 1)
    return spec, max(1, workers)


def shared_evaluator(device: str, spec: str | None = None, workers: int | None = None):
    """The process-wide evaluator for (spec, device, workers), built on first use."""
    from kernel_gym.integrations.evaluators import evaluator_from_spec

    spec, workers = evaluator_settings(spec, workers)
    key = (spec, device, workers)
    with _lock:
        evaluator = _evaluators.get(key)
        if evaluator is None:
            logger.info("kernel-gym: starting the shared %s evaluator (device=%s, workers=%d)", spec, device, workers)
            evaluator = evaluator_from_spec(spec, device=device, workers=workers)
            start = getattr(evaluator, "start", None)
            if callable(start):
                start()
            _evaluators[key] = evaluator
        return evaluator


async def offload(fn, /, *args: Any, **kwargs: Any) -> Any:
    """`await offload(fn, *args)`: fn(*args, **kwargs) on the shared thread pool, off the event loop."""
    global _threads
    with _lock:
        if _threads is None:
            _threads = ThreadPoolExecutor(max_workers=max(1, int(os.environ.get(ENV_THREADS, "64") or 64)),
                                          thread_name_prefix="kernel-gym-eval")
        pool = _threads
    return await asyncio.get_running_loop().run_in_executor(pool, functools.partial(fn, *args, **kwargs))


def close_shared_evaluators() -> None:
    with _lock:
        evaluators = list(_evaluators.values())
        _evaluators.clear()
    for evaluator in evaluators:
        try:
            evaluator.close()
        except Exception:  # closing at exit: one failing pool must not keep the others open
            logger.exception("kernel-gym: closing a shared evaluator failed")


atexit.register(close_shared_evaluators)
