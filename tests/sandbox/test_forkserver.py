"""Runners forked from the fork server (judge/spawner.py, runner/forkserver.py): the same runner as a fresh
interpreter (own folder, environment, session; exit statuses reported), started in a fraction of the time, and
a fresh interpreter again whenever the fork server is off, refuses or is gone."""

import ast
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from kernel_gym.judge import spawner
from kernel_gym.judge.runners import RunnerFailure, RunnerProcess

PROBE = """
import os, tempfile
raise RuntimeError("<" * 3 + repr((os.environ["HOME"], tempfile.gettempdir(), os.getcwd(), os.getsid(0) == os.getpid())) + ">" * 3)
"""


def probe(runner: RunnerProcess) -> tuple:
    """(the folder HOME and TMPDIR are in, the same for TMPDIR, the working directory, session leader): HOME and
    TMPDIR are the job's own folder, beneath the runner's jobs' folder (sandbox/limits.py, job_environment)."""
    deadline = time.monotonic() + 120
    runner.request("begin", deadline=deadline, stage="compile")
    reply = runner.request("load", deadline=deadline, stage="compile", kind="candidate", name="main", source=PROBE)
    message = reply["error"]["message"]
    home, tmp, cwd, leader = ast.literal_eval(re.search(r"<<<(.*?)>>>", message).group(1))
    assert os.path.basename(home).startswith("job_") and tmp == home, (home, tmp)
    return os.path.dirname(home), os.path.dirname(tmp), cwd, leader


@pytest.fixture
def forked(monkeypatch):
    monkeypatch.setenv("KERNEL_GYM_FORKSERVER", "1")
    yield
    spawner.stop_all()


@pytest.mark.timeout(300)
def test_a_forked_runner_has_its_own_folder_environment_and_session(forked):
    runners = [RunnerProcess("cpu") for _ in range(2)]
    try:
        for runner in runners:
            assert isinstance(runner.proc, spawner.ForkedProcess)
            home, tmp, cwd, leader = probe(runner)
            assert home == tmp == str(runner.root / "work") and leader  # (the jobs' folder: mount_ns.job_space)
            assert os.path.realpath(cwd).startswith(os.path.realpath(runner.root))
        assert runners[0].root != runners[1].root
    finally:
        for runner in runners:
            runner.stop()


@pytest.mark.timeout(300)
def test_a_fork_starts_in_a_fraction_of_a_fresh_start(forked, monkeypatch):
    RunnerProcess("cpu").stop()  # the fork server is up
    t0 = time.monotonic()
    runner = RunnerProcess("cpu")
    runner.wait_ready()
    forked_s = time.monotonic() - t0
    runner.stop()
    monkeypatch.setenv("KERNEL_GYM_FORKSERVER", "0")
    t0 = time.monotonic()
    fresh = RunnerProcess("cpu")
    fresh.wait_ready()
    fresh_s = time.monotonic() - t0
    assert not isinstance(fresh.proc, spawner.ForkedProcess)
    fresh.stop()
    print(f"ready after {forked_s:.2f} s forked, {fresh_s:.2f} s fresh")
    assert forked_s < fresh_s / 3


@pytest.mark.timeout(300)
def test_a_forked_runner_killed_by_a_signal_is_reported_as_such(forked):
    runner = RunnerProcess("cpu")
    try:
        runner.wait_ready()
        os.kill(runner.pid, signal.SIGSEGV)
        with pytest.raises(RunnerFailure) as failed:
            runner.request("begin", deadline=time.monotonic() + 30, stage="compile")
        assert failed.value.kind == "crash" and "SIGSEGV" in failed.value.message
    finally:
        runner.stop()


@pytest.mark.timeout(300)
def test_a_dead_fork_server_is_replaced(forked):
    first = RunnerProcess("cpu")
    first.wait_ready()
    server = first.proc.server
    os.kill(server.proc.pid, signal.SIGKILL)
    assert first.proc.wait(timeout=30) == -signal.SIGKILL  # its runners die with it, and read as killed
    first.stop()
    second = RunnerProcess("cpu")
    try:
        assert isinstance(second.proc, spawner.ForkedProcess) and second.proc.server is not server
        home, *_ = probe(second)
        assert home == str(second.root / "work")
    finally:
        second.stop()


@pytest.mark.timeout(300)
def test_a_refused_fork_starts_a_fresh_process(forked, monkeypatch):
    def refuse(*args, **kwargs):
        raise OSError("the fork server has 2 threads")

    monkeypatch.setattr(spawner.ForkServer, "spawn", refuse)
    runner = RunnerProcess("cpu")
    try:
        assert not isinstance(runner.proc, spawner.ForkedProcess)
        home, *_ = probe(runner)
        assert home == str(runner.root / "work")
    finally:
        runner.stop()


def test_on_for_cpu_runners_and_off_for_cuda_by_default(monkeypatch):
    monkeypatch.delenv("KERNEL_GYM_FORKSERVER", raising=False)
    assert spawner.enabled("cpu") and not spawner.enabled("cuda")
    monkeypatch.setenv("KERNEL_GYM_FORKSERVER", "0")
    assert not spawner.enabled("cpu")
    monkeypatch.setenv("KERNEL_GYM_FORKSERVER", "1")
    assert spawner.enabled("cuda")


@pytest.mark.timeout(300)
def test_a_job_whose_fork_server_died_is_a_harness_failure_not_a_verdict(forked, relu_code, runner_scratch, cpu_job):
    from kernel_gym.errors import SandboxError
    from kernel_gym.judge.pool import WorkerPool

    marker = runner_scratch / "forkserver.pid"
    code = relu_code(header="import os\nimport time", extra=f"""
        if self.calls == 2:
            with open({str(marker)!r}, "w") as f:
                f.write(str(os.getppid()))
            time.sleep(30)
        """)
    pool = WorkerPool(device="cpu", size=1)
    try:
        box: list = []

        def evaluate():
            try:
                box.append(pool.evaluate(cpu_job(code)))
            except SandboxError as e:
                box.append(e)

        thread = threading.Thread(target=evaluate)
        thread.start()
        deadline = time.monotonic() + 120
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(int(marker.read_text()), signal.SIGKILL)  # the fork server (the runner's parent)
        thread.join(120)
        assert isinstance(box[0], SandboxError) and "fork server" in str(box[0]), box
        marker.unlink()
        fine = relu_code()
        assert pool.evaluate(cpu_job(fine)).outcome.value == "correct"  # a new fork server, new runners
    finally:
        pool.close()


@pytest.mark.timeout(300)
@pytest.mark.parametrize("fork", ["1", "0"])
def test_a_runner_started_from_a_thread_that_ends_keeps_running(monkeypatch, fork):
    """A child's parent-death signal fires when the thread that started it ends: every start goes through one
    long-lived thread, so a runner (or fork server) started from a job's thread outlives that thread."""
    monkeypatch.setenv("KERNEL_GYM_FORKSERVER", fork)
    spawner.stop_all()
    box: list = []
    thread = threading.Thread(target=lambda: box.append(RunnerProcess("cpu")) or box[0].wait_ready())
    thread.start()
    thread.join()
    runner = box[0]
    try:
        runner.wait_ready()
        time.sleep(1.0)
        assert runner.alive
        home, *_ = probe(runner)
        assert home == str(runner.root / "work")
    finally:
        runner.stop()
        spawner.stop_all()


def _start_in_child(queue) -> None:
    runner = RunnerProcess("cpu")
    try:
        queue.put(probe(runner)[0] == str(runner.root / "work"))
    finally:
        runner.stop()
        spawner.stop_all()


@pytest.mark.timeout(300)
@pytest.mark.parametrize("fork", ["1", "0"])
def test_a_process_forked_after_a_start_starts_its_own_runners(monkeypatch, fork):
    """A vector env's workers are forked from a process that may have started runners already: the starter thread
    and the fork servers are the parent's, and a forked worker must not wait on them."""
    import multiprocessing

    monkeypatch.setenv("KERNEL_GYM_FORKSERVER", fork)
    RunnerProcess("cpu").stop()  # the starter thread (and, forked, a fork server) exist in this process
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_start_in_child, args=(queue,))
    child.start()
    try:
        assert queue.get(timeout=240) is True
    finally:
        child.join(30)
        spawner.stop_all()


@pytest.mark.timeout(300)
def test_a_fork_server_that_never_gets_ready_is_not_waited_for_again(forked, monkeypatch):
    import sys

    real = spawner.popen

    def hanging_server(cmd, env, cwd, end):
        if "kernel_gym.runner.forkserver" in cmd:
            cmd = [sys.executable, "-c", "import time; time.sleep(120)"]
        return real(cmd, env, cwd, end)

    monkeypatch.setattr(spawner, "popen", hanging_server)
    monkeypatch.setattr(spawner, "START_TIMEOUT_S", 2.0)
    first = RunnerProcess("cpu")
    hung = next(iter(spawner._SERVERS.values()), None)
    try:
        assert not isinstance(first.proc, spawner.ForkedProcess)  # a fresh interpreter after the 2 s wait
        assert hung is None or not hung.alive  # closed, not left for the next start to wait on
        assert probe(first)[0] == str(first.root / "work")
    finally:
        first.stop()


@pytest.mark.parametrize("fork_safe", [True, False])
def test_the_fork_servers_preload_never_asks_the_cuda_driver(fork_safe):
    """On a GPU machine `torch.cuda.is_available()` initializes the CUDA driver, which starts a thread, and the fork
    server refuses to fork a process with more than one (on an H100 the thread came from importing
    `torch.utils.cpp_extension`, which asks it to word a warning). The fork server's preload answers that one question
    without the driver and puts the function back; a runner's own preload (fork_safe=False) still asks it."""
    probe = textwrap.dedent(f"""
        import json, shutil, torch
        asked = []
        real = torch.cuda.is_available
        def counting():
            asked.append(1)
            return real()
        torch.cuda.is_available = counting
        from kernel_gym.runner.serve import preload
        preload(fork_safe={fork_safe})
        print(json.dumps({{"asked": len(asked), "restored": torch.cuda.is_available is counting,
                          "nvcc": shutil.which("nvcc") is not None}}))
    """)
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "CUDA_HOME": "/usr/local/cuda"})
    assert out.returncode == 0, out.stderr[-2000:]
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["restored"], seen
    assert seen["asked"] == (0 if fork_safe else 1), seen
