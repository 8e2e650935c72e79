"""The judge's clients: a connection (replies written whole, one at a time), a client's request, a running job,
and the fair queue that serves clients round robin."""

from __future__ import annotations

import collections
import json
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from kernel_gym.judge.faults import Cancel


@dataclass
class Request:
    client: int
    rid: Any
    job: dict[str, Any]
    conn: Connection
    queued_at: float = field(default_factory=time.monotonic)


@dataclass
class Running:
    """A job on a slot: its client, when it started, its limit, and how to end it early."""

    client: int
    started: float
    limit_s: float
    cancel: Cancel = field(default_factory=Cancel)


class FairQueue:
    """Per-client FIFO queues served round robin: a client with many jobs waiting cannot starve one with few."""

    def __init__(self) -> None:
        self._queues: collections.OrderedDict[int, collections.deque[Request]] = collections.OrderedDict()
        self._cond = threading.Condition()
        self.closed = False

    def put(self, request: Request) -> None:
        with self._cond:
            self._queues.setdefault(request.client, collections.deque()).append(request)
            self._cond.notify()

    def get(self) -> Request | None:
        with self._cond:
            while not self.closed and not any(self._queues.values()):
                self._cond.wait()
            if self.closed:
                return None
            for client in list(self._queues):
                q = self._queues[client]
                self._queues.move_to_end(client)  # the next pick starts after this client
                if q:
                    return q.popleft()
            return None

    def drop(self, client: int) -> int:
        """Forget a client's waiting jobs (it went away); returns how many."""
        with self._cond:
            q = self._queues.pop(client, None)
            return len(q) if q else 0

    def depth(self) -> dict[int, int]:
        with self._cond:
            return {c: len(q) for c, q in self._queues.items() if q}

    def close(self) -> None:
        with self._cond:
            self.closed = True
            self._cond.notify_all()


class Connection:
    """One client's socket: replies are written whole, one at a time."""

    def __init__(self, sock: socket.socket, client: int):
        self.sock, self.client = sock, client
        self.lock = threading.Lock()
        self.open = True

    def send(self, message: dict[str, Any]) -> None:
        data = (json.dumps(message) + "\n").encode()
        with self.lock:
            if not self.open:
                return
            try:
                self.sock.sendall(data)
            except OSError:
                self.open = False
