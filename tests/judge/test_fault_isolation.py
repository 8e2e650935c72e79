"""A fault costs its own job seconds and other jobs nothing (CPU backend, real runners and a real judge daemon):
compile and run are separate limits, the first call included; a compile segment holds no GPU share; a job whose
client went away is ended at once; bytes written ahead of a request are tampering."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from kernel_gym.eval.result import Outcome

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "sandbox"))
from test_pool import make_job  # noqa: E402

SPIN_FIRST_CALL = "while self.calls == 1:  # a kernel that never ends, in the very first call\n    pass"


@pytest.mark.timeout(120)
def test_a_first_call_that_never_ends_is_a_timeout_in_seconds(pool, relu_code):
    """With the default compile limit (300 s), a first call that spins is a timeout at the call limit (cpu:
    max(30 s, 1000x the reference)), not at the compile limit: the first call compiles only in compile segments."""
    job = make_job(relu_code(extra=SPIN_FIRST_CALL), compile_timeout_s=300.0, run_timeout_s=120.0)
    t0 = time.monotonic()
    result = pool.evaluate(job)
    elapsed = time.monotonic() - t0
    assert result.outcome is Outcome.TIMEOUT, result
    assert "for one call" in result.message, result.message
    assert elapsed < 35 + 10, elapsed  # the call limit, plus loading and the reference's calls


COMPILE_SEGMENT = textwrap.dedent("""
    if self.calls == 1:
        {how}
    """)


@pytest.mark.timeout(180)
def test_compiling_in_the_first_call_is_under_the_compile_budget_not_the_call_limit(pool, relu_code):
    """A first call that compiles for 8 s (a compile segment, as Triton's JIT, NVRTC and load_inline builds are)
    is correct under a 4 s call limit; the same 8 s spent running is a timeout. (4 s: a loaded 2-core machine's
    interpreted Triton calls need headroom.)"""
    compiling = relu_code(header="import time\nfrom kernel_gym.harness import phases",
                          extra=COMPILE_SEGMENT.format(how="with phases.compiling():\n            time.sleep(8)"))
    result = pool.evaluate(make_job(compiling, call_timeout_s=4.0, checks="none"))
    assert result.outcome is Outcome.CORRECT, result
    assert result.stage_ms["compile_segments"] >= 8000, result.stage_ms
    running = relu_code(header="import time", extra=COMPILE_SEGMENT.format(how="time.sleep(8)"))
    result = pool.evaluate(make_job(running, call_timeout_s=4.0, checks="none"))
    assert result.outcome is Outcome.TIMEOUT, result
    assert "compiling not counted" in result.message, result.message


@pytest.mark.timeout(180)
def test_the_compile_budget_bounds_a_compile_segment(pool, relu_code):
    """A segment past the job's compile budget is a timeout that names the budget."""
    compiling = relu_code(header="import time\nfrom kernel_gym.harness import phases",
                          extra=COMPILE_SEGMENT.format(how="with phases.compiling():\n            time.sleep(600)"))
    t0 = time.monotonic()
    result = pool.evaluate(make_job(compiling, compile_timeout_s=5.0, checks="none"))
    assert result.outcome is Outcome.TIMEOUT, result
    assert "compile budget" in result.message, result.message
    assert time.monotonic() - t0 < 40


@pytest.fixture
def gpu_lock(tmp_path, monkeypatch):
    """The GPU lock's files as on a GPU machine (on cpu there is no lock): (lock, gate)."""
    from kernel_gym.judge import gpu_lock

    paths = (tmp_path / "gpu.lock", tmp_path / "gpu.gate")
    monkeypatch.setattr(gpu_lock, "_lock_paths", lambda device: paths)
    return paths


def test_a_compile_segment_holds_no_gpu_share(gpu_lock):
    """A job that holds its GPU share and starts compiling lets go: a timer takes the whole GPU at once; the job
    takes its share back after the timer, and that wait moves its run limit (counts against nothing)."""
    import torch

    from kernel_gym.judge.budget import Budget
    from kernel_gym.judge.gpu_lock import SharedHold, device_lock

    budget = Budget(compile_left_s=300.0, run_deadline=time.monotonic() + 100)
    budget.hold = SharedHold(torch.device("cpu"))
    budget.hold.take()
    timer_waited: list[float] = []

    def timer() -> None:
        with device_lock(torch.device("cuda"), exclusive=True, timeout_s=10.0) as wait:
            timer_waited.append(wait.seconds if wait.acquired else float("inf"))
            time.sleep(0.5)  # timing

    budget.begin_compile()
    thread = threading.Thread(target=timer)
    thread.start()
    time.sleep(0.2)
    deadline_before = budget.run_deadline
    budget.end_compile()  # waits for the timer
    thread.join()
    assert timer_waited and timer_waited[0] < 0.2, timer_waited
    assert budget.hold.held
    assert budget.share_wait_ms >= 200, budget.share_wait_ms
    assert budget.run_deadline >= deadline_before + 0.2
    budget.hold.let_go()


def test_a_timer_waits_for_a_share_held_through_a_call(gpu_lock):
    """The counterpart (what the exclusivity still guarantees): a share held while running keeps a timer out."""
    import torch

    from kernel_gym.judge.gpu_lock import SharedHold, device_lock

    hold = SharedHold(torch.device("cpu"))
    hold.take()
    with device_lock(torch.device("cuda"), exclusive=True, timeout_s=0.3) as wait:
        assert not wait.acquired
    hold.let_go()


def test_bytes_ahead_of_a_request_are_tampering():
    """A reply written before its request exists (queued by a process the solution left behind) is refused
    before the request is sent; request ids are nonces, never the next number of a counter."""
    from kernel_gym.judge.runners import RunnerProcess
    from kernel_gym.sandbox.channel import Channel

    ours, theirs = socket.socketpair()
    runner = RunnerProcess.__new__(RunnerProcess)
    runner.channel = Channel(ours)
    runner._nothing_pending()  # nothing there: fine
    theirs.sendall(json.dumps({"id": 2, "launches": 1}).encode() + b"\n")
    time.sleep(0.05)
    with pytest.raises(ValueError, match="before the judge's request"):
        runner._nothing_pending()
    ours.close()
    theirs.close()


@pytest.fixture
def judge_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNEL_GYM_JUDGE_DIR", str(tmp_path / "judges"))
    yield tmp_path / "judges"
    from kernel_gym.judge.client import socket_path, stop_judge

    stop_judge(socket_path("cpu"))


CLIENT = textwrap.dedent("""
    import sys
    sys.path.insert(0, {root!r})
    from kernel_gym.eval.job import EvalConfig, job_for
    from kernel_gym.judge.client import JudgeClient
    from kernel_gym.tasks import load_task
    client = JudgeClient.for_device("cpu", slots=1)
    job = job_for(load_task("level1/relu"), sys.argv[1], backend="triton",
                  config=EvalConfig(device="cpu", call_timeout_s=600, compile_timeout_s=600, run_timeout_s=600))
    print("SUBMITTED", flush=True)
    client.evaluate_many([job])
""")


@pytest.mark.timeout(240)
def test_a_client_killed_mid_hang_leaves_no_running_job(judge_dir, relu_code):
    """A client that goes away while its job hangs (limits of 600 s): the judge kills the job's runner at once,
    and its status shows nothing running within seconds."""
    from kernel_gym.judge.client import JudgeClient, ensure_judge

    ensure_judge("cpu", slots=1)
    client = subprocess.Popen([sys.executable, "-c", CLIENT.format(root=str(ROOT)), relu_code(extra=SPIN_FIRST_CALL)],
                              stdout=subprocess.PIPE, text=True)
    assert client.stdout.readline().strip() == "SUBMITTED"
    status_client = JudgeClient.for_device("cpu")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # until its first call has spun for a while
        jobs = status_client.status()["running_jobs"]
        if jobs and jobs[0]["age_s"] > 8:
            break
        time.sleep(0.5)
    assert jobs and jobs[0]["limit_s"] >= 600, jobs
    client.kill()
    client.wait()
    t0 = time.monotonic()
    status = status_client.status()
    while status["running"] and time.monotonic() - t0 < 30:
        time.sleep(0.2)
        status = status_client.status()
    elapsed = time.monotonic() - t0
    status_client.close()
    assert status["running"] == 0 and not status["running_jobs"], status
    assert status["cancelled"] == 1, status
    assert elapsed < 10, elapsed


@pytest.mark.timeout(240)
def test_a_reference_runner_another_process_changed_is_replaced(solution):
    """The judge checks its reference runner before every job (judge/ref_guard.py): one whose nice value another
    process raised (as SCHED_DEADLINE or setpriority from a candidate did) never times another job."""
    import os

    from kernel_gym.judge.pool import WorkerPool

    pool = WorkerPool("cpu", 1)
    try:
        first = pool.evaluate(make_job(solution("level1/relu")))
        assert first.outcome is Outcome.CORRECT, first
        ref_pid = pool._all[0].ref.pid
        again = pool.evaluate(make_job(solution("level1/relu")))
        assert again.outcome is Outcome.CORRECT and pool._all[0].ref.pid == ref_pid  # untouched: kept
        os.setpriority(os.PRIO_PROCESS, ref_pid, 15)
        after = pool.evaluate(make_job(solution("level1/relu")))
        assert after.outcome is Outcome.CORRECT, after
        assert pool._all[0].ref.pid != ref_pid
    finally:
        pool.close()


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def _becomes(pid: int, stopped: bool, timeout_s: float = 5.0) -> bool:
    """Whether the process is (or within `timeout_s` becomes) stopped, or not stopped (signals land asynchronously:
    a busy machine may not have scheduled it yet)."""
    deadline = time.monotonic() + timeout_s
    while (_state(pid) == "T") != stopped:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


@pytest.mark.timeout(240)
def test_other_candidate_runners_are_stopped_while_a_job_is_timed():
    """During one job's timing every other candidate runner of the judge is stopped (no GPU work of theirs, a
    forged compile segment's or an import's, runs beside the timed calls), and continued after."""
    from kernel_gym.judge.pool import WorkerPool
    from kernel_gym.judge.runners import others_stopped

    pool = WorkerPool("cpu", 2)
    try:
        pool.warm_up()
        mine, other = pool._all
        with others_stopped(keep=(mine.cand, mine.ref)):
            assert _becomes(other.cand.pid, stopped=True)
            assert _state(mine.cand.pid) != "T" and _state(other.ref.pid) != "T"  # (references: trusted)
            time.sleep(0.3)
        assert _becomes(other.cand.pid, stopped=False)
        assert other.cand.stopped_s >= 0.3 and mine.cand.stopped_s == 0.0
    finally:
        pool.close()


def _stop(runner, seconds: float) -> None:
    """As others_stopped does to `runner`: a stop begins, lasts `seconds`, ends and is added up."""
    from kernel_gym.judge.runners import _STOP_LOCK

    with _STOP_LOCK:
        runner.stopped_since = since = time.monotonic()
    time.sleep(seconds)
    with _STOP_LOCK:
        runner.stopped_s, runner.stopped_since = runner.stopped_s + time.monotonic() - since, None


@pytest.mark.parametrize("stop_s,answer_s", [(0.3, 0.2), (1.0, 0.1)], ids=["ended-before", "in-progress-at"])
def test_time_stopped_is_not_counted_against_a_request(stop_s, answer_s):
    """A reply that comes after the request's limit (0.5 s), because the runner was stopped meanwhile, is still in
    time: a stop that ended before the deadline, and one still in progress when the deadline passed (another job's
    timing outlasted the request's time left; it used to be a timeout before the stop was added up)."""
    from kernel_gym.judge.runners import RunnerProcess
    from kernel_gym.sandbox.channel import Channel

    ours, theirs = socket.socketpair()
    runner = RunnerProcess.__new__(RunnerProcess)
    runner.channel, runner.stopped_s, runner.stopped_since = Channel(ours), 0.0, None

    def stopped_then_answers() -> None:
        time.sleep(0.1)
        _stop(runner, stop_s)
        time.sleep(answer_s)
        theirs.sendall(b'{"id": 1}\n')

    threading.Thread(target=stopped_then_answers).start()
    runner.call_until = limit = time.monotonic() + 0.5
    reply, deadline = runner._receive(limit)
    assert reply == {"id": 1}
    assert runner.call_until == deadline > limit  # (the call's deadline as other jobs' stall windows see it)
    ours.close()
    theirs.close()


@pytest.mark.timeout(300)
def test_a_call_stopped_longer_than_its_limit_by_another_jobs_timing_is_judged(pool, relu_code, runner_scratch):
    """A genuine job whose runner another job's timing stops (others_stopped) in the middle of a call, for longer
    than its call limit, is correct, not a timeout: the stop is never counted, the one in progress at the deadline
    included."""
    import concurrent.futures

    from kernel_gym.judge.runners import others_stopped

    marker = runner_scratch / "in_its_third_call"
    marker.unlink(missing_ok=True)
    slow = relu_code(header="import time", extra=f"""
        if self.calls == 3:
            open({str(marker)!r}, "w").close()
        time.sleep(0.5)""")  # every call takes 0.5 s
    job = make_job(slow, call_timeout_s=2.0, checks="none")
    with concurrent.futures.ThreadPoolExecutor(1) as ex:
        future = ex.submit(pool.evaluate, job)
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert time.monotonic() < deadline and not future.done(), future.result() if future.done() else None
            time.sleep(0.02)
        with others_stopped(keep=()):  # stopped 0.0-0.5 s into its third call, for twice the call limit
            time.sleep(4.0)
        result = future.result(timeout=120)
    assert result.outcome is Outcome.CORRECT, (result.outcome, result.message[:300])


@pytest.fixture
def locked_pool(monkeypatch, tmp_path):
    """Two judge slots on cpu with the GPU's lock protocol (KERNEL_GYM_CPU_LOCK=1): shared holds for checks,
    exclusive timing, compile segments letting go, other candidate runners stopped while one job is timed."""
    from kernel_gym.judge.pool import WorkerPool

    monkeypatch.setenv("KERNEL_GYM_CPU_LOCK", "1")
    monkeypatch.setenv("KERNEL_GYM_CACHE", str(tmp_path / "cache"))
    pool = WorkerPool("cpu", 2)
    pool.warm_up()
    yield pool
    pool.close()


@pytest.mark.timeout(300)
@pytest.mark.parametrize("when", ["self.calls == 1", "self.calls >= 12"])
def test_a_hang_beside_a_genuine_job_costs_it_at_most_the_hangs_limit(locked_pool, relu_code, solution, when):
    """A job that hangs (in its first call, or in the calls around timing) and a genuine job side by side under the
    lock protocol: the genuine one is correct and waits at most the hang's call limit (3 s here) on it."""
    import concurrent.futures

    alone_t0 = time.monotonic()
    alone = locked_pool.evaluate(make_job(solution("level1/relu")))
    alone_s = time.monotonic() - alone_t0
    assert alone.outcome is Outcome.CORRECT, alone
    hang = relu_code(extra=f"while {when}:\n    pass")
    with concurrent.futures.ThreadPoolExecutor(2) as ex:
        bad = ex.submit(locked_pool.evaluate, make_job(hang, call_timeout_s=3.0, checks="none"))
        time.sleep(0.5)
        t0 = time.monotonic()
        good = ex.submit(locked_pool.evaluate, make_job(solution("level1/relu")))
        good_result, good_s = good.result(timeout=240), None
        good_s = time.monotonic() - t0
        bad_result = bad.result(timeout=240)
    assert bad_result.outcome is Outcome.TIMEOUT, bad_result
    assert good_result.outcome is Outcome.CORRECT, good_result
    assert good_s < 2 * alone_s + 3.0 + 15.0, (good_s, alone_s, good_result.stage_ms)


def test_the_clocks_wait_for_a_timed_calls_end_is_bounded():
    """The judge never waits unboundedly for a runner's GPU work (judge/clock.py): its end event is polled until
    the call's deadline, so a kernel that never ends in a timed call costs that call's limit, not the judge."""
    from kernel_gym.judge.clock import _finished

    class Event:  # a torch.cuda.Event's query(): complete after `after` polls, or never
        def __init__(self, after: int | None):
            self.after, self.polls = after, 0

        def query(self) -> bool:
            self.polls += 1
            return self.after is not None and self.polls > self.after

    t0 = time.monotonic()
    assert not _finished(Event(None), time.monotonic() + 0.2)
    assert 0.2 <= time.monotonic() - t0 < 1.0
    assert _finished(Event(5), time.monotonic() + 5)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("forged", ["phases.TELL('run')",
                                    "with phases.compiling():\n            time.sleep(0.01)"])
def test_forged_segments_never_restart_the_call_limit(pool, relu_code, forged):
    """A solution that spins while telling the judge "run" (or opening and closing tiny compile segments) gains
    nothing: compiling is not counted, running is counted whole, so it is a timeout at the call limit."""
    spin = relu_code(header="import time\nfrom kernel_gym.harness import phases",
                     extra=f"while self.calls == 1:\n    {forged}\n    time.sleep(0.3)")
    t0 = time.monotonic()
    result = pool.evaluate(make_job(spin, call_timeout_s=2.0, checks="none"))
    assert result.outcome is Outcome.TIMEOUT, result
    assert time.monotonic() - t0 < 30


@pytest.mark.timeout(180)
@pytest.mark.parametrize("reason,fault", [("the watchdog: past its outer limit", True), ("its client went away", False)])
def test_a_job_ended_from_outside_is_no_verdict(pool, relu_code, reason, fault):
    """A running job the judge ends (its client left, or the watchdog: `Cancel`) has its runner killed at once and
    is an infrastructure failure that says why, never a verdict on the solution (a SIGKILL would read as oom). Only
    the watchdog's end is logged as a fault that may have stalled other jobs (a later timeout beside it is confirmed
    alone: judge/stalls.py); a job whose client left costs no one a rerun."""
    import concurrent.futures

    from kernel_gym.judge.faults import Cancel

    cancel = Cancel()
    job = make_job(relu_code(extra=SPIN_FIRST_CALL), call_timeout_s=120.0, run_timeout_s=120.0)
    with concurrent.futures.ThreadPoolExecutor(1) as ex:
        t_start = time.monotonic()
        future = ex.submit(pool.evaluate, job, cancel)
        time.sleep(8.0)  # inside its first call, spinning
        t0 = time.monotonic()
        cancel.cancel(reason, fault=fault)
        result = future.result(timeout=60)
    assert time.monotonic() - t0 < 10
    assert result.outcome is Outcome.CRASH and result.infra_failure, result
    assert reason in result.message
    assert bool(pool._stalls.beside(-1, t_start, time.monotonic())) is fault


@pytest.mark.timeout(300)
def test_a_lost_gpu_context_is_the_jobs_timeout_and_the_pools_end(monkeypatch, solution):
    """A timed call whose work never ends leaves the judge's GPU context waiting forever (measured on an H100:
    nothing releases it). That job's verdict is a timeout (its doing), not an infrastructure failure retried on
    the next judge; the pool says its GPU is unusable and refuses later jobs at once instead of hanging on them (the
    shared judge exits after sending the verdict). The lost context is simulated on cpu at the clock's raise."""
    from kernel_gym.errors import SandboxError
    from kernel_gym.judge import measure
    from kernel_gym.judge.clock import ContextStuck
    from kernel_gym.judge.pool import WorkerPool

    def stuck(jr, ctx, gate):
        raise ContextStuck("a timed call's work never ended")

    monkeypatch.setattr(measure, "measure", stuck)
    pool = WorkerPool("cpu", size=1)
    try:
        result = pool.evaluate(make_job(solution("level1/relu")))
        assert result.outcome is Outcome.TIMEOUT and not result.infra_failure, (result.outcome, result.message)
        assert "for one call" in result.message and result.worker_recycled, result.message
        assert pool.context_stuck and "GPU context" in pool.gpu_fault
        t0 = time.monotonic()
        with pytest.raises(SandboxError, match="not usable"):
            pool.evaluate(make_job(solution("level1/relu")))
        assert time.monotonic() - t0 < 5
    finally:
        pool.close()


STALLER = """
if self.calls == 1:  # holds the lock for as long as its runner lives (a kernel that stalls the GPU), then hangs
    try:
        lock = open({flag!r}, "w")
        fcntl.flock(lock, fcntl.LOCK_EX)
        lock.write("held")
        lock.flush()
    except OSError:  # (its confirmation, in a runner of another uid: the file is the first runner's)
        pass
    while True:
        time.sleep(0.05)
"""
STALLED = """
if self.calls == 1:  # genuine work that cannot go on while the other job's runner stalls it (the GPU, under a trap)
    while not os.path.exists({flag!r}) or open({flag!r}).read() != "held":
        time.sleep(0.05)
    with open({flag!r}) as lock:
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError:
                time.sleep(0.05)
"""


@pytest.mark.timeout(300)
@pytest.mark.parametrize("confirm", [True, False, "probe_ran"])
def test_a_timeout_beside_another_jobs_fault_is_confirmed_by_a_rerun(relu_code, runner_scratch, monkeypatch, confirm):
    """One job's fault can stall every other process on the GPU (a `__trap()` on an H100: genuine first calls timed
    out in the same second as the trap). Here a job holds a lock until its runner is killed at its call limit and a
    genuine job's first call cannot go on while it is held: both time out, the genuine one first (the staller has the
    longer limit, so the judge waits for the call it had in flight). The genuine job's timeout is confirmed by a rerun
    (beside the other jobs: judge/stalls.py) and it is correct; the staller times out again. Without the confirmation (`confirm=False`: the stall log sees nothing) the genuine job is scored a timeout."""
    from kernel_gym.judge import stalls
    from kernel_gym.judge.pool import WorkerPool

    if not confirm:
        monkeypatch.setattr(stalls.StallLog, "beside", lambda self, *args, **kwargs: 0)
    if confirm == "probe_ran":  # the stall probe (KERNEL_GYM_STALL_PROBE, cuda) said the GPU ran other work at the
        # staller's timeout: its fault is no reason to confirm another job's timeout (the wiring; whether a probe
        # sees a trap's stall is benchmarks/probe_stall.py's question on a GPU)
        from kernel_gym.judge import pool as pool_module

        monkeypatch.setattr(pool_module, "stall_probe_on", lambda device: True)
        monkeypatch.setattr(pool_module, "gpu_stalled", lambda device: False)
    flag = str(runner_scratch / "stall.lock")
    Path(flag).unlink(missing_ok=True)
    header = "import fcntl\nimport os\nimport time"
    staller = make_job(relu_code(header=header, extra=STALLER.format(flag=flag)), call_timeout_s=12.0, checks="none")
    stalled = make_job(relu_code(header=header, extra=STALLED.format(flag=flag)), call_timeout_s=5.0, checks="none")
    pool = WorkerPool("cpu", size=2)
    results = {}
    try:
        pool.warm_up()
        first = threading.Thread(target=lambda: results.__setitem__("staller", pool.evaluate(staller)))
        first.start()
        deadline = time.monotonic() + 60
        while not (Path(flag).exists() and Path(flag).read_text() == "held") and time.monotonic() < deadline:
            time.sleep(0.05)
        results["stalled"] = pool.evaluate(stalled)
        first.join(120)
    finally:
        pool.close()
    assert results["staller"].outcome is Outcome.TIMEOUT, results["staller"]
    if confirm is True:
        assert results["stalled"].outcome is Outcome.CORRECT, results["stalled"]
        assert results["stalled"].stage_ms["timeout_reruns"] == 1, results["stalled"].stage_ms
        assert "alone_wait" not in results["stalled"].stage_ms  # (no drain: the rerun ran beside the other jobs)
    else:
        assert results["stalled"].outcome is Outcome.TIMEOUT, results["stalled"]


def test_a_kernels_first_load_is_a_compile_segment_and_later_launches_are_not(monkeypatch):
    """Triton's first load of a compiled kernel (its launcher, which some Triton versions build with the host C
    compiler, and its binary) is under the compile budget, not the call limit; a loaded kernel's launches (some
    versions call `_init_handles` at every launch) tell the judge nothing."""
    from kernel_gym.harness import phases

    told: list[str] = []
    monkeypatch.setattr(phases, "TELL", told.append)

    class Kernel:
        module = None

        def _init_handles(self):
            self.module = "loaded"

    init = phases.compiled(Kernel._init_handles, unless=phases._loaded)
    assert phases.compiled(init, unless=phases._loaded) is init  # (installed once)
    kernel = Kernel()
    init(kernel)
    assert told == ["compile", "run"] and kernel.module == "loaded"
    init(kernel)
    init(kernel)
    assert told == ["compile", "run"]
