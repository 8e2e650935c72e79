"""Messages between the env process and a worker: one JSON object per line over private pipes.

JSON, never pickle: the worker runs untrusted code, so nothing it sends may execute in the env process.
Every message from a worker about a job carries that job's nonce; anything else is treated as tampering.
"""

from __future__ import annotations

import json
import os
import select
import time
from typing import Any

MAX_MESSAGE_BYTES = 64 << 20


class ChannelClosed(Exception):
    """The other end closed the pipe (the worker died)."""


class ChannelTimeout(Exception):
    """No complete message arrived before the deadline."""


def send(fd: int, message: dict[str, Any]) -> None:
    data = (json.dumps(message, allow_nan=True) + "\n").encode()
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


class Reader:
    """Reads newline-delimited JSON from a file descriptor with deadlines."""

    def __init__(self, fd: int):
        self.fd = fd
        self.buffer = bytearray()

    def receive(self, deadline: float | None) -> dict[str, Any]:
        """The next message; deadline is a time.monotonic() value, None waits forever."""
        while True:
            newline = self.buffer.find(b"\n")
            if newline >= 0:
                line = bytes(self.buffer[:newline])
                del self.buffer[: newline + 1]
                try:
                    message = json.loads(line)
                except (json.JSONDecodeError, UnicodeDecodeError) as e:
                    raise ValueError(f"malformed message from worker: {line[:200]!r}") from e
                if not isinstance(message, dict):
                    raise ValueError(f"malformed message from worker: {line[:200]!r}")
                return message
            if len(self.buffer) > MAX_MESSAGE_BYTES:
                raise ValueError("worker sent an oversized message")
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise ChannelTimeout()
            ready, _, _ = select.select([self.fd], [], [], remaining)
            if not ready:
                raise ChannelTimeout()
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                raise ChannelClosed()
            self.buffer.extend(chunk)
