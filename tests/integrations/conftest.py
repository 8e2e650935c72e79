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
