"""A real uvicorn server on a free port, for the service tests (the job factory `cpu_job` is in tests/conftest.py)."""

from __future__ import annotations

import socket
import threading
import time

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def unused_url():
    """A URL on which nothing listens."""
    return f"http://127.0.0.1:{free_port()}"


@pytest.fixture(scope="session")
def live_service(evaluator):
    """`kernel-gym serve`'s app on a real uvicorn server (a thread), token "s3cret", over the shared evaluator."""
    pytest.importorskip("fastapi")
    import uvicorn

    from kernel_gym.service.app import create_app

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(evaluator, token="s3cret"), host="127.0.0.1", port=port,
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started, "uvicorn did not start"
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)
