"""No job fills the machine's disk. A runner (and what it starts) writes no file past $KERNEL_GYM_RUNNER_FILE_GB
(1 GiB by default; 10 MiB here), its log of the candidate's prints included: a write past it fails ("File too large":
Python ignores SIGXFSZ, so the write raises; a native writer is killed by the signal). And as root a runner's jobs
write only in a tmpfs of $KERNEL_GYM_RUNNER_DISK_GB (2 GiB by default; 20 MiB here) in a mount namespace of its own:
many smaller files end in "No space left on device", and nothing reaches the machine's disk. The job fails with that
message, and the next job is judged as usual. Its /dev/shm is a tmpfs of its own, too (`private_shm`): what other
processes keep there (the judge's CUDA IPC counters, another job's files) is out of its sight."""

from __future__ import annotations

import pytest
from test_pool import make_job

from kernel_gym.eval.result import Outcome

WRITES_A_BIG_FILE = """
with open("big.bin", "wb") as f:
    for _ in range(40):
        f.write(b"x" * (1 << 20))
"""
PRINTS_FOREVER = """
import sys
line = "x" * 4095 + "\\n"
for _ in range(10000):
    sys.stdout.write(line)
sys.stdout.flush()
"""


MANY_FILES = """
for i in range(10):
    with open(f"part_{i}.bin", "wb") as f:
        f.write(b"x" * (4 << 20))
"""
OUTSIDE_ITS_FOLDER = """
import os
with open(os.path.join(os.path.dirname(os.path.dirname(os.getcwd())), "planted.bin"), "wb") as f:
    f.write(b"x")
"""


@pytest.fixture
def small_file_pool(monkeypatch):
    from kernel_gym.judge.pool import WorkerPool

    monkeypatch.setenv("KERNEL_GYM_RUNNER_FILE_GB", str(10 / 1024))
    monkeypatch.setenv("KERNEL_GYM_RUNNER_DISK_GB", str(20 / 1024))
    pool = WorkerPool("cpu")
    yield pool
    pool.close()


@pytest.mark.timeout(300)
@pytest.mark.parametrize("extra", [WRITES_A_BIG_FILE, PRINTS_FOREVER], ids=["file", "log"])
def test_a_file_past_the_limit_ends_the_runner(small_file_pool, relu_code, solution, extra):
    result = small_file_pool.evaluate(make_job(relu_code(extra=extra)))
    assert not result.correct and "File too large" in result.message, (result.outcome, result.message[:300])
    assert small_file_pool.evaluate(make_job(solution("level1/relu"))).outcome is Outcome.CORRECT


@pytest.mark.timeout(300)
def test_many_files_past_the_jobs_space_fail_and_nothing_reaches_the_disk(small_file_pool, relu_code, solution):
    import os

    if os.geteuid() != 0:
        pytest.skip("the jobs' folder is a bounded tmpfs only as root (a mount namespace of the runner's own)")
    result = small_file_pool.evaluate(make_job(relu_code(extra=MANY_FILES)))
    assert not result.correct and "No space left on device" in result.message, (result.outcome, result.message[:300])
    assert "disk_quota" in result.isolation["pieces"], result.isolation
    assert small_file_pool.evaluate(make_job(solution("level1/relu"))).outcome is Outcome.CORRECT


@pytest.mark.timeout(300)
def test_a_job_writes_nothing_outside_its_folder(small_file_pool, relu_code):
    result = small_file_pool.evaluate(make_job(relu_code(extra=OUTSIDE_ITS_FOLDER)))
    assert not result.correct and "Permission denied" in result.message, (result.outcome, result.message[:300])


SEES_THE_MACHINES_SHM = """
import os
if os.path.exists({planted!r}):
    raise RuntimeError("saw a file of the machine's /dev/shm")
"""


@pytest.mark.timeout(300)
def test_a_runners_dev_shm_is_its_own(small_file_pool, relu_code, tmp_path):
    import os
    import uuid
    from pathlib import Path

    if os.geteuid() != 0:
        pytest.skip("a private /dev/shm needs a mount namespace of the runner's own (root)")
    planted = Path("/dev/shm") / f"kernel_gym_test_{uuid.uuid4().hex}"
    planted.write_bytes(b"another process's file")
    try:
        result = small_file_pool.evaluate(make_job(relu_code(extra=SEES_THE_MACHINES_SHM.format(planted=str(planted)))))
    finally:
        planted.unlink()
    assert result.outcome is Outcome.CORRECT, (result.outcome, result.message[:300])
    assert "private_shm" in result.isolation["pieces"], result.isolation
