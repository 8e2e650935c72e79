"""The judge talks only to its clients (judge/peers.py): every connection's peer is read with SO_PEERCRED and refused
when its uid is not the judge's or when it is one of the judge's own descendants (its runners and what they start).

The attack (issue 36, main 98d8a73): a candidate's forward() connected to the shared judge's socket and submitted a
job; the judge loaded that job's task source, i.e. ran the candidate's code in the judge. Two defenses stop it now,
each tested alone: seccomp gives a runner no new unix socket (sandbox/confine/seccomp.py), and the judge refuses its own
descendants (the second test lifts the seccomp rule in the judge's runners, through a `sitecustomize` on their
PYTHONPATH, so that only the peer check stands between the candidate and the judge).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from kernel_gym.judge import peers

SOL = Path(__file__).resolve().parents[1] / "solutions"


# ---- the helper on its own ---------------------------------------------------------------------------------------

def test_refusal_rules():
    me, uid = os.getpid(), os.geteuid()
    child = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time; "
                              "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
                              "print(p.pid, flush=True); time.sleep(60)"], stdout=subprocess.PIPE, text=True)
    try:
        grandchild = int(child.stdout.readline())
        assert "not the judge's" in peers.refusal(child.pid, uid + 1, me, uid)
        assert "one of the judge's own processes" in peers.refusal(child.pid, uid, me, uid)
        assert "one of the judge's own processes" in peers.refusal(grandchild, uid, me, uid)
        assert peers.refusal(me, uid, child.pid, uid) is None  # the judge's parent (a client) is no descendant
        assert peers.refusal(me, uid, me, uid) is None  # the judge itself
        assert "cannot be identified" in peers.refusal(0, uid, me, uid)
        assert peers.is_descendant(grandchild, child.pid) is True and peers.is_descendant(child.pid, grandchild) is False
    finally:
        child.kill()
        child.wait()
    assert "cannot be traced" in peers.refusal(child.pid, uid, me, uid)  # gone


CONNECTOR = textwrap.dedent("""
    import json, socket, sys
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[1])
    try:
        s.sendall(b'{"op": "status", "id": 1}\\n')
    except BrokenPipeError:  # (hung up on already: its answer is still there to read)
        pass
    print(json.dumps(s.makefile().readline().strip()))
""")


def test_the_gate_refuses_a_descendant_on_a_real_connection(tmp_path):
    """A child of the 'judge' (this test process) connects: it hears why and is hung up on; the refusal is counted."""
    path = str(tmp_path / "j.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(4)
    gate = peers.PeerGate()
    client = subprocess.Popen([sys.executable, "-c", CONNECTOR, path], stdout=subprocess.PIPE, text=True)
    sock, _ = listener.accept()
    assert gate.admit(sock) is False
    line = json.loads(client.communicate(timeout=30)[0].strip().splitlines()[-1])
    assert json.loads(line)["error"].startswith("connection refused by the judge: process ")
    assert gate.refused == 1
    # the same connection to a judge it does not descend from (a gate for a sibling process) is served
    sibling = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        other = peers.PeerGate(judge_pid=sibling.pid)
        client = subprocess.Popen([sys.executable, "-c", CONNECTOR, path], stdout=subprocess.PIPE, text=True)
        sock, _ = listener.accept()
        why, (pid, uid, _) = other.check(sock)
        assert why is None and pid == client.pid and uid == os.geteuid()
        sock.close()
        client.communicate(timeout=30)
    finally:
        sibling.kill()
        sibling.wait()
        listener.close()


# ---- the attack through a real judge -----------------------------------------------------------------------------

# A genuine ReLU (tests/conftest.py's template) whose first call submits a job of its own to the judge's socket; the
# job's task source, if the judge ever loads it, writes a marker file from inside the judge.
INJECTOR_HEADER = '''import json, socket


def _inject(path, line, log):
    out = {}
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    except OSError as exc:
        out["socket"] = exc.errno
    else:
        try:
            s.settimeout(30)
            s.connect(path)
            try:
                s.sendall(line.encode())
            except BrokenPipeError:  # hung up on already: read why
                out["sent"] = False
            out["reply"] = s.makefile("rb").readline().decode()[:2000]
        except OSError as exc:
            out["connect"] = repr(exc)
        finally:
            s.close()
    with open(log, "a") as f:
        f.write(json.dumps(out) + "\\n")
'''

# Lifts the AF_UNIX rule of seccomp in every process that starts with it on its PYTHONPATH (the judge, its fork
# server and so its runners), when KERNEL_GYM_RUNNER_TEST_UNIX_SOCKETS=1 (a KERNEL_GYM_RUNNER_ variable reaches runners).
SITECUSTOMIZE = textwrap.dedent("""
    import os
    if os.environ.get("KERNEL_GYM_RUNNER_TEST_UNIX_SOCKETS") == "1":
        from kernel_gym.sandbox.confine import seccomp as _seccomp

        _program = _seccomp.seccomp_program

        def _lifted(*args, allow=(), **kwargs):
            return _program(*args, allow=[*allow, _seccomp.UNIX_SOCKETS], **kwargs)

        _seccomp.seccomp_program = _lifted
""")


@pytest.fixture
def short_judge_dir(monkeypatch):
    """A judge folder of this test's own, with a short path (a unix socket's path is at most 107 bytes)."""
    folder = Path(tempfile.mkdtemp(prefix="kgp_"))
    monkeypatch.setenv("KERNEL_GYM_JUDGE_DIR", str(folder))
    yield folder
    from kernel_gym.judge.client import socket_path, stop_judge

    stop_judge(socket_path("cpu"))
    import shutil

    shutil.rmtree(folder, ignore_errors=True)


def _attack(folder: Path, relu_code, runner_scratch: Path) -> tuple[dict, dict, Path]:
    from kernel_gym.eval.job import EvalConfig, job_for
    from kernel_gym.eval.result import Outcome
    from kernel_gym.judge.client import JudgeClient, socket_path
    from kernel_gym.tasks import load_task

    marker, log = folder / "ran_in_the_judge", runner_scratch / "inject.jsonl"
    log.unlink(missing_ok=True)
    config = EvalConfig(device="cpu", checks="none", compile_timeout_s=120, run_timeout_s=120)
    injected = job_for(load_task("level1/relu"), (SOL / "level1_relu.py").read_text(), backend="triton",
                       config=config).to_dict()
    injected["task_source"] = f"open({str(marker)!r}, 'w').write('task code ran in the judge')\n" + \
        injected["task_source"]
    line = json.dumps({"op": "evaluate", "id": 1, "job": injected}) + "\n"
    client = JudgeClient.for_device("cpu", slots=2)  # two slots: an injected job would run beside the attacker's
    try:
        path = socket_path("cpu")
        code = relu_code(header=INJECTOR_HEADER,
                         extra=f"if self.calls == 1:\n    _inject({str(path)!r}, {line!r}, {str(log)!r})")
        result = client.evaluate(job_for(load_task("level1/relu"), code, backend="triton", config=config))
        assert result.outcome is Outcome.CORRECT, result.message
        deadline = time.monotonic() + 120
        status = client.status()
        while (status.get("running") or status.get("queued")) and time.monotonic() < deadline:
            time.sleep(0.5)
            status = client.status()
    finally:
        client.close()
    attempts = [json.loads(x) for x in log.read_text().splitlines()]
    assert attempts, "forward() never ran its attack"
    return attempts, status, marker  # (one per model built: the main shape's and the second shape's)


@pytest.mark.timeout(600)
def test_a_candidate_cannot_submit_a_job_to_the_judge(short_judge_dir, relu_code, runner_scratch):
    """Everything in force: the candidate gets no unix socket at all (EPERM); the judge ran one job, its client's."""
    attempts, status, marker = _attack(short_judge_dir, relu_code, runner_scratch)
    assert not marker.exists(), "the judge ran task code a runner sent"
    assert status["done"] == 1, status
    for attempt in attempts:
        assert attempt.get("socket") == 1 or "connection refused by the judge" in attempt.get("reply", ""), attempt


@pytest.mark.timeout(600)
def test_the_judge_refuses_its_own_runner_on_its_own(short_judge_dir, relu_code, runner_scratch, monkeypatch):
    """With seccomp's AF_UNIX rule lifted in the judge's runners and their uid the judge's, the candidate reaches the
    judge's socket: the judge reads its peer, finds one of its own descendants, answers with an error and hangs up,
    before any job is read."""
    site = short_judge_dir / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH")) if p))
    monkeypatch.setenv("KERNEL_GYM_RUNNER_TEST_UNIX_SOCKETS", "1")
    # and runners keep the judge's uid: no uid of their own (the socket's 0600 mode), no mount namespace (which hides
    # the judge's folders from a runner that dropped root)
    monkeypatch.setenv("KERNEL_GYM_RUNNER_UID", "none")
    attempts, status, marker = _attack(short_judge_dir, relu_code, runner_scratch)
    assert not marker.exists(), "the judge ran task code a runner sent"
    for attempt in attempts:
        assert "socket" not in attempt, f"the AF_UNIX rule was not lifted: {attempt}"
        assert "reply" in attempt, attempt
        reply = json.loads(attempt["reply"])
        assert reply["error"].startswith("connection refused by the judge: process "), reply
    assert status["done"] == 1 and status["refused_peers"] == len(attempts), status
