"""How the judge starts a runner: forked from its fork server (runner/forkserver.py: torch and triton already
imported, so a start costs milliseconds instead of seconds of imports), or, where that is off or fails, as a fresh
interpreter (`python -m kernel_gym.runner`). Both give the same program, environment, folder and confinement.

`KERNEL_GYM_FORKSERVER`: "1" on every device, "0" never; unset: on for cpu runners, off for cuda runners until the
fork server's cuda runners have been measured on a device (a fresh interpreter each, as before).
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from kernel_gym.sandbox.channel import Channel, ChannelClosed, socketpair

ROOT_PREFIX = "kernel_gym_worker_"  # runners' folders and the fork server's: swept alike once their pid is gone

log = logging.getLogger(__name__)
START_TIMEOUT_S = 180.0
PER_RUNNER_KEYS = ("HOME", "TMPDIR", "TRITON_CACHE_DIR")  # what differs between runners of one fork server


def enabled(device: str) -> bool:
    flag = os.environ.get("KERNEL_GYM_FORKSERVER", "")
    if flag in ("0", "1"):
        return flag == "1"
    return device == "cpu"


class ForkedProcess:
    """The part of `subprocess.Popen` a `RunnerProcess` uses, for a runner whose parent is the fork server (which
    reaps it and reports its exit status)."""

    def __init__(self, server: ForkServer, pid: int):
        self.server, self.pid = server, pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self.server.exit_status(self.pid)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self.server.cond:
            while self.poll() is None:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise subprocess.TimeoutExpired(f"runner {self.pid}", timeout or 0.0)
                self.server.cond.wait(None if remaining is None else min(remaining, 0.5))
        return self.returncode  # type: ignore[return-value]


class ForkServer:
    """The judge's handle on one fork server (one per device, GPU and environment in this process)."""

    def __init__(self, device: str, env: dict[str, str]):
        self.device = device
        # its own folder as HOME and TMPDIR (named like a runner's, so a sweep removes it once its pid is gone)
        self.root = Path(tempfile.mkdtemp(prefix=ROOT_PREFIX + "forkserver_"))
        env = {**env, "HOME": str(self.root), "TMPDIR": str(self.root), "TRITON_CACHE_DIR": str(self.root / "triton")}
        ours, theirs = socketpair()
        cmd = [sys.executable, "-m", "kernel_gym.runner.forkserver", "--fd", str(theirs.fileno()), "--device", device]
        self.proc = popen(cmd, env, self.root, theirs)
        theirs.close()
        (self.root / "pid").write_text(str(self.proc.pid))
        self.channel = Channel(ours)
        self.cond = threading.Condition()
        self.send_lock = threading.Lock()
        self.replies: dict[int, dict[str, Any]] = {}
        self.exits: dict[int, int] = {}
        self.children: set[int] = set()
        self.ready = False
        self.closed = False
        self._ids = iter(range(1, 1 << 62))
        self.reader = threading.Thread(target=self._read, name="kernel-gym-forkserver", daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while True:
            try:
                message = self.channel.receive(None)
            except (ChannelClosed, ValueError, OSError):
                break
            with self.cond:
                if message.get("ready"):
                    self.ready = True
                elif "exit" in message:
                    self.exits[int(message["exit"])] = int(message["rc"])
                    self.children.discard(int(message["exit"]))
                elif "id" in message:
                    self.replies[int(message["id"])] = message
                self.cond.notify_all()
        with self.cond:
            self.closed = True
            self.cond.notify_all()

    @property
    def alive(self) -> bool:
        return not self.closed and self.proc.poll() is None

    def exit_status(self, pid: int) -> int | None:
        """The runner's exit status once the fork server reaped it; -9 once the fork server itself is gone (its
        runners die with it: a parent-death signal, delivered as it ends)."""
        with self.cond:
            if pid in self.exits:
                return self.exits[pid]
        return None if self.alive else -9

    def spawn(self, root: Path, role: str, memory_limit_gb: float | None, env: dict[str, str],
              runner_end: Any) -> ForkedProcess:
        """A runner forked with `runner_end` as its channel; raises OSError when the fork server cannot."""
        rid = next(self._ids)
        deadline = time.monotonic() + START_TIMEOUT_S
        with self.cond:
            while not self.ready and not self.closed:
                if not self.cond.wait(max(deadline - time.monotonic(), 0.0)) and time.monotonic() >= deadline:
                    break
            started, closed = self.ready, self.closed
        if not started:
            self.close()  # a fork server that never got ready is not waited for again: the next start makes another
            raise OSError("the fork server is gone" if closed else "the fork server did not start")
        message = {"op": "spawn", "id": rid, "root": str(root), "role": role, "memory_limit_gb": memory_limit_gb,
                   "env": env, "nfds": 1}
        with self.send_lock:
            self.channel.send(message, [runner_end.fileno()])
        with self.cond:
            while rid not in self.replies and not self.closed:
                self.cond.wait(max(deadline - time.monotonic(), 0.0))
                if time.monotonic() >= deadline:
                    break
            reply = self.replies.pop(rid, None)
        if reply is None:
            self.close()  # (as above: a fork server that stopped answering is replaced)
            raise OSError("the fork server did not answer")
        if "pid" not in reply:
            raise OSError(reply.get("error") or "the fork server refused")
        with self.cond:
            pid = int(reply["pid"])
            self.children.add(pid)
        return ForkedProcess(self, pid)

    def close(self) -> None:
        with self.cond:
            self.closed = True
        try:
            with self.send_lock:
                self.channel.send({"op": "stop"})
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.channel.close()
        shutil.rmtree(self.root, ignore_errors=True)


_SERVERS: dict[tuple, ForkServer] = {}
_LOCK = threading.Lock()


def _server(device: str, env: dict[str, str]) -> ForkServer:
    """This process's fork server for the runners' environment less their own folders (started on first use; a
    new one when the environment changed or the old one died; an old one is stopped once its runners are gone)."""
    key = (device, tuple(sorted((k, v) for k, v in env.items() if k not in PER_RUNNER_KEYS)))
    with _LOCK:
        server = _SERVERS.get(key)
        if server is not None and not server.alive:
            del _SERVERS[key]
            server = None
        if server is None:
            for old_key, old in list(_SERVERS.items()):
                if old_key[0] == device and not old.children:
                    old.close()
                    del _SERVERS[old_key]
            server = _SERVERS[key] = ForkServer(device, env)
        return server


def start(cmd: list[str], env: dict[str, str], root: Path, runner_end: Any, device: str, role: str,
          memory_limit_gb: float | None) -> subprocess.Popen | ForkedProcess:
    """Start a runner: forked when the fork server is on and able to, else `cmd` as a fresh process."""
    if enabled(device):
        try:
            return _server(device, env).spawn(root, role, memory_limit_gb, env, runner_end)
        except OSError as e:
            log.warning("fork server unavailable (%s); starting the runner as a fresh process", e)
    return popen(cmd, env, root, runner_end)


# Every process the judge starts is started by this one long-lived thread: a child's parent-death signal fires when
# the *thread* that started it ends, so a runner started from a job's thread would be killed when that thread ends
# (a later job using it would read as out of memory).
_STARTER = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="kernel-gym-starter")


def _forget_in_child() -> None:
    """In a process forked from this one (a forked vector-env worker): the parent's starter thread and fork servers
    are not its own (the thread does not exist there, the servers' channels are the parent's): start afresh."""
    global _STARTER, _LOCK
    _STARTER = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="kernel-gym-starter")
    _LOCK = threading.Lock()
    _SERVERS.clear()


os.register_at_fork(after_in_child=_forget_in_child)


def popen(cmd: list[str], env: dict[str, str], cwd: Path, end: Any) -> subprocess.Popen:
    """`cmd` as a new session with `end` (a socket) as its one inherited descriptor, started by the starter thread."""
    return _STARTER.submit(subprocess.Popen, cmd, env=env, cwd=cwd, pass_fds=(end.fileno(),), start_new_session=True,
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).result()


def stop_all() -> None:
    """Stop this process's fork servers (their runners end with them)."""
    with _LOCK:
        for server in _SERVERS.values():
            server.close()
        _SERVERS.clear()
