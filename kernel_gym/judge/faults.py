"""What a fault costs the judge, and no more: a running job ended early (its client went away, or it outlived its
limit), and the GPU probed usable after a runner was killed or crashed on it."""

from __future__ import annotations

import os
import threading
import time

from kernel_gym.judge.runners import RunnerProcess

GPU_PROBE_TIMEOUT_S = 10.0
STALL_PROBE_S = 0.5  # how long a probe kernel may take at a timeout for the GPU to count as running other work


class Cancel:
    """A running job's way out: its client went away, or it outlived its limit (the judge's watchdog). Cancelling
    kills the job's candidate runner (and what it started): the job's next read of it ends the job at once. Only a
    job ended for outliving its limit counts as a fault that may have stalled other jobs (judge/stalls.py): a job
    whose client left did nothing wrong, and its killed runner must not cost a later timeout a rerun alone."""

    def __init__(self) -> None:
        self.reason: str | None = None
        self.fault = False
        self._runner: RunnerProcess | None = None
        self._lock = threading.Lock()

    def attach(self, runner: RunnerProcess | None) -> None:
        with self._lock:
            self._runner = runner
            if runner is not None and self.reason is not None:
                self._end(runner)

    def cancel(self, reason: str, fault: bool = False) -> None:
        with self._lock:
            if self.reason is None:
                self.reason, self.fault = reason, fault
            if self._runner is not None:
                self._end(self._runner)

    def _end(self, runner: RunnerProcess) -> None:
        if not self.fault:
            runner.on_fault = None  # (its death is no fault of the job's)
        runner.kill_now()


def gpu_fault(device: str, timeout_s: float = GPU_PROBE_TIMEOUT_S) -> str | None:
    """After a runner was killed or crashed on the GPU: a tiny kernel in the judge's own context must finish (the
    dead runner's context, and its kernels, are gone). None when the GPU is usable; why not otherwise."""
    if device != "cuda":
        return None
    box: dict[str, object] = {}

    def probe() -> None:
        import torch

        try:
            x = torch.ones(1, device="cuda")
            x.add_(1)
            box["value"] = float(x.item())
        except Exception as e:  # noqa: BLE001 - the reason is the answer
            box["error"] = f"{type(e).__name__}: {e}"

    thread = threading.Thread(target=probe, daemon=True, name="kernel-gym-gpu-probe")
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        return f"a probe kernel did not finish within {timeout_s:g} s"
    if "error" in box:
        return f"a probe kernel failed: {box['error']}"[:500]
    return None if box.get("value") == 2.0 else f"a probe kernel computed {box.get('value')!r} instead of 2.0"


def stall_probe_on(device: str) -> bool:
    """Whether a candidate runner's timeout is probed for a stall of the whole GPU (`gpu_stalled`) before it counts
    against the jobs beside it (judge/stalls.py). KERNEL_GYM_STALL_PROBE=1; off by default until
    benchmarks/probe_stall.py has shown on a GPU that a spinning kernel of one process leaves another's probe kernel
    its timeslice while a trapped one does not (then a spin's timeout stops costing the jobs beside it a rerun)."""
    return device.startswith("cuda") and os.environ.get("KERNEL_GYM_STALL_PROBE", "0") == "1"


def gpu_stalled(device: str, within_s: float = STALL_PROBE_S) -> bool:
    """At a candidate runner's timeout, before the runner is killed: False only when a tiny kernel in the judge's own
    context, launched under a share of the GPU's lock that is free at once, finishes within `within_s` (the GPU runs
    other processes' work: the timed-out kernel stalls no one). True when it does not, and when it could not be asked
    (a job is being timed, or waits to be: no probe beside it), so that the timeout counts as before."""
    import torch

    from kernel_gym.judge.gpu_lock import device_lock

    dev = torch.device(device)
    with device_lock(dev, exclusive=False, timeout_s=0.0) as wait:
        if not wait.acquired:
            return True
        try:
            stream = torch.cuda.Stream(device=dev)  # (its own: a probe left behind holds up nothing of the judge's)
            with torch.cuda.stream(stream):
                x = torch.zeros(1, device=dev)
                x.add_(1)
                done = torch.cuda.Event()
                done.record(stream)
        except Exception:  # noqa: BLE001 - a context that cannot launch is no evidence against a stall
            return True
        deadline = time.monotonic() + within_s
        while not done.query():  # (a probe left behind finishes once the stall ends: the runner is killed next)
            if time.monotonic() > deadline:
                return True
            time.sleep(0.001)
        return False
