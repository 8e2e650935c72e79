"""The judge's handle on a runner process: spawn it, send it requests with deadlines, read its replies as
untrusted data, kill it. A runner that dies, hangs or sends anything but the reply to the request in flight ends
the job with a verdict (crash/oom, timeout, output_tampering); only that job is affected.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kernel_gym.errors import SandboxError
from kernel_gym.harness.errors import trim
from kernel_gym.judge import builds as builds_service
from kernel_gym.judge import spawner
from kernel_gym.judge.spawner import ROOT_PREFIX
from kernel_gym.sandbox import isolation, limits
from kernel_gym.sandbox.channel import Channel, ChannelClosed, ChannelTimeout, socketpair

_PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])
STARTUP_TIMEOUT_S = 180.0
OUTSIDE_COMPILE_S = 300.0  # a compile segment of a request outside any job (no budget): its limit
MAX_BUILDS = 16  # load_inline builds one request may ask the judge for (judge/builds.py)
# Every key a runner's reply may carry (evidence); anything else is a forged message.
REPLY_KEYS = frozenset({"id", "error", "internal_error", "launches", "stray_threads", "stray_name", "harness", "names",
                        "structure", "lazy", "copied", "ops", "profile", "threads_started", "leftover_threads",
                        "state", "calls", "c_ms", "signals", "limits", "probe", "marks", "twin"})


_CANDIDATES: weakref.WeakSet[RunnerProcess] = weakref.WeakSet()  # this judge's candidate runners
_STOP_LOCK = threading.Lock()


@contextlib.contextmanager
def others_stopped(keep: tuple[RunnerProcess, ...]) -> Iterator[list[int]]:
    """While one job is timed: every other candidate runner of this judge is stopped (SIGSTOP to its process group;
    SIGCONT after). Runners that hold a share of the GPU are past already (the timer waited for them); this stops
    the others: idle ones, those loading or constructing a model, and those in a compile segment, whose GPU work
    (work at import, or a compile segment the solution forged to run kernels holding no share) would otherwise run
    beside the timed calls. A runner had finished its GPU work before it let its share go (harness/phases.py), so a
    stopped one has none running. The time stopped is added to its requests' limits."""
    with _STOP_LOCK:
        others = [r for r in list(_CANDIDATES) if r not in keep and r.alive]
        t0 = time.monotonic()
        stopped, missed = [], []
        for r in others:
            try:
                os.killpg(r.pid, signal.SIGSTOP)
                stopped.append(r)
                r.stopped_since = t0
            except ProcessLookupError:  # (gone meanwhile)
                pass
            except PermissionError:
                missed.append(r.pid)
    try:
        yield missed  # the pids that could not be stopped (the timing was not exclusive of them)
    finally:
        with _STOP_LOCK:
            spent = time.monotonic() - t0
            for r in stopped:
                try:
                    os.killpg(r.pid, signal.SIGCONT)
                except (ProcessLookupError, PermissionError):
                    pass
                r.stopped_s += spent
                r.stopped_since = None


class RunnerFailure(Exception):
    """The runner process failed the job: died (`crash`/`oom`), ran past its deadline (`timeout`) or sent a message
    that is not the reply in flight (`tampered`)."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind, self.message = kind, message


def _signal_name(rc: int) -> str:
    try:
        return signal.Signals(-rc).name
    except ValueError:
        return f"signal {-rc}"


class RunnerProcess:
    """One runner. Not thread-safe: one job at a time uses it."""

    def __init__(self, device: str, gpu: int | None = None, memory_limit_gb: float | None = None,
                 role: str = "candidate"):
        self.device, self.gpu, self.role = device, gpu, role
        self.root = Path(tempfile.mkdtemp(prefix=ROOT_PREFIX))
        judge_end, runner_end = socketpair()
        cmd = [sys.executable, "-m", "kernel_gym.runner", "--fd", str(runner_end.fileno()), "--device", device,
               "--root", str(self.root), "--role", role]
        if memory_limit_gb:
            cmd += ["--memory-limit-gb", str(memory_limit_gb)]
        env = limits.worker_environment(self.root, device, gpu, _PACKAGE_PARENT)
        self.proc = spawner.start(cmd, env, self.root, runner_end, device, role, memory_limit_gb)
        runner_end.close()
        self.channel = Channel(judge_end, max_fds=0)  # (a runner never sends descriptors: sandbox/channel.py)
        self.ready_info: dict | None = None
        self.log_offset = 0
        self.dead = False
        self.events: tuple | None = None  # cuda: the judge's "go" and "done" interprocess events for it
        self.flag: Any = None  # cuda: the judge's 8 bytes the runner writes each timed call's nonce into (an Arena)
        self.shared: list[Any] = []  # cuda: the job's arenas it mapped, kept until it ends the job or is dead
        self.limits: list[str] = []  # what confined it (its first job's `begin` says)
        self.isolation: dict[str, Any] = {}  # its uid, capabilities, namespaces, as the judge saw them then
        self.builds = role == "candidate"  # its load_inline calls are built by the judge's build service
        self.build_ms = 0.0
        self.budget: Any = None  # the job's Budget while a job uses this runner (judge/budget.py)
        self.stopped_s = 0.0  # time it spent stopped while another job was timed (never counted against it)
        self.stopped_since: float | None = None  # when the stop in progress began (None: not stopped now)
        self.call_until: float | None = None  # while a request runs outside compile segments: its run deadline
        self.calls = 0  # requests sent so far (which call `call_until` belongs to)
        self.call_started: float | None = None  # when the latest request was sent (a fault's call: judge/stalls.py)
        self.on_fault: Any = None  # on_fault(timed_out): a request of its ended in a timeout or its death (stalls.py)
        if role == "candidate":
            _CANDIDATES.add(self)

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def alive(self) -> bool:
        return not self.dead and self.proc.poll() is None

    def wait_ready(self, timeout_s: float = STARTUP_TIMEOUT_S) -> dict:
        if self.ready_info is None:
            try:
                message = self.channel.receive(time.monotonic() + timeout_s)
            except (ChannelClosed, ChannelTimeout, ValueError) as e:
                detail = self.output_tail()
                self.kill()
                raise SandboxError(f"runner failed to start ({type(e).__name__}): {detail}") from e
            if not message.get("ready"):
                self.kill()
                raise SandboxError(f"runner sent {message!r} instead of ready")
            self.ready_info = message
            if self.device == "cuda":
                self._bind_events(time.monotonic() + timeout_s)
        return self.ready_info

    def _bind_events(self, deadline: float) -> None:
        """The runner's "go" and "done" interprocess events and its flag (8 bytes of the judge's, alone in their
        allocation, where the runner writes each timed call's nonce after its work: the end the judge waits for
        where the driver takes stream memory operations), made by the judge once and opened by the runner before it
        is confined (event handles may need files the confined runner cannot open)."""
        import base64

        import torch

        from kernel_gym.harness import stream_values
        from kernel_gym.sandbox.shared import Arena, Spec

        events = {name: torch.cuda.Event(interprocess=True) for name in ("go", "done")}
        for e in events.values():
            e.record()  # recorded once, so that a wait before the first real record passes at once
        fields = {name: base64.b64encode(e.ipc_handle()).decode() for name, e in events.items()}
        if stream_values.usable(torch.cuda.current_device()):
            self.flag = Arena([Spec((1,), "int64")], torch.device("cuda"))
            self.flag.tensors[0].zero_()
            fields["flag"] = self.flag.descriptor()[0]
        torch.cuda.synchronize()
        self.events = (events["go"], events["done"])
        self.request("events", deadline=deadline, stage="compile", **fields)

    def mark_job_start(self) -> None:
        self.build_ms = 0.0  # this job's time in the judge's build service (load_inline), cache hits included
        try:
            self.log_offset = (self.root / "output.log").stat().st_size
        except OSError:
            self.log_offset = 0

    def request(self, op: str, *, deadline: float, stage: str, fds: list[int] | tuple[int, ...] = (),
                **fields: Any) -> dict[str, Any]:
        """Send one request and return the runner's reply (evidence, or an `error` the caller judges). Time spent
        waiting for a fresh runner to start does not count against the request's deadline. `deadline` is the
        request's run limit; the runner's compile segments in between are under the job's compile budget
        (judge/budget.py), and the run limit moves by each one's length (compiling is not counted)."""
        t0 = time.monotonic()
        self.wait_ready()
        deadline += time.monotonic() - t0
        rid = secrets.randbits(53)  # a nonce: no reply can be written before its request exists
        message = {"op": op, "id": rid, "stage": stage, **fields}
        if fds:
            message["nfds"] = len(fds)
        budget = self.budget
        try:
            self._nothing_pending()
            self.channel.send(message, fds)
            reply = self._converse(rid, deadline)
        except ChannelTimeout:
            compiling = budget is not None and budget.in_compile
            self._faulted(timed_out=True)  # (before the kill: a stall of the GPU it causes is still going on)
            self.kill()
            raise RunnerFailure("timeout", "compile" if compiling else op) from None
        except (ChannelClosed, BrokenPipeError, ConnectionResetError, OSError):
            self._faulted()
            raise RunnerFailure(*self._death(stage)) from None
        except ValueError as e:
            self.kill()
            raise RunnerFailure("tampered", str(e)) from None
        finally:
            self.call_until = None
            if budget is not None and budget.in_compile:  # (a segment the runner never closed: the share back)
                budget.end_compile()
        self.channel.drop_fds()
        return self._accepted(op, rid, reply)

    def _converse(self, rid: int, deadline: float) -> dict[str, Any]:
        """The messages of one request up to its reply: the compile and run phases the runner tells (the run limit
        moves by each compile segment's length) and the load_inline builds it asks of the build service."""
        budget, since, builds = self.budget, 0.0, 0  # (since: when the current compile segment began)
        self.calls += 1
        self.call_started, self.call_until = time.monotonic(), deadline
        reply, deadline = self._receive(deadline)
        run_deadline = deadline
        while reply.get("id") == rid and (set(reply) == {"id", "phase"} or (
                set(reply) == {"id", "build"} and self.builds and builds < MAX_BUILDS)):
            if "build" in reply:  # a load_inline of the candidate's, asked in the middle of this request
                builds += 1
                t_build = time.monotonic()
                build_deadline = budget.begin_compile() if budget is not None else run_deadline
                answer = builds_service.build(reply["build"], self.device, build_deadline)
                self.build_ms += (time.monotonic() - t_build) * 1e3
                run_deadline = deadline = self._resume(budget, run_deadline, t_build)
                self.channel.send({"id": rid, "built": answer})
            elif reply["phase"] == "compile":
                if not since:
                    since = time.monotonic()
                    deadline = budget.begin_compile() if budget is not None else since + OUTSIDE_COMPILE_S
            elif reply["phase"] == "run":
                if since:
                    run_deadline = self._resume(budget, run_deadline, since)
                since, deadline = 0.0, run_deadline
                self.channel.send({"id": rid, "resume": True})
            else:
                break
            self.call_until = None if since else deadline
            reply, deadline = self._receive(deadline)
            if not since:
                run_deadline = deadline  # (moved by the time the runner was stopped, as `deadline` was)
        return reply

    def _faulted(self, timed_out: bool = False) -> None:
        if self.on_fault is not None:
            self.on_fault(timed_out)

    def _accepted(self, op: str, rid: int, reply: dict[str, Any]) -> dict[str, Any]:
        """The reply, if it is the exact reply to the request in flight (else the channel was tampered with)."""
        if reply.get("id") != rid or not set(reply) <= REPLY_KEYS:
            self.kill()
            extra = sorted(set(reply) - REPLY_KEYS)
            raise RunnerFailure("tampered", "a message that is not the reply to the request in flight arrived on the "
                                f"runner's channel{' (fields ' + ', '.join(extra[:5]) + ')' if extra else ''}")
        if "internal_error" in reply:
            self.kill()
            raise SandboxError("the evaluation harness failed (not the solution):\n" + str(reply["internal_error"]))
        if op == "begin" and not self.isolation:  # confined just now, before any job's code: what is in force
            self.limits = [str(p) for p in reply.get("limits") or []]
            self.isolation = isolation.record(self.role, self.pid, self.limits)
        return reply

    def stopped_total(self) -> float:
        """Seconds this runner has spent stopped while other jobs were timed, the stop in progress included."""
        with _STOP_LOCK:
            since = self.stopped_since
            return self.stopped_s + (time.monotonic() - since if since is not None else 0.0)

    def _receive(self, deadline: float) -> tuple[dict[str, Any], float]:
        """The next message by `deadline`, moved by any time the runner spent stopped while another job was timed,
        a stop still in progress included (a stop longer than the call's time left used to end the call as a
        timeout before the stop was counted: genuine jobs beside 8 clients' timings, H100, 2026-12-07)."""
        while True:
            stopped = self.stopped_total()
            try:
                return self.channel.receive(deadline), deadline
            except ChannelTimeout:
                more = self.stopped_total() - stopped
                if more <= 0:
                    raise
                deadline += more
                if self.call_until is not None:  # (what other jobs' stall windows wait for moves with it)
                    self.call_until += more

    @staticmethod
    def _resume(budget: Any, deadline: float, since: float) -> float:
        """A compile segment (begun at `since`) ended: the request's run limit moves by the segment's length (and
        the wait to take the GPU share back), never further (a "run" with no segment before it moves nothing)."""
        if budget is None:
            return deadline + time.monotonic() - since
        moved = budget.end_compile()
        return min(deadline + moved, budget.run_deadline) if moved else deadline

    def _nothing_pending(self) -> None:
        """Bytes on the channel before a request is sent were written ahead of it: tampering (a reply queued for a
        request to come). A closed channel is the runner's death, found by the send or the receive."""
        if self.channel.buffer:
            raise ValueError("bytes arrived on the runner's channel before the judge's request")
        try:
            peek = self.channel.sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except OSError:  # nothing there (BlockingIOError), or a closed channel
            return
        if peek:
            raise ValueError("bytes arrived on the runner's channel before the judge's request")

    def _death(self, stage: str) -> tuple[str, str]:
        try:
            rc = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            rc = None
        server = getattr(self.proc, "server", None)
        if server is not None and not server.alive:  # its runners die with it: not the solution's doing
            self.kill()
            raise SandboxError(f"the runners' fork server ended during the {stage} stage (the evaluation harness "
                               "failed, not the solution)")
        tail = self.output_tail()
        self.kill()
        if rc is not None and rc < 0:
            how = f"was killed by {_signal_name(rc)}"
            kind = "oom" if rc == -signal.SIGKILL else "crash"
            if kind == "oom":
                how += " (most likely the out-of-memory killer or a memory limit)"
        else:
            how, kind = f"exited with code {rc} (os._exit, sys.exit in a thread, or abort in the solution)", "crash"
        msg = f"the evaluation process {how} during the {stage} stage"
        if tail.strip():
            msg += "\nlast output:\n" + trim(tail.strip(), 1500)
        return kind, msg

    def output_tail(self, chars: int = 2000) -> str:
        """The end of what the current job printed (never an earlier job's output)."""
        try:
            with open(self.root / "output.log", "rb") as f:
                f.seek(self.log_offset)
                return f.read().decode(errors="replace")[-chars:]
        except OSError:
            return ""

    def stop(self) -> None:
        """Ask politely, then kill (a runner's CUDA context and kernels end with its process)."""
        if self.alive:
            try:
                self.channel.send({"op": "stop"})
                self.proc.wait(timeout=2)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill()

    def kill_now(self) -> None:
        """SIGKILL to the runner and every process it started (first those in sessions of their own, which no
        process group has), without waiting: nothing of it runs candidate code any more when this returns. Safe from
        another thread than the job's (the job's channel sees the runner's end)."""
        self.dead = True
        if self.proc.poll() is None:
            limits.kill_descendants(self.proc.pid)
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # the runner and everything in its process group
        except (ProcessLookupError, PermissionError):
            pass

    def kill(self) -> None:
        self.kill_now()
        try:
            self.proc.wait(timeout=10)
        except Exception:  # noqa: BLE001 - TimeoutExpired; at interpreter exit the subprocess module may be gone
            pass
        self.channel.close()
        shutil.rmtree(self.root, ignore_errors=True)
        if self.proc.poll() is not None:  # dead: nothing of it maps the judge's memory any more
            self.retire_shared()
            if self.flag is not None:  # (its memory stays with this object: a stuck call's end is released there)
                self.flag.release_count()

    def share(self, arena: Any) -> None:
        """`arena` is mapped by this runner from now on (its memory stays until `retire_shared`)."""
        if self.device == "cuda":
            self.shared.append(arena)

    def retire_shared(self) -> None:
        """The job's arenas go: the runner ended its job (`end` let go of its views) or is dead."""
        shared, self.shared = self.shared, []
        for arena in shared:
            arena.retire()
