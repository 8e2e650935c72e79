"""The machine's judge shared by several clients (real processes, CPU backend): same verdicts as a lone client,
a hang costs other clients at most its limit, a killed client leaves nothing queued, no client starves."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

SOL = Path(__file__).resolve().parents[1] / "solutions"
ATTACKS = Path(__file__).resolve().parents[1] / "anti_hacking" / "attacks"
ROOT = Path(__file__).resolve().parents[2]

HANG_EXTRA = "while self.calls > 3:  # a hang from the fourth call on (past the first call's compile limit)\n    pass"

CLIENT = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, {root!r})
    from kernel_gym.eval.job import EvalConfig, job_for
    from kernel_gym.judge.client import JudgeClient
    from kernel_gym.tasks import load_task
    client = JudgeClient.for_device("cpu", slots={slots})
    codes = json.loads(sys.argv[1])
    jobs = [job_for(load_task("level1/relu"), c, backend="triton",
                    config=EvalConfig(device="cpu", call_timeout_s={call_timeout}, compile_timeout_s=120))
            for c in codes]
    print("SUBMITTED", flush=True)
    for r in client.evaluate_many(jobs):
        print(json.dumps({{"outcome": r.outcome.value, "hacks": list(r.hacks),
                          "wait_ms": r.stage_ms.get("judge_queue_wait")}}), flush=True)
""")


@pytest.fixture
def judge_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNEL_GYM_JUDGE_DIR", str(tmp_path / "judges"))
    yield tmp_path / "judges"
    from kernel_gym.judge.client import socket_path, stop_judge

    stop_judge(socket_path("cpu"))


def client_process(codes: list[str], slots: int = 1, call_timeout: float = 4.0) -> subprocess.Popen:
    script = CLIENT.format(root=str(ROOT), slots=slots, call_timeout=call_timeout)
    return subprocess.Popen([sys.executable, "-c", script, json.dumps(codes)], stdout=subprocess.PIPE, text=True,
                            env=dict(os.environ))


def results(proc: subprocess.Popen, timeout: float = 300) -> list[dict]:
    out, _ = proc.communicate(timeout=timeout)
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


@pytest.mark.timeout(600)
def test_clients_share_one_judge_with_lone_client_verdicts(judge_dir):
    from kernel_gym.judge.client import JudgeClient

    genuine = (SOL / "level1_relu.py").read_text()
    attack = (ATTACKS / "07_input_mutation.py").read_text()
    procs = [client_process([genuine, attack], slots=2) for _ in range(3)]
    answers = [results(p) for p in procs]
    for a in answers:
        assert [r["outcome"] for r in a] == ["correct", "rejected"], a
        assert a[1]["hacks"] == ["input_mutation"], a
    client = JudgeClient.for_device("cpu")
    status = client.status()
    client.close()
    assert status["done"] == 6 and status["queued"] == 0 and status["running"] == 0, status
    assert len(list(judge_dir.glob("judge-cpu-*.sock"))) == 1  # one judge served all three


@pytest.mark.timeout(600)
def test_an_idle_judge_gives_its_cached_memory_back_once(judge_dir, monkeypatch):
    """Clients that wait for their next action (an LLM generating) keep no GPU memory in the judge: once no job has
    run or waited for IDLE_RELEASE_S, the judge releases its cache, once per busy spell (on cpu the release itself
    is a no-op; tests/gpu/test_judge_gpu.py checks the memory on a GPU)."""
    from kernel_gym.judge.client import JudgeClient

    monkeypatch.setenv("KERNEL_GYM_JUDGE_IDLE_RELEASE_S", "0.5")
    client = JudgeClient.for_device("cpu")  # connected throughout: an idle client, not a gone one
    assert client.status()["idle_releases"] == 0
    assert [r["outcome"] for r in results(client_process([(SOL / "level1_relu.py").read_text()]))] == ["correct"]
    deadline = time.monotonic() + 10
    while client.status()["idle_releases"] == 0 and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(2.5)  # idle for longer still: nothing more to give back
    status = client.status()
    client.close()
    assert status["idle_releases"] == 1 and status["gpu_reserved_mb"] == 0.0, status
    assert status["spare_builders"] == 0  # no load_inline build asked for: none started ahead


@pytest.mark.timeout(600)
def test_an_alone_rerun_shows_in_the_judges_status(judge_dir, runner_scratch, oom_once):
    """An `oom` among other jobs is run again with the pool to itself: the judge's status (and /metrics) count the
    rerun and its wait, so a queue held up behind one is visible."""
    from kernel_gym.judge.client import JudgeClient

    genuine = (SOL / "level1_relu.py").read_text()
    slow = "import time\ntime.sleep(4)\n" + genuine
    answers = results(client_process([slow, oom_once(runner_scratch / "oom_once") + genuine], slots=2))
    assert [r["outcome"] for r in answers] == ["correct", "correct"], answers
    client = JudgeClient.for_device("cpu")
    status = client.status()
    client.close()
    assert status["alone_wait"]["n"] == 1 and status["alone_wait"]["max_s"] > 0.5, status
    assert status["alone_waiting"] == 0, status


@pytest.mark.timeout(600)
def test_a_hang_delays_another_client_by_at_most_its_limit(judge_dir, relu_code):
    """One slot: the hanging job runs first, the other client's waits behind it; the hang ends at its call limit
    (4 s here) plus the kill, not at the run limit."""
    from kernel_gym.judge.client import ensure_judge

    ensure_judge("cpu", slots=1)
    hang = client_process([relu_code(extra=HANG_EXTRA)], call_timeout=4.0)
    assert hang.stdout.readline().strip() == "SUBMITTED"
    time.sleep(1.0)
    t0 = time.monotonic()
    other = client_process([(SOL / "level1_relu.py").read_text()])
    (other_result,) = results(other)
    waited = time.monotonic() - t0
    (hang_result,) = results(hang)
    assert hang_result["outcome"] == "timeout", hang_result
    assert other_result["outcome"] == "correct", other_result
    assert other_result["wait_ms"] / 1e3 < 4.0 + 60, other_result  # its queue wait: the hang's limit + its checks
    assert waited < 150, waited


@pytest.mark.timeout(600)
def test_a_killed_client_leaves_no_queued_work(judge_dir, relu_code):
    from kernel_gym.judge.client import JudgeClient, ensure_judge

    ensure_judge("cpu", slots=1)
    genuine = (SOL / "level1_relu.py").read_text()
    busy = client_process([relu_code(extra=HANG_EXTRA)], call_timeout=6.0)  # holds the only slot for a while
    assert busy.stdout.readline().strip() == "SUBMITTED"
    time.sleep(1.0)
    doomed = client_process([genuine] * 4)
    assert doomed.stdout.readline().strip() == "SUBMITTED"
    time.sleep(1.0)
    doomed.send_signal(signal.SIGKILL)
    doomed.wait()
    results(busy)
    client = JudgeClient.for_device("cpu")
    deadline = time.monotonic() + 60
    status = client.status()
    while (status["queued"] or status["running"]) and time.monotonic() < deadline:
        time.sleep(0.5)
        status = client.status()
    client.close()
    assert status["queued"] == 0 and status["running"] == 0, status
    assert status["dropped"] >= 3, status  # at most one of the killed client's jobs had started
    assert status["done"] <= 2, status


def test_fair_queue_round_robin():
    from kernel_gym.judge.requests import FairQueue, Request

    q = FairQueue()
    conn = object()
    for i in range(5):
        q.put(Request(1, f"a{i}", {}, conn))
    q.put(Request(2, "b0", {}, conn))
    order = [q.get().rid for _ in range(6)]
    assert order.index("b0") <= 1, order  # the second client's one job is not behind the first's five
    assert q.drop(1) == 0 and q.depth() == {}


def test_cli_status_and_stop(judge_dir):
    from kernel_gym.cli import main

    assert main(["judge", "status", "--device", "cpu"]) == 0
    assert main(["judge", "start", "--device", "cpu", "--slots", "1"]) == 0
    assert main(["judge", "stop", "--device", "cpu"]) == 0


@pytest.mark.timeout(300)
def test_warm_up_waits_for_the_judges_runners(judge_dir):
    """A client's warm_up returns once the judge's runners are ready (a benchmark or a trainer that warms up first
    does not pay runner start-up inside its first evaluations)."""
    from kernel_gym.judge.client import JudgeClient

    client = JudgeClient.for_device("cpu", slots=2)
    try:
        client.warm_up()
        status = client.status()
        assert status["ready_slots"] == status["slots"] == 2, status
    finally:
        client.close()


@pytest.mark.timeout(300)
def test_a_judge_whose_clients_were_killed_exits_after_its_idle_limit(judge_dir, monkeypatch):
    """A client killed outright (a `timeout` around a test run, an OOM-killed trainer) never says goodbye: the judge
    it started exits `KERNEL_GYM_JUDGE_IDLE_EXIT_S` after its last connection closed, and its runners go with it."""
    monkeypatch.setenv("KERNEL_GYM_JUDGE_IDLE_EXIT_S", "3")
    script = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(ROOT)!r})
        from kernel_gym.judge.client import JudgeClient
        client = JudgeClient.for_device("cpu")
        print(client.status()["pid"], flush=True)
        time.sleep(600)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=dict(os.environ))
    judge_pid = int(proc.stdout.readline())
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and Path(f"/proc/{judge_pid}").exists() and \
            "zombie" not in _state(judge_pid):
        time.sleep(0.5)
    assert not Path(f"/proc/{judge_pid}").exists() or "zombie" in _state(judge_pid), "the judge outlived its limit"
    assert not list(judge_dir.glob("judge-cpu-*.sock"))


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/status").read_text().split("State:")[1].split("\n")[0].lower()
    except (OSError, IndexError):
        return "zombie"


@pytest.mark.timeout(300)
def test_a_job_the_judge_fails_on_is_an_infrastructure_crash(judge_dir):
    """The judge's own failure on a job (here a job it cannot read) is answered, as a `crash` marked
    `infra_failure`: the client is not left waiting, and a trainer can tell it from a verdict on the kernel."""
    from kernel_gym.eval.result import EvalResult, Outcome
    from kernel_gym.judge.client import JudgeClient

    client = JudgeClient.for_device("cpu")
    try:
        answer = client.request({"op": "evaluate", "job": {"task_id": 7}})
    finally:
        client.close()
    result = EvalResult.from_dict(answer["result"])
    assert result.outcome is Outcome.CRASH and result.infra_failure, result
    assert result.message.startswith("the judge failed on this job")


@pytest.mark.timeout(300)
def test_a_judge_out_of_file_descriptors_serves_on(judge_dir):
    """A failed accept (here: the judge's descriptors run out while connections flood in) is logged and counted;
    the judge goes on serving, since every job it runs would be lost with it."""
    import resource
    import socket

    from kernel_gym.judge.client import JudgeClient
    from kernel_gym.paths import unix_address

    client = JudgeClient.for_device("cpu")
    try:
        pid = client.status()["pid"]
        soft, hard = resource.prlimit(pid, resource.RLIMIT_NOFILE)
        used = {int(fd) for fd in os.listdir(f"/proc/{pid}/fd")}
        lowest_free = min(set(range(len(used) + 1)) - used)
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (lowest_free, hard))  # (no new descriptor can be opened)
        flood = []
        try:
            for _ in range(5):  # (queued by the kernel in the listener's backlog; the judge cannot accept them)
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                with unix_address(client.path) as address:
                    s.connect(address)
                flood.append(s)
            time.sleep(2.5)
        finally:
            for s in flood:
                s.close()
            resource.prlimit(pid, resource.RLIMIT_NOFILE, (soft, hard))
        time.sleep(1.0)
        status = client.status()
        assert status.get("pid") == pid, status  # the same judge answers
        assert status["accept_failures"] >= 1, status
        assert client.evaluate(_relu_job()).outcome.value == "correct"
    finally:
        client.close()


def _relu_job(code: str | None = None, **config):
    """A job of level1/relu on cpu: `code`, else the genuine solution."""
    from kernel_gym.eval.job import EvalConfig, job_for
    from kernel_gym.tasks import load_task

    code = (SOL / "level1_relu.py").read_text() if code is None else code
    return job_for(load_task("level1/relu"), code, backend="triton",
                   config=EvalConfig(device="cpu", compile_timeout_s=120, **config))


TRUNCATES_ARENAS = """
import os
import threading
import time


def _truncate_arenas():
    end = time.monotonic() + 0.5
    while time.monotonic() < end:  # (again and again: the judge reads the outputs some time after the reply)
        for fd in range(3, 1024):
            try:
                if "memfd:" in os.readlink(f"/proc/self/fd/{fd}"):
                    os.ftruncate(fd, 0)
            except OSError:
                pass
        time.sleep(0.001)
"""


@pytest.mark.timeout(300)
def test_a_runner_cannot_truncate_the_judges_shared_memory(judge_dir, relu_code):
    """A candidate truncates the shared-memory arenas its runner maps (Python's mmap keeps a descriptor of each)
    while the judge reads its outputs: a read past the end of a file is a SIGBUS, which ended the judge and every job
    it ran (the client's retry then ended the next one; measured before the fix), or the runner itself when its own
    copy of the outputs came later. The arenas' sizes are sealed: the same judge answers with a verdict on the
    solution, and judges the next job."""
    from kernel_gym.judge.client import JudgeClient

    client = JudgeClient.for_device("cpu")
    try:
        pid = client.status()["pid"]
        code = relu_code(header=TRUNCATES_ARENAS, extra="threading.Thread(target=_truncate_arenas, daemon=True).start()")
        attack = client.evaluate(_relu_job(code, checks="none"))
        assert not attack.infra_failure and "background_thread" in attack.hacks, (attack.outcome, attack.message)
        assert client.status().get("pid") == pid  # the same judge
        assert client.evaluate(_relu_job()).outcome.value == "correct"
    finally:
        client.close()


FLOODS_DESCRIPTORS = '''
import os
import socket
import stat
import time

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        null = os.open("/dev/null", os.O_RDONLY)
        for fd in range(3, 256):
            try:
                if not stat.S_ISSOCK(os.fstat(fd).st_mode):
                    continue
                channel = socket.socket(fileno=os.dup(fd))
                for _ in range(200):  # 3200 descriptors, and no newline: the judge waits for the rest of a message
                    socket.send_fds(channel, [b" "], [null] * 16)
            except OSError:
                pass
        time.sleep(5)
        return torch.relu(x)
'''


@pytest.mark.timeout(300)
def test_a_runner_cannot_flood_the_judge_with_descriptors(judge_dir):
    """A candidate sends descriptors over its runner's channel (each one a new descriptor in the judge) and holds the
    judge waiting for the rest of the message: the judge's descriptor table would fill, and no other job could get
    an arena nor any client a connection. A runner's channel takes none: the first is tampering, the runner is
    killed, and the judge holds no more descriptors than before."""
    import threading

    from kernel_gym.judge.client import JudgeClient

    client = JudgeClient.for_device("cpu")
    try:
        pid = client.status()["pid"]
        client.evaluate(_relu_job())  # (its runners started)
        before = len(os.listdir(f"/proc/{pid}/fd"))
        box: list = []
        job = _relu_job(FLOODS_DESCRIPTORS, checks="none")
        thread = threading.Thread(target=lambda: box.append(client.evaluate(job)))
        thread.start()
        most = before
        while thread.is_alive():
            most = max(most, len(os.listdir(f"/proc/{pid}/fd")))
            time.sleep(0.02)
        attack = box[0]
        assert most < before + 100, (before, most)
        assert not attack.correct and not attack.infra_failure, (attack.outcome, attack.message[:300])
        assert "descriptors" in attack.message, attack.message[:300]
        assert client.status().get("pid") == pid
        assert client.evaluate(_relu_job()).outcome.value == "correct"
    finally:
        client.close()
