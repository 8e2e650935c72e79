"""A CPU evaluation job factory and a real uvicorn server on a free port, for the service tests."""

from __future__ import annotations

import socket
import threading
import time

import pytest


@pytest.fixture(scope="session")
def cpu_job():
    """cpu_job(code, **config) -> an EvalJob for level1/relu on the CPU backend."""
    from kernel_gym.eval.job import EvalConfig, EvalJob
    from kernel_gym.tasks import load_task

    task = load_task("level1/relu")

    def make(code: str, **config) -> EvalJob:
        config.setdefault("compile_timeout_s", 60)
        config.setdefault("run_timeout_s", 60)
        return EvalJob(task_id=task.id, task_source=task.source, code=code, backend="triton",
                       sizes=task.sizes_for("cpu"), alt_sizes=task.alt_sizes_for("cpu"),
                       config=EvalConfig(device="cpu", **config))

    return make


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
