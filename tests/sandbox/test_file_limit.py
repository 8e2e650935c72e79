"""No job fills the machine's disk with one file: a runner (and what it starts) writes no file past
$KERNEL_GYM_RUNNER_FILE_GB (1 GiB by default; 10 MiB here), its log of the candidate's prints included. A write past
it fails ("File too large": Python ignores SIGXFSZ, so the write raises; a native writer is killed by the signal):
the job fails with that message, and the next job is judged as usual."""

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


@pytest.fixture
def small_file_pool(monkeypatch):
    from kernel_gym.judge.pool import WorkerPool

    monkeypatch.setenv("KERNEL_GYM_RUNNER_FILE_GB", str(10 / 1024))
    pool = WorkerPool("cpu")
    yield pool
    pool.close()


@pytest.mark.timeout(300)
@pytest.mark.parametrize("extra", [WRITES_A_BIG_FILE, PRINTS_FOREVER], ids=["file", "log"])
def test_a_file_past_the_limit_ends_the_runner(small_file_pool, relu_code, solution, extra):
    result = small_file_pool.evaluate(make_job(relu_code(extra=extra)))
    assert not result.correct and "File too large" in result.message, (result.outcome, result.message[:300])
    assert small_file_pool.evaluate(make_job(solution("level1/relu"))).outcome is Outcome.CORRECT
