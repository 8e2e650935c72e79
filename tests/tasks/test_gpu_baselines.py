"""On the GPU: every suite task's reference takes over 0.1 ms at full size (fp32, TF32 off).

Run on an H200 with `pytest -m gpu tests/tasks/test_gpu_baselines.py`; `python -m kernel_gym.tasks.measure`
records the same numbers in tasks/manifest.json.
"""

import pytest

from kernel_gym.tasks import list_tasks, load_task
from kernel_gym.tasks.measure import MIN_MS, time_reference


@pytest.mark.gpu
@pytest.mark.timeout(300)
@pytest.mark.parametrize("task_id", list_tasks())
def test_reference_takes_over_a_tenth_of_a_millisecond(task_id):
    task = load_task(task_id)
    ms = time_reference(task.source, device="cuda", warmup=3, repeats=10)
    assert ms > MIN_MS, f"{task_id}: {ms:.4f} ms at full size"
    if task.metadata.get("full_alt"):
        alt_ms = time_reference(task.source, task.metadata["full_alt"], device="cuda", warmup=2, repeats=5)
        assert alt_ms > MIN_MS, f"{task_id}: {alt_ms:.4f} ms at full_alt size"
