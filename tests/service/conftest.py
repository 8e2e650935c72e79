"""A real uvicorn server on a free port, for the service tests (the job factory `cpu_job` is in tests/conftest.py)."""

from __future__ import annotations

import pytest
from serving import free_port, served


@pytest.fixture(scope="session")
def unused_url():
    """A URL on which nothing listens."""
    return f"http://127.0.0.1:{free_port()}"


@pytest.fixture(scope="session")
def live_service(evaluator):
    """`kernel-gym serve`'s app on a real uvicorn server (a thread), token "s3cret", over the shared evaluator."""
    pytest.importorskip("fastapi")
    from kernel_gym.service.app import create_app

    with served(create_app(evaluator, token="s3cret")) as url:
        yield url
