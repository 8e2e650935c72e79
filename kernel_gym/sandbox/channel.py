"""The judge <-> runner channel: one connected AF_UNIX stream socket, one JSON object per line, file descriptors
(shared-memory arenas) passed alongside with SCM_RIGHTS.

JSON, never pickle, from the runner to the judge: the runner holds candidate code, so nothing it sends may execute
in the judge. The judge's messages may carry opaque bytes (CUDA IPC handles) as base64 strings.
"""

from __future__ import annotations

import json
import os
import select
import socket
import time
from typing import Any

MAX_MESSAGE_BYTES = 64 << 20
MAX_FDS = 16


class ChannelClosed(Exception):
    """The other end closed the socket (its process died)."""


class ChannelTimeout(Exception):
    """No complete message arrived before the deadline."""


class Channel:
    """Newline-delimited JSON over a stream socket, with deadlines and fd passing."""

    def __init__(self, sock: socket.socket, max_fds: int | None = None):
        self.sock = sock
        self.buffer = bytearray()
        self.fds: list[int] = []  # received, not yet claimed by a message
        # the most descriptors the other end may have pending at once (None: any). The judge's end of a runner's
        # channel takes none: each one a runner sends is a new descriptor in the judge, and a flood of them would
        # fill its table (no other job could get an arena, no client a connection).
        self.max_fds = max_fds

    @classmethod
    def from_fd(cls, fd: int) -> Channel:
        return cls(socket.socket(fileno=fd))

    def fileno(self) -> int:
        return self.sock.fileno()

    def send(self, message: dict[str, Any], fds: list[int] | tuple[int, ...] = ()) -> None:
        data = (json.dumps(message, allow_nan=True) + "\n").encode()
        if fds:
            sent = socket.send_fds(self.sock, [data], list(fds))
            data = data[sent:]
        if data:
            self.sock.sendall(data)

    def receive(self, deadline: float | None) -> dict[str, Any]:
        """The next message; `deadline` is a time.monotonic() value, None waits forever. A message that says
        `"nfds": k` gets the next k received descriptors under `"_fds"`."""
        while True:
            newline = self.buffer.find(b"\n")
            if newline >= 0:
                line = bytes(self.buffer[:newline])
                del self.buffer[: newline + 1]
                try:
                    message = json.loads(line)
                except (json.JSONDecodeError, UnicodeDecodeError) as e:
                    raise ValueError(f"malformed message: {line[:200]!r}") from e
                if not isinstance(message, dict):
                    raise ValueError(f"malformed message: {line[:200]!r}")
                n = message.get("nfds", 0)
                if n:
                    if not isinstance(n, int) or n > len(self.fds):
                        raise ValueError("a message announced descriptors that did not arrive")
                    message["_fds"], self.fds = self.fds[:n], self.fds[n:]
                return message
            if len(self.buffer) > MAX_MESSAGE_BYTES:
                raise ValueError("oversized message")
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise ChannelTimeout()
            ready, _, _ = select.select([self.sock], [], [], remaining)
            if not ready:
                raise ChannelTimeout()
            try:
                chunk, fds, _, _ = socket.recv_fds(self.sock, 1 << 20, MAX_FDS)
            except (ConnectionResetError, OSError) as e:
                raise ChannelClosed() from e
            self.fds.extend(fds)
            if self.max_fds is not None and len(self.fds) > self.max_fds:
                n = len(self.fds)
                self.drop_fds()
                raise ValueError(f"{n} file descriptors arrived on the channel, which carries at most {self.max_fds}")
            if not chunk:
                raise ChannelClosed()
            self.buffer.extend(chunk)

    def drop_fds(self) -> None:
        """Close descriptors that arrived unclaimed (the judge never keeps what a runner sends)."""
        for fd in self.fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self.fds = []

    def close(self) -> None:
        self.drop_fds()
        try:
            self.sock.close()
        except OSError:
            pass


def socketpair() -> tuple[socket.socket, socket.socket]:
    """A connected pair; the second end is inheritable (handed to the runner at spawn)."""
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    b.set_inheritable(True)
    return a, b

