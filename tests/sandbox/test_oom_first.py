"""A job that exhausts the machine's memory loses its own runner first: a candidate's runner has oom_score_adj 1000
(the kernel's out-of-memory killer picks it before the judge every env shares or another job's reference), set while
root so that, once it runs as its own uid, its solution cannot lower it."""

from __future__ import annotations

import os
import re

import pytest
from test_pool import make_job

LOWERS_ITS_SCORE = """
try:
    with open("/proc/self/oom_score_adj", "w") as _f:
        _f.write("0")
    _lowered = "lowered"
except OSError as _e:
    _lowered = type(_e).__name__
raise RuntimeError("<<<" + open("/proc/self/oom_score_adj").read().strip() + " " + _lowered + ">>>")
"""


@pytest.mark.timeout(300)
def test_a_candidates_runner_is_the_first_to_go_and_cannot_say_otherwise(pool, relu_code):
    result = pool.evaluate(make_job(LOWERS_ITS_SCORE + relu_code()))
    assert "oom_first" in result.isolation["pieces"], result.isolation
    score, lowered = re.search(r"<<<(-?\d+) (\w+)>>>", result.message).groups()
    if os.geteuid() != 0:
        assert score in ("1000", "0"), result.message  # (set by the runner itself: its solution may lower it)
        pytest.skip("not root: a runner may lower its own score again")
    assert score == "1000" and lowered == "PermissionError", result.message[:300]
