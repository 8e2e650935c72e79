"""One judge per GPU for the whole machine: a daemon that owns the GPU's runner pool and serves every client (envs,
vector envs, OpenRLHF agents, Ray actors, `kernel-gym serve`) over a unix socket.

    python -m kernel_gym.judge.server --device cuda --gpu 0 --slots 8 --socket PATH [--idle-exit-s 600]

Jobs from many clients are queued and scheduled fairly (round robin over the clients with work waiting, so none
starves); up to `slots` jobs run at once: compiles in parallel on the CPU cores, correctness checks side by side on
the GPU, timing always exclusive (a job waits for the GPU, and its wait is reported, never timed beside another).
A client that goes away leaves nothing queued: its waiting jobs are dropped. With no job for `IDLE_RELEASE_S` (5 s;
`KERNEL_GYM_JUDGE_IDLE_RELEASE_S`), the judge gives the GPU memory it cached for its jobs' buffers back to the driver
(clients that sit waiting for their next action, e.g. on an LLM's generation, should not keep tens of GiB from the
GPU's other users); with no client for `idle_exit_s`, the daemon exits (the next client starts another).

Protocol: JSON lines. `{"op": "evaluate", "id": N, "job": JOB}` -> `{"id": N, "result": RESULT}` (answers may come
out of order); `{"op": "status"}` -> `{"status": {...}}`; `{"op": "warm"}` -> `{"warm": true}` once the runners of
its idle slots are ready; `{"op": "stop"}` stops the daemon.
"""

from __future__ import annotations

import argparse
import collections
import faulthandler
import json
import logging
import os
import socket
import threading
import time
from pathlib import Path
from typing import Any

from kernel_gym.judge import builds
from kernel_gym.judge.peers import PeerGate
from kernel_gym.judge.requests import Connection, FairQueue, Request, Running
from kernel_gym.paths import unix_address
from kernel_gym.sandbox import isolation

log = logging.getLogger(__name__)


# A running job's outer limit beyond its own (compile budget + run limit + loading and constructing, twice: the
# second shape): the watchdog's, which ends a job its own limits failed to end (a bug of ours, never the normal way).
WATCHDOG_SLACK_S = 60.0


ACCEPT_BACKOFF_S = 0.2  # after a failed accept (e.g. out of file descriptors) before the next try
IDLE_RELEASE_S = float(os.environ.get("KERNEL_GYM_JUDGE_IDLE_RELEASE_S", "5") or 5)


class JudgeServer:
    def __init__(self, device: str, gpu: int | None, slots: int, socket_path: Path, idle_exit_s: float = 600.0,
                 memory_limit_gb: float | None = None):
        from kernel_gym.judge.pool import WorkerPool

        self.device, self.gpu, self.slots, self.socket_path = device, gpu, slots, Path(socket_path)
        self.idle_exit_s = idle_exit_s
        self.pool = WorkerPool(device, slots, [gpu] * slots if gpu is not None else None, memory_limit_gb)
        self.queue = FairQueue()
        self.lock = threading.Lock()
        self.clients: dict[int, Connection] = {}
        self.inflight: dict[int, Running] = {}  # running jobs by a key of their own
        self.peer_gate = PeerGate()  # who may connect: the judge's own uid, none of its own processes (runners)
        self.next_job = 0
        self.cancelled = 0  # running jobs ended because their client went away
        self.overdue = 0  # running jobs the watchdog ended (past their outer limit)
        self.next_client = 0
        self.running = 0
        self.done = 0
        self.dropped = 0
        self.waits: collections.deque[float] = collections.deque(maxlen=1000)  # queue wait per job (s)
        self.timing_waits: collections.deque[float] = collections.deque(maxlen=1000)  # GPU wait before timing (s)
        # jobs run again alone (an oom among other jobs, the judge's last out-of-memory retry): their wait for the
        # pool to themselves (s), while the rest of the queue waited behind them
        self.alone_waits: collections.deque[float] = collections.deque(maxlen=1000)
        self.per_client_done: collections.Counter[int] = collections.Counter()
        self.last_activity = time.monotonic()
        self.last_job_end = time.monotonic()
        self.holding = False  # jobs ran since the judge last gave its cached GPU memory back
        self.idle_releases = 0
        self.accept_failures = 0  # clients the judge failed to accept (logged; it serves on)
        self.started = time.time()
        self.stopping = threading.Event()

    # ---- serving -------------------------------------------------------------------------------------------------
    def serve_forever(self) -> None:
        self.socket_path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.socket_path.unlink()
        except FileNotFoundError:
            pass
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with unix_address(self.socket_path) as address:  # (a long folder is reached through its descriptor)
            listener.bind(address)
        os.chmod(self.socket_path, 0o600)  # this user's clients only
        listener.listen(64)
        listener.settimeout(1.0)
        for i in range(self.slots):
            threading.Thread(target=self._dispatch, daemon=True, name=f"judge-slot-{i}").start()
        threading.Thread(target=self._watchdog, daemon=True, name="judge-watchdog").start()
        log.info("judge on %s (%s, %d slots) at %s, pid %d", self.device, self.gpu, self.slots, self.socket_path,
                 os.getpid())
        try:
            while not self.stopping.is_set():
                try:
                    if not self._accept_one(listener):
                        break
                except Exception:  # noqa: BLE001 - out of file descriptors, a client gone mid-admission...: the
                    # judge serves on (every running job would be lost with it)
                    log.exception("judge: accepting a client failed; serving on")
                    with self.lock:
                        self.accept_failures += 1
                    time.sleep(ACCEPT_BACKOFF_S)
        finally:
            listener.close()
            try:
                self.socket_path.unlink()
            except FileNotFoundError:
                pass
            self.queue.close()
            self.pool.close()

    def _accept_one(self, listener: socket.socket) -> bool:
        """Accept one client (its own thread serves it), or, when none came within a second, exit if idle too long
        and give cached GPU memory back if idle a while. False: the judge should exit."""
        try:
            sock, _ = listener.accept()
        except TimeoutError:
            if self._idle():
                return False
            self._release_if_idle()
            return True
        try:
            if not self.peer_gate.admit(sock):  # refused: told why, closed, logged and counted
                return True
            with self.lock:
                client = self.next_client
                self.next_client += 1
                self.clients[client] = Connection(sock, client)
                self.last_activity = time.monotonic()
            threading.Thread(target=self._client, args=(self.clients[client],), daemon=True,
                             name=f"judge-client-{client}").start()
        except BaseException:
            sock.close()
            raise
        return True

    def _idle(self) -> bool:
        with self.lock:
            busy = self.clients or self.running or self.queue.depth()
            if busy:
                self.last_activity = time.monotonic()
            return not busy and time.monotonic() - self.last_activity > self.idle_exit_s

    def _release_if_idle(self) -> None:
        """No job running or queued for IDLE_RELEASE_S since the last one ended: the judge's cached GPU memory goes
        back to the driver (the runners give theirs back after every job)."""
        with self.lock:
            idle = (self.holding and not self.running and not sum(self.queue.depth().values())
                    and time.monotonic() - self.last_job_end > IDLE_RELEASE_S)
            if idle:
                self.holding = False
                self.idle_releases += 1
        if idle:
            self.pool.release_memory()

    def _client(self, conn: Connection) -> None:
        reader = conn.sock.makefile("rb")
        try:
            for line in reader:
                try:
                    message = json.loads(line)
                except (json.JSONDecodeError, UnicodeDecodeError):
                    conn.send({"error": "malformed JSON"})
                    continue
                op = message.get("op")
                if op == "evaluate":
                    self.queue.put(Request(conn.client, message.get("id"), message.get("job") or {}, conn))
                elif op == "status":
                    conn.send({"id": message.get("id"), "status": self.status()})
                elif op == "warm":  # answered once the idle slots' runners are ready
                    threading.Thread(target=self._warm, args=(conn, message.get("id")), daemon=True,
                                     name="judge-warm").start()
                elif op == "stop":
                    conn.send({"id": message.get("id"), "stopping": True})
                    self.stopping.set()
                else:
                    conn.send({"id": message.get("id"), "error": f"unknown op {op!r}"})
        except OSError:
            pass
        finally:
            conn.open = False
            dropped = self.queue.drop(conn.client)
            with self.lock:
                self.clients.pop(conn.client, None)
                self.dropped += dropped
                self.last_activity = time.monotonic()
                running = [r for r in self.inflight.values() if r.client == conn.client]
                self.cancelled += len(running)
            for r in running:  # nobody waits for these answers: their runners are killed now, not at their limits
                r.cancel.cancel("its client went away")
            try:
                conn.sock.close()
            except OSError:
                pass

    def _warm(self, conn: Connection, rid: Any) -> None:
        try:
            self.pool.warm_up()
            conn.send({"id": rid, "warm": True})
        except Exception as e:  # noqa: BLE001 - a runner that cannot start: the client hears why
            conn.send({"id": rid, "warm": False, "error": str(e)[:2000]})

    def _dispatch(self) -> None:
        from kernel_gym.eval.job import EvalJob
        from kernel_gym.eval.result import EvalResult, Outcome

        while True:
            request = self.queue.get()
            if request is None:
                return
            if not request.conn.open:  # its client left while it waited
                with self.lock:
                    self.dropped += 1
                continue
            wait = time.monotonic() - request.queued_at
            with self.lock:
                self.running += 1
                self.holding = True
                self.waits.append(wait)
                key = self.next_job
                self.next_job += 1
            try:
                job = EvalJob.from_dict(request.job)
                running = Running(request.client, time.monotonic(), outer_limit_s(job))
                with self.lock:
                    self.inflight[key] = running
                if not request.conn.open:  # (its client left between the two checks)
                    running.cancel.cancel("its client went away")
                result = self.pool.evaluate(job, cancel=running.cancel)
            except Exception as e:  # noqa: BLE001 - a bad job or our own failure: an answer, never a hang
                log.exception("judge: a job failed")
                result = EvalResult(outcome=Outcome.CRASH, message=judge_failure_message(e), infra_failure=True)
            result = result.replace(stage_ms={**result.stage_ms, "judge_queue_wait": round(wait * 1e3, 3)})
            with self.lock:
                self.inflight.pop(key, None)
                self.running -= 1
                self.last_job_end = time.monotonic()
                self.done += 1
                self.per_client_done[request.client] += 1
                self.timing_waits.append(result.stage_ms.get("gpu_lock_wait", 0.0) / 1e3)
                if "alone_wait" in result.stage_ms:
                    self.alone_waits.append(result.stage_ms["alone_wait"] / 1e3)
                self.last_activity = time.monotonic()
            request.conn.send({"id": request.rid, "result": result.to_dict()})
            if self.pool.context_stuck:  # its own GPU work would hang every later job: a fresh judge takes over
                log.critical("judge: its GPU context is stuck (%s); exiting so that clients start another",
                             self.pool.gpu_fault)
                os._exit(3)

    def _watchdog(self) -> None:
        """Once a second: a running job past its outer limit is ended (its runner killed), so no job runs past its
        limit whatever went wrong in the judge; `status` shows every running job's age and limit."""
        while not self.stopping.wait(1.0):
            now = time.monotonic()
            with self.lock:
                late = [r for r in self.inflight.values() if now - r.started > r.limit_s and r.cancel.reason is None]
                self.overdue += len(late)
            for r in late:
                log.error("judge: a job ran past its outer limit (%.0f s); ending it", r.limit_s)
                r.cancel.cancel(f"it ran past its outer limit of {r.limit_s:.0f} s", fault=True)

    def status(self) -> dict[str, Any]:
        def stats(xs: collections.deque[float]) -> dict[str, float]:
            if not xs:
                return {"n": 0}
            s = sorted(xs)
            return {"n": len(s), "median_s": round(s[len(s) // 2], 4), "p90_s": round(s[int(0.9 * (len(s) - 1))], 4),
                    "max_s": round(s[-1], 4)}

        with self.lock:
            return {"device": self.device, "gpu": self.gpu, "slots": self.slots, "ready_slots": self.pool.ready_slots(),
                    "pid": os.getpid(), "socket": str(self.socket_path), "uptime_s": round(time.time() - self.started, 1),
                    "clients": len(self.clients), "queued": sum(self.queue.depth().values()),
                    "queued_by_client": {str(k): v for k, v in self.queue.depth().items()},
                    "running": self.running, "done": self.done, "dropped": self.dropped,
                    "running_jobs": [{"client": r.client, "age_s": round(time.monotonic() - r.started, 1),
                                      "limit_s": round(r.limit_s, 1), "ending": r.cancel.reason}
                                     for r in self.inflight.values()],
                    "cancelled": self.cancelled, "overdue": self.overdue, "gpu_fault": self.pool.gpu_fault,
                    "runner_pids": self.pool.runner_pids(),
                    "done_by_client": {str(k): v for k, v in self.per_client_done.items()},
                    "queue_wait": stats(self.waits), "timing_lock_wait": stats(self.timing_waits),
                    "alone_wait": stats(self.alone_waits), "alone_waiting": self.pool.alone_waiting,
                    "idle_releases": self.idle_releases, "accept_failures": self.accept_failures,
                    "gpu_reserved_mb": self.pool.reserved_mb(),
                    "spare_builders": builds.SPARES.waiting(),
                    "isolation": isolation.summary(),  # runners' uid, capabilities, namespaces; "weak" if short
                    "refused_peers": self.peer_gate.refused}


def outer_limit_s(job: Any) -> float:
    """The longest a job can run by its own limits: its compile budget, its run limit, loading and constructing
    (both shapes), and the watchdog's slack."""
    from kernel_gym.judge.budget import SETUP_LIMIT_S

    return job.config.compile_timeout_s + job.config.run_timeout_s + 6 * SETUP_LIMIT_S + WATCHDOG_SLACK_S


def judge_failure_message(exc: BaseException) -> str:
    """The crash message of a job the judge itself could not judge. Out of GPU memory after its retries (the last
    with the pool to itself) means other processes hold the GPU's memory: the machine's failure, said so."""
    from kernel_gym.judge.judge_memory import judge_out_of_memory

    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if judge_out_of_memory(exc):
        return ("the judge could not get GPU memory for this job's inputs and outputs, even with its other jobs "
                "finished: other processes on this GPU hold its memory (another judge, a trainer, leftover runs). "
                f"This is an infrastructure failure, not the solution's: {first}")
    return f"the judge failed on this job: {first}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", choices=("cpu", "cuda"), required=True)
    parser.add_argument("--gpu", type=int, default=None)
    parser.add_argument("--slots", type=int, default=1)
    parser.add_argument("--socket", type=Path, required=True)
    parser.add_argument("--idle-exit-s", type=float, default=600.0)
    parser.add_argument("--memory-limit-gb", type=float, default=None)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    faulthandler.enable()  # a judge killed by a fatal signal leaves its threads' stacks in its log
    JudgeServer(args.device, args.gpu, args.slots, args.socket, args.idle_exit_s, args.memory_limit_gb).serve_forever()


if __name__ == "__main__":
    main()
