"""What a fault costs the judge, and no more: a running job ended early (its client went away, or it outlived its
limit), and the GPU probed usable after a runner was killed or crashed on it."""

from __future__ import annotations

import threading

from kernel_gym.judge.runners import RunnerProcess

GPU_PROBE_TIMEOUT_S = 10.0


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
