"""Secrets in the environments of the machine's processes, and a candidate that goes looking for them.

A client (a trainer, an eval script) often holds API keys and tokens in its environment. Runners get an allowlisted
environment of their own (attack 17); what is left is `/proc/<pid>/environ` of the other processes of the same user,
which a candidate that escapes the static rules can open (Landlock's ptrace rule stops `/proc/<pid>/mem`, not
`environ`):
- the judge: started by a client, it keeps no variable named like a secret;
- the client processes themselves: a candidate's runner on cpu may read no other process's /proc files
  (`landlock_proc`; on cuda with KERNEL_GYM_CONFINE_PROC=1 until measured there), and a runner uid of its own
  (sandbox/uids.py: the default whenever the judge is root) stops it too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kernel_gym.sandbox.confine.landlock import landlock_abi

ROOT = Path(__file__).resolve().parents[2]
SECRET_NAME, SECRET = "KERNEL_GYM_TEST_API_KEY", "sk-test-0123456789abcdef"

# A client process that holds a secret in its environment (from its start, as an exported variable would be), starts
# the machine's cpu judge and has it evaluate one solution.
CLIENT = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, {root!r})
    from kernel_gym.eval.job import EvalConfig, job_for
    from kernel_gym.judge.client import JudgeClient
    from kernel_gym.tasks import load_task
    client = JudgeClient.for_device("cpu")
    code = open(sys.argv[1]).read()
    result = client.evaluate(job_for(load_task("level1/relu"), code, backend="triton",
                                     config=EvalConfig(device="cpu", checks="none")))
    print(json.dumps({{"outcome": result.outcome.value, "message": result.message[-1500:],
                      "judge_pid": client.status()["pid"]}}), flush=True)
""")

# A genuine ReLU (tests/conftest.py's template) that reads /proc/<pid>/environ of every process it can, and answers
# wrong when it finds the client's secret there (so the verdict tells whether it could).
SCAVENGER_HEADER = f"""import os


def _found():
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{{pid}}/environ", "rb") as f:
                    if {SECRET.encode()!r} in f.read():
                        return pid
            except OSError:
                pass
    return None
"""


@pytest.fixture
def judge_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNEL_GYM_JUDGE_DIR", str(tmp_path / "judges"))
    yield tmp_path / "judges"
    from kernel_gym.judge.client import socket_path, stop_judge

    stop_judge(socket_path("cpu"))


def _run_client(tmp_path: Path, relu_code) -> dict:
    code = tmp_path / "scavenger.py"
    code.write_text(relu_code(header=SCAVENGER_HEADER, ret="y + 1.0 if _found() else y"))
    env = {**os.environ, SECRET_NAME: SECRET}
    out = subprocess.run([sys.executable, "-c", CLIENT.format(root=str(ROOT)), str(code)], capture_output=True,
                         text=True, timeout=600, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _nothing_stops_it() -> bool:
    """Neither `landlock_proc` (no Landlock here, or turned off) nor a uid of the runners' own (sandbox/uids.py:
    dropped whenever the judge is root, unless KERNEL_GYM_RUNNER_UID=none; its preflight says whether it can)."""
    from kernel_gym.sandbox import isolation, uids

    landlock = landlock_abi() >= 1
    proc = landlock and os.environ.get("KERNEL_GYM_CONFINE_PROC") != "0"
    uid = os.geteuid() == 0 and uids.uid_setting() != "none" and isolation.preflight().get("uid") not in (0, None)
    return not proc and not uid


@pytest.mark.timeout(600)
def test_the_judge_keeps_no_secret_of_the_client_that_started_it(judge_dir, tmp_path, relu_code):
    """The judge starts with its client's environment less every variable named like a secret: its
    /proc/<pid>/environ, the one process every runner can find (its parent or grandparent), holds none."""
    answer = _run_client(tmp_path, relu_code)
    environ = Path(f"/proc/{answer['judge_pid']}/environ").read_bytes()
    assert SECRET.encode() not in environ and SECRET_NAME.encode() not in environ
    assert b"KERNEL_GYM_JUDGE_DIR=" in environ  # the rest of the client's environment is kept


class SecretRead(AssertionError):
    """The candidate found the client's secret (its answer was off by one on purpose)."""


@pytest.mark.timeout(600)
@pytest.mark.xfail(condition=_nothing_stops_it(), strict=True, raises=SecretRead,
                   reason="no Landlock and no runner uid of its own here: a runner reads its client's "
                          "/proc/<pid>/environ")
def test_a_candidate_cannot_read_a_clients_secret_from_proc(judge_dir, tmp_path, relu_code):
    """The client's secret stays out of reach of a cpu runner (`landlock_proc`). Without it (KERNEL_GYM_CONFINE_PROC=0)
    the same candidate reads it: the test is then an expected failure, by SecretRead only."""
    answer = _run_client(tmp_path, relu_code)
    if answer["outcome"] == "mismatch":
        raise SecretRead(f"a candidate read the client's secret from /proc: {answer}")
    assert answer["outcome"] == "correct", answer  # anything else: the test itself is broken, not the gap
