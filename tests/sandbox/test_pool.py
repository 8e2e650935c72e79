"""WorkerPool directly (no static checks): crashes, stray processes, temp dirs, and a scrubbed environment."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kernel_gym.errors import SandboxError
from kernel_gym.eval.job import EvalConfig, EvalJob
from kernel_gym.eval.result import Outcome
from kernel_gym.judge.pool import WorkerPool
from kernel_gym.tasks import load_task


def make_job(code: str, **config) -> EvalJob:
    task = load_task("level1/relu")
    config.setdefault("compile_timeout_s", 60)
    config.setdefault("run_timeout_s", 60)
    return EvalJob(
        task_id=task.id,
        task_source=task.source,
        code=code,
        backend="triton",
        sizes=task.sizes_for("cpu"),
        alt_sizes=task.alt_sizes_for("cpu"),
        config=EvalConfig(device="cpu", **config),
    )


def process_state(pid: int) -> str | None:
    """The /proc state letter of a process (Z = zombie), or None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[0]


def live_processes_with_argv(argv: list[str]) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")[:-1]
        except OSError:
            continue
        if [c.decode(errors="replace") for c in cmdline] == argv and process_state(int(entry.name)) not in (None, "Z"):
            found.append(int(entry.name))
    return found


@pytest.mark.timeout(120)
def test_a_job_after_a_crash_works(pool, relu_code, solution):
    crashed = pool.evaluate(make_job(relu_code(header="import ctypes", extra="ctypes.string_at(0)")))
    assert crashed.outcome is Outcome.CRASH and crashed.worker_recycled
    assert "SIGSEGV" in crashed.message
    after = pool.evaluate(make_job(solution("level1/relu")))
    assert after.outcome is Outcome.CORRECT and after.timing is not None
    assert not after.worker_recycled


@pytest.mark.timeout(120)
def test_processes_spawned_by_a_candidate_are_killed(pool, relu_code, runner_scratch):
    pid_file = runner_scratch / "pids.json"
    child_argv = ["sleep", "987.654321"]
    orphan_argv = ["sleep", "987.123456"]
    extra = f"""
        if self.calls == 1:
            child = subprocess.Popen({child_argv!r}, start_new_session=True)
            # a grandchild whose parent exits at once: it is re-parented to the worker (the subreaper)
            subprocess.run(["sh", "-c", "sleep {orphan_argv[1]} >/dev/null 2>&1 &"], check=True)
            with open({str(pid_file)!r}, "w") as f:
                json.dump({{"child": child.pid}}, f)
    """
    result = pool.evaluate(make_job(relu_code(header="import json\nimport subprocess", extra=extra)))
    assert result.outcome is Outcome.CORRECT, result.message
    assert not result.worker_recycled  # stray processes are killed; the worker itself stays
    child = json.loads(pid_file.read_text())["child"]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (
        process_state(child) not in (None, "Z") or live_processes_with_argv(orphan_argv)
    ):
        time.sleep(0.1)
    assert process_state(child) in (None, "Z"), "the candidate's child survived the job"
    assert live_processes_with_argv(child_argv) == []
    assert live_processes_with_argv(orphan_argv) == [], "the candidate's orphaned grandchild survived the job"


@pytest.mark.timeout(120)
def test_processes_of_a_job_whose_runner_is_killed_are_killed(pool, relu_code, runner_scratch, solution):
    """A candidate that starts a process in a session of its own and then hangs: the judge kills the runner at the
    call limit, and the process, in no process group of the runner's, must die with it (the judge kills the runner's
    descendants first). (A runner that ends itself first, os._exit, leaves its orphans to its parent: not covered.)"""
    pid_file = runner_scratch / "detached.json"
    argv = ["sleep", "987.246813"]
    extra = f"""
        if self.calls == 2:
            child = subprocess.Popen({argv!r}, start_new_session=True)
            with open({str(pid_file)!r}, "w") as f:
                json.dump({{"child": child.pid}}, f)
            while True:
                pass
    """
    code = relu_code(header="import json\nimport subprocess", extra=extra)
    result = pool.evaluate(make_job(code, checks="none", call_timeout_s=3))
    assert result.outcome is Outcome.TIMEOUT and result.worker_recycled, result.message
    child = json.loads(pid_file.read_text())["child"]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and process_state(child) not in (None, "Z"):
        time.sleep(0.1)
    assert process_state(child) in (None, "Z") and live_processes_with_argv(argv) == [], "the process survived"
    assert pool.evaluate(make_job(solution("level1/relu"))).outcome is Outcome.CORRECT


@pytest.mark.timeout(120)
def test_the_job_temp_dir_is_removed(pool, relu_code, runner_scratch, reusing_runners):
    """In a runner that serves another job, the job's folder goes at its end (a fresh runner per job: see below)."""
    report = runner_scratch / "cwd.txt"
    extra = f"""
        if self.calls == 1:
            with open("scratch.bin", "wb") as f:
                f.write(b"x" * 1000)
            with open({str(report)!r}, "w") as f:
                f.write(os.getcwd())
    """
    result = pool.evaluate(make_job(relu_code(header="import os", extra=extra)))
    assert result.outcome is Outcome.CORRECT, result.message
    workdir = Path(report.read_text())
    assert workdir.name.startswith("job_")
    assert not workdir.exists(), "the per-job directory was left behind"
    worker_root = workdir.parent
    assert worker_root.is_dir(), "the worker (and its root) should still be alive"
    assert list(worker_root.glob("job_*")) == []


def test_a_runner_used_once_goes_with_its_folder(pool, relu_code, runner_scratch):
    """A fresh runner per job (cpu's default): the replaced runner's whole folder goes, the job's with it."""
    report = runner_scratch / "cwd_once.txt"
    extra = f"""
        if self.calls == 1:
            with open({str(report)!r}, "w") as f:
                f.write(os.getcwd())
    """
    result = pool.evaluate(make_job(relu_code(header="import os", extra=extra)))
    assert result.outcome is Outcome.CORRECT, result.message
    worker_root = Path(report.read_text()).parent
    deadline = time.monotonic() + 30  # (removed by the judge's reaper thread, after the kill)
    while worker_root.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not worker_root.exists(), "the used runner's folder was left behind"


@pytest.mark.timeout(120)
def test_worker_environment_has_no_secrets(monkeypatch, relu_code, runner_scratch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-kernel-gym-test-secret")
    monkeypatch.setenv("HF_TOKEN", "hf_kernel_gym_test_secret")
    dump = runner_scratch / "env.json"
    extra = f"""
        if self.calls == 1:
            with open({str(dump)!r}, "w") as f:
                json.dump(dict(os.environ), f)
    """
    pool = WorkerPool("cpu", 1)
    try:
        result = pool.evaluate(make_job(relu_code(header="import json\nimport os", extra=extra)))
        assert result.outcome is Outcome.CORRECT, result.message
        seen = json.loads(dump.read_text())
        assert "OPENAI_API_KEY" not in seen and "HF_TOKEN" not in seen
        assert not any("test-secret" in v or "test_secret" in v for v in seen.values())
        assert seen["TRITON_INTERPRET"] == "1"  # what the worker needs does pass
        assert seen["HOME"] == seen["TMPDIR"] != os.environ.get("HOME")
    finally:
        pool.close()
    with pytest.raises(SandboxError, match="closed"):
        pool.evaluate(make_job(relu_code()))


@pytest.mark.timeout(120)
def test_crash_output_is_only_this_jobs_output(pool, relu_code):
    # the worker's output log is shared by its jobs: a crash report must not show an earlier candidate's prints
    earlier = pool.evaluate(make_job(relu_code(extra="print('EARLIER_JOB_OUTPUT')")))
    assert earlier.outcome is Outcome.CORRECT
    crashed = pool.evaluate(
        make_job(relu_code(header="import os", extra="print('THIS_JOB_OUTPUT', flush=True)\nos._exit(3)"))
    )
    assert crashed.outcome is Outcome.CRASH
    assert "exited with code 3" in crashed.message
    assert "THIS_JOB_OUTPUT" in crashed.message
    assert "EARLIER_JOB_OUTPUT" not in crashed.message


def test_stale_worker_roots_are_swept(tmp_path):
    from kernel_gym.judge.pool import ROOT_PREFIX, sweep_stale_roots

    dead = tmp_path / f"{ROOT_PREFIX}dead"
    dead.mkdir()
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    (dead / "pid").write_text(str(proc.pid))  # a process that has exited
    alive = tmp_path / f"{ROOT_PREFIX}alive"
    alive.mkdir()
    (alive / "pid").write_text(str(os.getpid()))
    starting = tmp_path / f"{ROOT_PREFIX}starting"  # no pid file yet
    starting.mkdir()
    assert sweep_stale_roots(tmp_path) == 1
    assert not dead.exists() and alive.exists() and starting.exists()


@pytest.mark.timeout(120)
def test_a_runner_writes_only_in_its_own_folder(pool, relu_code, tmp_path):
    """Confinement through the pool: a candidate that writes outside its runner's folder fails to (Landlock, or the
    uid drop where Landlock is missing), and the file never appears."""
    from kernel_gym.sandbox.confine.landlock import landlock_abi

    if landlock_abi() < 1 and os.geteuid() != 0:
        pytest.skip("neither Landlock nor root (for the uid drop) on this machine")
    target = tmp_path / "escaped.txt"
    extra = f"""
        with open({str(target)!r}, "w") as f:
            f.write("out of the sandbox")
    """
    result = pool.evaluate(make_job(relu_code(extra=extra)))
    assert result.outcome is Outcome.RUNTIME_ERROR, (result.outcome, result.message)
    assert "PermissionError" in result.message or "Permission denied" in result.message, result.message
    assert not target.exists()


@pytest.mark.timeout(300)
def test_judge_out_of_memory_is_run_again_not_a_verdict(monkeypatch, solution):
    """GPU memory the judge could not get (other jobs' buffers: 8 concurrent full-size level1/relu jobs on one H100
    did this) is not the solution's doing: the job runs again and gets its real verdict. Anything else the judge
    raises still surfaces."""
    import torch

    from kernel_gym.judge import pipeline
    from kernel_gym.judge import pool as pool_module

    real = pipeline.execute
    failures = {"oom": 2, "other": 0}

    def flaky(jr):
        if failures["oom"]:
            failures["oom"] -= 1
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 512.00 MiB")
        if failures["other"]:
            failures["other"] -= 1
            raise ValueError("a bug of the judge's")
        return real(jr)

    monkeypatch.setattr(pipeline, "execute", flaky)
    monkeypatch.setattr(pool_module, "JUDGE_OOM_BACKOFF_S", 0.01)
    pool = WorkerPool("cpu", size=1)
    try:
        result = pool.evaluate(make_job(solution("level1/relu")))
        assert result.outcome is Outcome.CORRECT, result.message
        assert result.stage_ms["judge_oom_retries"] == 2
        failures["other"] = 1
        with pytest.raises(ValueError):
            pool.evaluate(make_job(solution("level1/relu")))
        failures["oom"] = pool_module.JUDGE_OOM_RETRIES + 1  # memory that never comes back: the error surfaces
        with pytest.raises(torch.OutOfMemoryError):
            pool.evaluate(make_job(solution("level1/relu")))
    finally:
        pool.close()


@pytest.mark.timeout(300)
def test_an_oom_verdict_among_other_jobs_is_confirmed_alone(runner_scratch, solution, oom_once, monkeypatch):
    """An `oom` reached while another job was running may be the other job's memory: the job runs once more, with
    nothing else on the pool (the other job finishes first; new ones wait), and gets its real verdict; an `oom` with
    nothing else running stands."""
    import threading

    from kernel_gym.judge import pipeline

    spans: list[tuple[str, float, float]] = []
    real = pipeline.execute

    def timed(jr):
        t0 = time.monotonic()
        try:
            return real(jr)
        finally:
            spans.append(("slow" if "time.sleep(4)" in jr.job.code else "oom", t0, time.monotonic()))

    monkeypatch.setattr(pipeline, "execute", timed)
    genuine = solution("level1/relu")
    slow = "import time\ntime.sleep(4)\n" + genuine
    pool = WorkerPool("cpu", size=2)
    try:
        pool.warm_up()
        flag = runner_scratch / "oom_once"
        other = threading.Thread(target=pool.evaluate, args=(make_job(slow),))
        other.start()
        time.sleep(1.0)
        shared = pool.evaluate(make_job(oom_once(flag) + genuine))
        other.join()
        assert shared.outcome is Outcome.CORRECT, shared.message
        assert shared.stage_ms["oom_reruns"] == 1
        (slow_span,) = [sp for sp in spans if sp[0] == "slow"]
        first, rerun = sorted(sp for sp in spans if sp[0] == "oom")
        assert first[1] < slow_span[2] <= rerun[1], spans  # the first run shared the pool, the rerun did not
        assert shared.stage_ms["alone_wait"] > 500, shared.stage_ms  # its wait for the other job, reported
        alone_flag = runner_scratch / "oom_alone"
        alone = pool.evaluate(make_job(oom_once(alone_flag) + genuine))
        assert alone.outcome is Outcome.OOM and "oom_reruns" not in alone.stage_ms, alone.message
    finally:
        pool.close()


LEAVES = {  # a process-wide change made at import, and how the next job's solution would notice it
    "environment": ("os.environ['KG_TEST_LEFT_BEHIND'] = '1'", "os.environ.get('KG_TEST_LEFT_BEHIND')"),
    "import path": ("sys.path.insert(0, '/kg_test_left_behind')", "'/kg_test_left_behind' in sys.path"),
    "planted module": ("sys.modules['kg_test_left_behind'] = type(sys)('kg_test_left_behind')",
                       "'kg_test_left_behind' in sys.modules"),
}


@pytest.mark.parametrize("kind", sorted(LEAVES))
def test_a_process_wide_setting_is_not_left_to_the_next_job(solution, kind, monkeypatch):
    """Under the "clean" reuse policy (what cuda runners use), a solution that changes a process-wide setting for
    itself (at import) must not hand it to the next job of the same runner, whose solution would run under it (here:
    one that returns its input unchanged when it notices the change, a mismatch). At the job's end the runner puts
    back dtype, device, grad mode, threads, environment and import path; a change it cannot put back (a module made
    in memory) ends the runner's reuse."""
    monkeypatch.setenv("KERNEL_GYM_RUNNER_REUSE", "clean")
    change, notice = LEAVES[kind]
    genuine = solution("level1/relu")
    header = "import os\nimport sys\nimport torch\n"
    leaves = genuine.replace("import torch\n", header + change + "\n", 1)
    notices = noticing(genuine.replace("import torch\n", header, 1), notice)
    assert leaves != genuine and "return x" in notices
    pool = WorkerPool("cpu", size=1)
    try:
        first = pool.evaluate(make_job(leaves))
        assert first.outcome is Outcome.CORRECT, first.message
        second = pool.evaluate(make_job(notices))
        assert second.outcome is Outcome.CORRECT, second.message
    finally:
        pool.close()


def noticing(genuine: str, notice: str) -> str:
    """`genuine` made to return its input unchanged (a mismatch) when `notice` holds in its process."""
    return genuine.replace("y = torch.empty_like(x)", f"if {notice}:\n            return x\n        y = torch.empty_like(x)")


@pytest.mark.parametrize("policy", ["never", "clean"])
def test_what_a_job_leaves_where_no_report_looks_reaches_no_other_job(solution, policy, monkeypatch):
    """A candidate can change its runner's process in ways the runner's end-of-job report does not look at (here a
    function of a module no check watches, `math.sqrt`; native state would do as well), and that report is the
    runner's own, so forgeable. The next job that runner served would run under the change: a genuine solution
    that uses the function is then wrong. Under the "never" reuse policy (the default where runners are forked,
    cpu) every job gets a runner no earlier job ran in, and the genuine solution is correct; under "clean" the change
    reaches it, which is the attack this policy stops."""
    monkeypatch.setenv("KERNEL_GYM_RUNNER_REUSE", policy)
    genuine = solution("level1/relu").replace("import torch\n", "import math\nimport torch\n", 1)
    plants = genuine.replace("import math\n", "import math\nmath.sqrt = lambda value: 0.0\n", 1)
    harmed = noticing(genuine, "math.sqrt(4.0) != 2.0")
    assert plants != genuine and "return x" in harmed
    pool = WorkerPool("cpu", size=1)
    try:
        first = pool.evaluate(make_job(plants))
        assert first.outcome is Outcome.CORRECT, first.message  # its own job is genuine
        assert first.isolation["runner_reuse"] == policy, first.isolation  # (info["isolation"] says which)
        second = pool.evaluate(make_job(harmed))
    finally:
        pool.close()
    if policy == "never":
        assert second.outcome is Outcome.CORRECT, second.message
    else:  # the gap the default closes, shown: the change reached another job, a genuine solution scored 0
        assert second.outcome is not Outcome.CORRECT, second.message


def test_the_reuse_policy_defaults_by_how_runners_start(monkeypatch):
    from kernel_gym.errors import ConfigError
    from kernel_gym.judge.slot import candidate_reuse

    monkeypatch.delenv("KERNEL_GYM_RUNNER_REUSE", raising=False)
    monkeypatch.delenv("KERNEL_GYM_FORKSERVER", raising=False)
    assert candidate_reuse("cpu") == "never" and candidate_reuse("cuda") == "clean"
    monkeypatch.setenv("KERNEL_GYM_FORKSERVER", "1")
    assert candidate_reuse("cuda") == "never"  # runners forked from the fork server, on any device
    monkeypatch.setenv("KERNEL_GYM_RUNNER_REUSE", "clean")
    assert candidate_reuse("cpu") == "clean"
    monkeypatch.setenv("KERNEL_GYM_RUNNER_REUSE", "sometimes")
    with pytest.raises(ConfigError, match="KERNEL_GYM_RUNNER_REUSE"):
        candidate_reuse("cpu")
