"""Persistent worker processes and a pool of them, on the env's side of the pipe.

A worker is started once (torch, triton and the CUDA context initialized), then runs jobs one at a time.
A job that crashes, hangs or poisons its worker ends as a verdict (`crash`, `timeout`, `oom`); the dead
worker is replaced in the background and the next job runs normally.
"""

from __future__ import annotations

import logging
import os
import queue
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from kernel_gym.errors import SandboxError
from kernel_gym.eval.errors import trim
from kernel_gym.eval.job import EvalJob
from kernel_gym.eval.result import EvalResult, Outcome
from kernel_gym.sandbox import limits, protocol

log = logging.getLogger(__name__)
_PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])
STARTUP_TIMEOUT_S = 180.0


def _signal_name(rc: int) -> str:
    try:
        return signal.Signals(-rc).name
    except ValueError:
        return f"signal {-rc}"


ROOT_PREFIX = "kernel_gym_worker_"


def sweep_stale_roots(tmp: Path | None = None) -> int:
    """Remove worker folders left behind by workers that died with their env (their `pid` file names a dead
    process). Folders without a pid file are a worker still starting, and are left alone."""
    removed = 0
    for root in Path(tmp or tempfile.gettempdir()).glob(ROOT_PREFIX + "*"):
        try:
            pid = int((root / "pid").read_text())
        except (OSError, ValueError):
            continue
        if not Path(f"/proc/{pid}").exists():
            shutil.rmtree(root, ignore_errors=True)
            removed += 1
    return removed


class Worker:
    """One sandbox process. Not thread-safe: the pool hands it to one caller at a time."""

    def __init__(self, device: str, gpu: int | None = None, memory_limit_gb: float | None = None):
        self.device, self.gpu = device, gpu
        sweep_stale_roots()
        self.root = Path(tempfile.mkdtemp(prefix=ROOT_PREFIX))
        job_r, job_w = os.pipe()
        res_r, res_w = os.pipe()
        cmd = [sys.executable, "-m", "kernel_gym.sandbox.worker", "--in-fd", str(job_r), "--out-fd", str(res_w),
               "--device", device, "--root", str(self.root)]
        if memory_limit_gb:
            cmd += ["--memory-limit-gb", str(memory_limit_gb)]
        env = limits.worker_environment(self.root, device, gpu, _PACKAGE_PARENT)
        self.proc = subprocess.Popen(cmd, env=env, cwd=self.root, pass_fds=(job_r, res_w), start_new_session=True,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(job_r)
        os.close(res_w)
        self.job_fd, self.reader = job_w, protocol.Reader(res_r)
        self.ready_info: dict | None = None
        self.jobs_done = 0
        self.log_offset = 0  # where the current job's output starts in output.log

    def wait_ready(self, timeout_s: float = STARTUP_TIMEOUT_S) -> dict:
        if self.ready_info is None:
            try:
                message = self.reader.receive(time.monotonic() + timeout_s)
            except (protocol.ChannelClosed, protocol.ChannelTimeout, ValueError) as e:
                detail = self.output_tail()
                self.kill()
                raise SandboxError(f"worker failed to start ({type(e).__name__}): {detail}") from e
            if not message.get("ready"):
                self.kill()
                raise SandboxError(f"worker sent {message!r} instead of ready")
            self.ready_info = message
        return self.ready_info

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def output_tail(self, chars: int = 2000) -> str:
        """The end of what the current job printed (never an earlier job's output: that may be another agent's)."""
        try:
            with open(self.root / "output.log", "rb") as f:
                f.seek(self.log_offset)
                return f.read().decode(errors="replace")[-chars:]
        except OSError:
            return ""

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # the worker and everything in its process group
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        for fd in (self.job_fd, self.reader.fd):
            try:
                os.close(fd)
            except OSError:
                pass
        self.job_fd = self.reader.fd = -1
        shutil.rmtree(self.root, ignore_errors=True)

    def run(self, job: EvalJob) -> tuple[EvalResult, bool]:
        """Run one job; returns (result, worker_still_usable)."""
        self.wait_ready()
        try:
            self.log_offset = (self.root / "output.log").stat().st_size
        except OSError:
            self.log_offset = 0
        nonce = secrets.token_hex(16)
        protocol.send(self.job_fd, {"nonce": nonce, "job": job.to_dict()})
        cfg, stage = job.config, "compile"
        deadline = time.monotonic() + cfg.compile_timeout_s
        while True:
            try:
                message = self.reader.receive(deadline)
            except protocol.ChannelTimeout:
                limit = cfg.compile_timeout_s if stage == "compile" else cfg.run_timeout_s
                self.kill()
                return self._verdict(job, Outcome.TIMEOUT, f"the {stage} stage did not finish within {limit:.0f} s "
                                     "(an infinite loop, a deadlock, or far too much work); the process was killed",
                                     stage), False
            except protocol.ChannelClosed:
                return self._death(job, stage), False
            except ValueError as e:
                self.kill()
                return self._tampered(job, str(e)), False
            if message.get("nonce") != nonce:
                self.kill()
                return self._tampered(job, "a message without the job's nonce arrived on the result channel"), False
            if "stage" in message:
                if message["stage"] != "compile" and stage == "compile":
                    deadline = time.monotonic() + cfg.run_timeout_s
                stage = message["stage"]
                continue
            if "internal_error" in message:
                self.kill()
                raise SandboxError("the evaluation harness failed (not the solution):\n" + message["internal_error"])
            self.jobs_done += 1
            result = EvalResult.from_dict(message["result"])
            forged = self._confirm(deadline=time.monotonic() + 60)
            if forged:
                self.kill()
                return self._tampered(job, forged), False
            if message.get("recycle"):
                self.kill()
                return result.replace(worker_recycled=True), False
            return result, True

    def _confirm(self, deadline: float) -> str | None:
        """Ping the worker after a result: the next message must be the pong, or the result was forged."""
        token = secrets.token_hex(8)
        try:
            protocol.send(self.job_fd, {"ping": token})
            reply = self.reader.receive(deadline)
        except (protocol.ChannelClosed, protocol.ChannelTimeout, ValueError, OSError) as e:
            return f"the worker did not confirm its result ({type(e).__name__})"
        if reply.get("pong") != token:
            return "a result arrived while the evaluation was still running (forged by the solution)"
        return None

    def _death(self, job: EvalJob, stage: str) -> EvalResult:
        try:
            rc = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            rc = None
        tail = self.output_tail()
        self.kill()
        if rc is not None and rc < 0:
            how = f"was killed by {_signal_name(rc)}"
            outcome = Outcome.OOM if rc == -signal.SIGKILL else Outcome.CRASH
            if outcome is Outcome.OOM:
                how += " (most likely the out-of-memory killer or a memory limit)"
        else:
            how, outcome = f"exited with code {rc} (os._exit, sys.exit in a thread, or abort in the solution)", Outcome.CRASH
        msg = f"the evaluation process {how} during the {stage} stage"
        if tail.strip():
            msg += "\nlast output:\n" + trim(tail.strip(), 1500)
        return self._verdict(job, outcome, msg, stage)

    def _tampered(self, job: EvalJob, why: str) -> EvalResult:
        return EvalResult(outcome=Outcome.REJECTED, message=f"the result channel was tampered with: {why}",
                          backend=job.backend, hacks=("output_tampering",), hack_details=(why,), worker_recycled=True)

    @staticmethod
    def _verdict(job: EvalJob, outcome: Outcome, message: str, stage: str) -> EvalResult:
        return EvalResult(outcome=outcome, message=message, backend=job.backend, compiled=stage != "compile",
                          worker_recycled=True)


class WorkerPool:
    """`size` workers on one device; `evaluate` blocks until a worker is free. Thread-safe."""

    def __init__(self, device: str = "cpu", size: int = 1, gpus: list[int] | None = None,
                 memory_limit_gb: float | None = None):
        if size < 1:
            raise ValueError("a pool needs at least one worker")
        self.device, self.size, self.memory_limit_gb = device, size, memory_limit_gb
        self.gpus = gpus if gpus is not None else ([None] * size)
        self._idle: queue.Queue[Worker] = queue.Queue()
        self._all: list[Worker] = []
        self._lock = threading.Lock()
        self._closed = False
        for i in range(size):
            self._spawn(self.gpus[i % len(self.gpus)])

    def _spawn(self, gpu: int | None) -> None:
        worker = Worker(self.device, gpu, self.memory_limit_gb)
        with self._lock:
            self._all.append(worker)
        self._idle.put(worker)

    def evaluate(self, job: EvalJob) -> EvalResult:
        if self._closed:
            raise SandboxError("the worker pool is closed")
        worker = self._idle.get()
        try:
            result, usable = worker.run(job)
        except BaseException:
            worker.kill()
            usable = False
            raise
        finally:
            if not usable:
                with self._lock:
                    self._all.remove(worker)
                if not self._closed:
                    self._spawn(worker.gpu)
        if usable:
            self._idle.put(worker)
        return result

    def __deepcopy__(self, memo: dict) -> WorkerPool:
        # Shared processes, not a value (a pool may be passed as gym.make(..., evaluator=pool), whose kwargs
        # gymnasium deep-copies).
        return self

    def warm_up(self) -> None:
        """Block until every worker is initialized (otherwise the first job waits for its worker)."""
        for worker in list(self._all):
            worker.wait_ready()

    def close(self) -> None:
        self._closed = True
        with self._lock:
            workers, self._all = list(self._all), []
        for worker in workers:
            worker.kill()

    def __del__(self) -> None:
        if not getattr(self, "_closed", True):
            self.close()
