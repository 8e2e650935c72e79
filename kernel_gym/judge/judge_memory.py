"""The judge's own GPU memory: whether an out-of-memory is the solution's or the machine's, and giving the judge's
cached memory back to the driver after a job (in the background) or when idle."""

from __future__ import annotations

import gc
import logging
import re
import threading

from kernel_gym.harness.errors import GPU_MEMORY_MARKERS

log = logging.getLogger(__name__)

_ASKED = re.compile(r"Tried to allocate ([0-9.]+) (B|KiB|MiB|GiB|TiB)")
_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def beyond_the_device(message: str, device: str) -> bool:
    """An out-of-memory whose failed allocation alone is larger than the whole GPU (torch's message names its size):
    no rerun, alone or not, can change it, so it needs no confirmation. (The message is the runner's: a forged one
    only hastens its own `oom`.)"""
    found = _ASKED.search(message or "")
    if device != "cuda" or found is None:
        return False
    import torch

    asked = float(found.group(1)) * 1024 ** _UNITS.index(found.group(2))
    return asked > torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory


def judge_out_of_memory(exc: BaseException) -> bool:
    """An exception that escaped a JudgeRun (the judge's own, a runner that could not start, the task's reference)
    saying GPU memory ran out: memory other jobs hold, run again."""
    import torch

    text = str(exc).lower()
    return isinstance(exc, torch.OutOfMemoryError) or any(m in text for m in GPU_MEMORY_MARKERS)


TIGHT_MEMORY = 0.15  # after a job, the judge gives its cached GPU memory back when less than this share is free


def tidy_judge_memory(device: str) -> None:
    """After a job: the memory of its closed buffers (each in a pool of its own, which no later buffer reuses), and
    when the GPU is nearly full every cached block, go back to the driver (the next job's runners may need them), in
    the background: the release waits for the GPU's lock, and the job's verdict does not wait for it."""
    if device != "cuda":
        return
    import torch

    from kernel_gym.sandbox.shared import retired_count

    free, total = torch.cuda.mem_get_info()
    if retired_count() or free < TIGHT_MEMORY * total:
        _RELEASER.request()


class _Releaser:
    """One background thread that releases the judge's GPU memory when asked (`release_judge_memory`)."""

    def __init__(self) -> None:
        self._asked = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def request(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, daemon=True, name="kernel-gym-memory-release")
                self._thread.start()
        self._asked.set()

    def _run(self) -> None:
        while True:
            self._asked.wait()
            self._asked.clear()
            try:
                release_judge_memory("cuda")
            except Exception as e:  # noqa: BLE001 - a failed release leaves memory cached, never fails a job
                log.warning("the judge's GPU memory release failed: %s", e)


_RELEASER = _Releaser()


def release_judge_memory(device: str) -> None:
    """The judge's cached GPU memory back to the driver, while no call is being timed: freeing synchronizes the
    judge's device, which would wait out a timed call's pending end (a stuck one included, whose release needs this
    process's other threads) with the GIL held. Skipped, and said, when the GPU's lock cannot be had."""
    if device != "cuda":
        return
    import torch

    from kernel_gym.judge.gpu_lock import device_lock
    from kernel_gym.sandbox.shared import release_retired

    with device_lock(torch.device("cuda", torch.cuda.current_device()), exclusive=True) as held:
        if not held.acquired:
            log.warning("the judge's GPU memory was not released: the GPU's lock was held for %.0f s", held.seconds)
            return
        gc.collect()  # (what only the collector frees: an idle judge allocates too little to run it)
        release_retired()  # the private pools of closed arenas
        torch.cuda.ipc_collect()  # buffers shared with runners that have let go of them (torch keeps those apart)
        torch.cuda.empty_cache()  # what the jobs' buffers held goes back to the driver for the others
