"""Who is on the other end of a connection to the judge's socket? The judge serves its clients only.

On main 98d8a73 a candidate's runner (uid 0, every capability) connected to the shared judge's socket, guarded by its
0600 mode alone, and submitted a job whose task source the judge then executed: code running in the judge, a forged
verdict, a file written outside any sandbox. Runners now cannot make a unix socket at all (seccomp, sandbox/confine/seccomp.py);
this is the judge's own check, for every process seccomp does not cover (a kernel or architecture without it, the fork
server, a build process, anything that escaped).

Every accepted connection's peer is read with SO_PEERCRED (pid, uid, gid, fixed at connect time) and refused when:
- its uid is not the judge's own effective uid (runners that dropped to an unprivileged uid, other users);
- it is one of the judge's own descendants (its fork server, runners, build processes and whatever they started),
  found by walking `/proc/<pid>/stat`'s parent links up to init (the judge reads /proc as root or as their owner). A
  runner's descendant re-parented to init is no longer a descendant: the uid check catches it where runners run as
  another uid, seccomp everywhere it is in force;
- its pid cannot be told (0: a process in a pid namespace the judge cannot see into) or it is gone already.
A refused peer gets one JSON line `{"error": "..."}` and the connection is closed; the judge logs a warning and counts
it (`refused_peers` in `judge status`).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import struct
import threading
from pathlib import Path

log = logging.getLogger(__name__)

MAX_DEPTH = 4096  # parent links followed at most (a loop would be a kernel bug; a deep tree is still bounded)


def peer_credentials(sock: socket.socket) -> tuple[int, int, int]:
    """(pid, uid, gid) of the process that connected `sock` (SO_PEERCRED, struct ucred)."""
    data = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, gid = struct.unpack("3i", data)
    return pid, uid, gid


def parent(pid: int) -> int | None:
    """The parent pid of `pid` from /proc/<pid>/stat; None when it cannot be read (gone, or not ours to read)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat.rsplit(")", 1)[1].split()[1])  # (the command name in parentheses may hold spaces)
    except (OSError, ValueError, IndexError):
        return None


def is_descendant(pid: int, ancestor: int) -> bool | None:
    """Whether `ancestor` is among the parents of `pid` (not `pid` itself); None when a link could not be read."""
    current = pid
    for _ in range(MAX_DEPTH):
        up = parent(current)
        if up is None:
            return None
        if up == ancestor:
            return True
        if up <= 1:
            return False
        current = up
    return None


def refusal(pid: int, uid: int, judge_pid: int, judge_uid: int) -> str | None:
    """Why a peer with these credentials may not talk to the judge (pid `judge_pid`, euid `judge_uid`); None: it may."""
    if uid != judge_uid:
        return f"uid {uid} is not the judge's ({judge_uid}): only the judge's own user may send it jobs"
    if pid <= 0:
        return "the connecting process cannot be identified (it lives in a pid namespace the judge cannot see)"
    if pid == judge_pid:
        return None
    descendant = is_descendant(pid, judge_pid)
    if descendant is None:
        return f"the connecting process {pid} cannot be traced to its parents (gone already, or not readable)"
    if descendant:
        return (f"process {pid} is one of the judge's own processes (a runner, or a process a runner started): "
                "runners may not talk to the judge")
    return None


class PeerGate:
    """The accept loop's check of each new connection, and its count of refusals."""

    def __init__(self, judge_pid: int | None = None, judge_uid: int | None = None):
        self.judge_pid = os.getpid() if judge_pid is None else judge_pid
        self.judge_uid = os.geteuid() if judge_uid is None else judge_uid
        self.refused = 0
        self._lock = threading.Lock()

    def check(self, sock: socket.socket) -> tuple[str | None, tuple[int, int, int]]:
        """(why the peer of `sock` is refused, or None; its (pid, uid, gid), -1 each where unreadable)."""
        try:
            creds = peer_credentials(sock)
        except OSError as exc:
            return f"the peer's credentials cannot be read: {exc}", (-1, -1, -1)
        return refusal(creds[0], creds[1], self.judge_pid, self.judge_uid), creds

    def admit(self, sock: socket.socket) -> bool:
        """True: serve this connection. False: it was refused (told why, closed, logged, counted)."""
        why, (pid, uid, gid) = self.check(sock)
        if why is None:
            return True
        with self._lock:
            self.refused += 1
        log.warning("judge: refused a connection from pid %d (uid %d, gid %d): %s", pid, uid, gid, why)
        try:
            sock.settimeout(1.0)
            sock.sendall((json.dumps({"error": f"connection refused by the judge: {why}"}) + "\n").encode())
            _drain(sock)  # (closing with the peer's request unread would reset the connection: the reason lost)
        except OSError:
            pass
        finally:
            try:
                sock.close()
            except OSError:
                pass
        return False


def _drain(sock: socket.socket, limit: int = 1 << 20) -> None:
    """Read and drop what the peer sent already, without waiting for more."""
    sock.setblocking(False)
    taken = 0
    try:
        while taken < limit:
            chunk = sock.recv(65536)
            if not chunk:
                return
            taken += len(chunk)
    except OSError:  # (BlockingIOError: nothing more queued)
        return
