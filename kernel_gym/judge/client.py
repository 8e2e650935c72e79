"""A client of the machine's judge for one device (kernel_gym.judge.server): found through a per-device socket,
started on first use. Thread-safe; many jobs may be in flight at once (answers are matched by id).

    client = JudgeClient.for_device("cuda", gpu=0, slots=8)     # connects, starting the judge if none runs
    result = client.evaluate(job)
"""

from __future__ import annotations

import fcntl
import hashlib
import itertools
import json
import logging
import os
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from kernel_gym.errors import SandboxError
from kernel_gym.eval.job import EvalJob
from kernel_gym.eval.result import EvalResult, Outcome
from kernel_gym.paths import unix_address

log = logging.getLogger(__name__)

START_TIMEOUT_S = 240.0
_PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])


def run_dir() -> Path:
    """Where the judges' sockets and logs live: $KERNEL_GYM_JUDGE_DIR, else a folder of this user's under /tmp."""
    path = Path(os.environ.get("KERNEL_GYM_JUDGE_DIR") or f"/tmp/kernel_gym_judges_{os.getuid()}")
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    # /tmp is everyone's: a folder made there first by another uid (a runner's, where Landlock is missing) or one that
    # others may write would let them put their own socket where this user's clients look for the judge
    st = path.lstat()
    if path.is_symlink() or st.st_uid != os.getuid() or st.st_mode & 0o002:
        raise SandboxError(f"{path} (the judges' sockets) is a link, belongs to uid {st.st_uid} or can be written by "
                           "anyone: remove it, or set KERNEL_GYM_JUDGE_DIR to a folder of this user's")
    return path


def gpu_key(gpu: int | None) -> str:
    """The machine's name of the GPU a judge is for: device `gpu` (default 0) of this process's CUDA_VISIBLE_DEVICES
    (a Ray actor's own GPU), or that index when the variable is unset. The judge runs with exactly that GPU
    visible, its runners too."""
    visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    index = gpu or 0
    if visible:
        if index >= len(visible):
            raise SandboxError(f"GPU {index} is not among CUDA_VISIBLE_DEVICES={','.join(visible)}")
        return visible[index]
    return str(index)


def socket_path(device: str, gpu: int | None = None) -> Path:
    """The judge's socket for a device (one per GPU; one for the cpu backend), per installed kernel_gym (clients of
    another checkout get their own judge, so a judge never runs code of another version)."""
    from kernel_gym.version import __version__

    build = hashlib.sha1(f"{__version__}:{_PACKAGE_PARENT}".encode()).hexdigest()[:8]
    name = f"judge-{device}-{gpu_key(gpu) if device == 'cuda' else 'host'}-{build}.sock"
    return run_dir() / name


def _connect(path: Path) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with unix_address(path) as address:
            sock.connect(address)
        return sock
    except OSError:
        sock.close()
        return None


# Variables a judge never needs and a client's environment often holds (API keys, tokens, passwords): the judge's
# process is the one a runner's candidate could look for (/proc/<pid>/environ, see docs/anti-hacking.md).
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH", re.IGNORECASE)


def judge_environment() -> dict[str, str]:
    """The environment a judge starts with: this process's, less every variable named like a secret."""
    return {k: v for k, v in os.environ.items() if not _SECRET_NAME.search(k)}


def idle_exit_default() -> float:
    """How long a judge this process starts outlives its last client: $KERNEL_GYM_JUDGE_IDLE_EXIT_S, else 600 s."""
    try:
        return float(os.environ.get("KERNEL_GYM_JUDGE_IDLE_EXIT_S") or 600.0)
    except ValueError:
        return 600.0


def ensure_judge(device: str, gpu: int | None = None, slots: int = 1, memory_limit_gb: float | None = None,
                 idle_exit_s: float | None = None) -> Path:
    """The socket of the running judge for this device, starting one (detached) if none answers. Two clients
    starting at once are serialized by a lock file, so exactly one judge starts. A judge it starts exits after
    `idle_exit_s` without clients (default: `idle_exit_default()`)."""
    idle_exit_s = idle_exit_default() if idle_exit_s is None else idle_exit_s
    path = socket_path(device, gpu)
    sock = _connect(path)
    if sock is not None:
        sock.close()
        return path
    with open(path.with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        sock = _connect(path)
        if sock is not None:
            sock.close()
            return path
        cmd = [sys.executable, "-m", "kernel_gym.judge.server", "--device", device, "--slots", str(slots),
               "--socket", str(path), "--idle-exit-s", str(idle_exit_s)]
        if memory_limit_gb:
            cmd += ["--memory-limit-gb", str(memory_limit_gb)]
        env = judge_environment()
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_PARENT, env.get("PYTHONPATH")) if p)
        if device == "cuda":
            env["CUDA_VISIBLE_DEVICES"] = gpu_key(gpu)
        with open(path.with_suffix(".log"), "ab") as log:
            proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                    start_new_session=True, cwd=run_dir())
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                tail = path.with_suffix(".log").read_text(errors="replace")[-2000:]
                raise SandboxError(f"the judge for {device} failed to start (exit {proc.returncode}):\n{tail}")
            sock = _connect(path)
            if sock is not None:
                sock.close()
                return path
            time.sleep(0.1)
        raise SandboxError(f"the judge for {device} did not open {path} within {START_TIMEOUT_S:.0f} s")


class JudgeClient:
    """Evaluates jobs on the machine's judge for one device. `evaluate` blocks; many threads may call it."""

    def __init__(self, path: Path, device: str, *, restart: dict[str, Any] | None = None):
        self.path, self.device = Path(path), device
        self._restart = restart  # ensure_judge arguments: start the judge again if it went away
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._pending: dict[int, tuple[threading.Event, list[dict]]] = {}
        self._sock: socket.socket | None = None
        self._closed = False
        self.refused: str | None = None  # the judge's reason when it refused this client's connection

    @classmethod
    def for_device(cls, device: str, gpu: int | None = None, slots: int = 1,
                   memory_limit_gb: float | None = None) -> JudgeClient:
        restart = {"device": device, "gpu": gpu, "slots": slots, "memory_limit_gb": memory_limit_gb}
        return cls(ensure_judge(**restart), device, restart=restart)

    def _connected(self) -> socket.socket:
        with self._lock:
            if self._sock is None:
                if self._restart is not None:
                    self.path = ensure_judge(**self._restart)
                sock = _connect(self.path)
                if sock is None:
                    raise SandboxError(f"no judge answers at {self.path}")
                self._sock = sock
                threading.Thread(target=self._read, args=(sock,), daemon=True, name="judge-client-reader").start()
            return self._sock

    def _read(self, sock: socket.socket) -> None:
        try:
            for line in sock.makefile("rb"):
                try:
                    message = json.loads(line)
                except (json.JSONDecodeError, UnicodeDecodeError):
                    continue
                if "id" not in message and "error" in message:  # the judge refused this connection: why
                    self.refused = str(message["error"])[:500]
                    log.error("the judge refused this client: %s", self.refused)
                    continue
                with self._lock:
                    waiter = self._pending.pop(message.get("id"), None)
                if waiter is not None:
                    waiter[1].append(message)
                    waiter[0].set()
        except OSError:
            pass
        with self._lock:  # the judge went away: every request in flight gets no answer
            if self._sock is sock:
                self._sock = None
            pending, self._pending = self._pending, {}
        for event, _ in pending.values():
            event.set()

    def request(self, message: dict[str, Any], timeout_s: float | None = None) -> dict[str, Any] | None:
        """Send one request and wait for its answer (None when the judge went away first)."""
        if self._closed:
            raise SandboxError("the judge client is closed")
        sock = self._connected()
        rid = next(self._ids)
        event, box = threading.Event(), []
        with self._lock:
            self._pending[rid] = (event, box)
        data = (json.dumps({**message, "id": rid}) + "\n").encode()
        try:
            with self._lock:
                sock.sendall(data)
        except OSError:
            with self._lock:
                self._pending.pop(rid, None)
                if self._sock is sock:
                    self._sock = None
            return None
        event.wait(timeout_s)
        return box[0] if box else None

    def evaluate(self, job: EvalJob) -> EvalResult:
        for _attempt in range(2):  # a judge that died (or idled out) mid-request is started again once
            answer = self.request({"op": "evaluate", "job": job.to_dict()})
            if answer is not None and "result" in answer:
                return EvalResult.from_dict(answer["result"])
        if self.refused:
            return EvalResult(outcome=Outcome.CRASH, backend=job.backend, infra_failure=True,
                              message=f"the judge refused this client ({self.refused}): an infrastructure failure, "
                                      "not the solution's")
        return EvalResult(outcome=Outcome.CRASH, backend=job.backend, infra_failure=True,
                          message="the judge went away twice while evaluating this job (an infrastructure failure, "
                                  "not the solution's)")

    def evaluate_many(self, jobs: list[EvalJob]) -> list[EvalResult]:
        from concurrent.futures import ThreadPoolExecutor

        if not jobs:
            return []
        with ThreadPoolExecutor(max_workers=min(64, len(jobs))) as pool:
            return list(pool.map(self.evaluate, jobs))

    def status(self) -> dict[str, Any]:
        answer = self.request({"op": "status"}, timeout_s=30)
        return (answer or {}).get("status", {})

    def warm_up(self) -> None:
        """Block until the judge's runners are ready (those of its idle slots: a busy slot's are running)."""
        from kernel_gym.judge.runners import STARTUP_TIMEOUT_S

        answer = self.request({"op": "warm"}, timeout_s=STARTUP_TIMEOUT_S + 30)
        if answer is not None and answer.get("warm") is False:
            raise SandboxError(f"the judge's runners did not start: {answer.get('error', '')}")

    def __deepcopy__(self, memo: dict) -> JudgeClient:
        return self

    def close(self) -> None:
        """Disconnect (the judge keeps serving other clients; jobs of this client still waiting are dropped)."""
        self._closed = True
        with self._lock:
            sock, self._sock = self._sock, None
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()


class JudgeClients:
    """Clients of several GPUs' judges: each job goes to the one with the fewest jobs in flight from here."""

    def __init__(self, clients: list[JudgeClient]):
        self.clients = clients
        self.device = clients[0].device
        self._lock = threading.Lock()
        self._in_flight = [0] * len(clients)

    def evaluate(self, job: EvalJob) -> EvalResult:
        with self._lock:
            i = min(range(len(self.clients)), key=lambda k: self._in_flight[k])
            self._in_flight[i] += 1
        try:
            return self.clients[i].evaluate(job)
        finally:
            with self._lock:
                self._in_flight[i] -= 1

    def status(self) -> dict[str, Any]:
        return {"judges": [c.status() for c in self.clients]}

    def warm_up(self) -> None:
        for c in self.clients:
            c.warm_up()

    def __deepcopy__(self, memo: dict) -> JudgeClients:
        return self

    def close(self) -> None:
        for c in self.clients:
            c.close()


def stop_judge(path: Path) -> bool:
    """Ask the judge at `path` to stop; False when none answers there. A judge that goes away before its
    acknowledgement arrives (the connection reset as it exits) has stopped all the same."""
    sock = _connect(path)
    if sock is None:
        return False
    with sock:
        try:
            sock.sendall(b'{"op": "stop", "id": 0}\n')
            sock.makefile("rb").readline()
        except OSError:
            pass
    return True
