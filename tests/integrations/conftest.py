"""One local Ray cluster for the whole session (CPU only, no dashboard), and helpers for evaluation jobs."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def ray_cluster():
    ray = pytest.importorskip("ray")
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, object_store_memory=128 * 2**20)
    yield ray
    if started:
        ray.shutdown()

