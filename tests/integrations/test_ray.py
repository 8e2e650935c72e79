"""RayEvaluator on a real local Ray cluster (CPU backend): same verdicts as local evaluation, scheduling over
actors, an actor killed mid-job (retried, nothing lost), a second death (CRASH), and an env episode."""

from __future__ import annotations

import os
import pickle
import signal
import threading
import time
from pathlib import Path

import pytest

from kernel_gym.eval.result import Outcome

pytestmark = pytest.mark.timeout(300)

# Writes the pids of its runner and of the runner's parent to a file, then takes a while: the test kills the runner's
# judge (the Ray actor) while the job runs. Only the first forward call (during the compile stage) sleeps. (The runner
# cannot look further up itself: other processes' /proc files are out of its reach, `landlock_proc`.)
SLOW_EXTRA = """
if self.calls == 1:
    with open({marker!r} + "." + str(os.getpid()), "w") as f:  # (a file of its own: runners are uids of their own)
        f.write(f"{{os.getpid()}} {{os.getppid()}}")
    time.sleep({sleep})
"""


def _actor_of(marker_text: str) -> int:
    """The judge that started the marker's runner: the runner's parent, or one up when a fork server forked it.
    Raises OSError for a runner that is gone (the marker of an actor already killed)."""
    runner, parent = (int(x) for x in marker_text.split())
    if Path(f"/proc/{runner}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
        raise OSError("a dead runner's marker")
    if b"forkserver" not in Path(f"/proc/{parent}/cmdline").read_bytes():
        return parent
    return int(Path(f"/proc/{parent}/stat").read_text().rsplit(")", 1)[1].split()[1])


@pytest.fixture(scope="module")
def ray_ev(ray_cluster):
    from kernel_gym.integrations.ray import RayEvaluator

    ev = RayEvaluator(actors=2, device="cpu", num_cpus_per_actor=0.5)
    ev.warm_up(timeout_s=240)
    yield ev
    ev.close()


@pytest.fixture
def slow_job(cpu_job, relu_code, runner_scratch, monkeypatch):
    """A correct job that records its runner's pid in a marker file and sleeps (sent to the evaluator directly:
    the static rules, which run before any evaluator, would rightly reject the file access)."""
    marker = runner_scratch / "actor.pid"
    code = relu_code(header="import os\nimport time", extra=SLOW_EXTRA.format(marker=str(marker), sleep=4))
    return cpu_job(code), marker


_RESOLVED: dict[str, int] = {}  # marker text -> its actor, looked up while that runner was alive


def _wait_for_pid(marker, timeout_s: float = 120.0, not_pid: int | None = None) -> int:
    """The pid of the actor running the slow job (other than `not_pid`), once its runner wrote the marker. A marker
    is resolved once, while its runner lives: after its actor is killed, its parents' pids mean nothing."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for path in marker.parent.glob(marker.name + ".*"):  # one per runner that ran the slow job
            try:
                text = path.read_text()
                pid = _RESOLVED.get(text) or _RESOLVED.setdefault(text, _actor_of(text))
            except (OSError, ValueError, IndexError):  # not written yet, or a dead runner's (its actor was killed)
                pid = None
            if pid and pid != not_pid:
                return pid
        time.sleep(0.05)
    raise AssertionError("the slow job never started")


def _verdict(result):
    return result.outcome, result.hacks, result.compiled, result.mismatch is not None


def test_same_verdicts_as_local(ray_ev, evaluator, cpu_job, solution, relu_code):
    from kernel_gym.eval.evaluator import evaluate_job
    from kernel_gym.judge.local import evaluate_many

    jobs = [cpu_job(solution("level1/relu")),  # genuine
            cpu_job(relu_code(body="x + 1.0")),  # wrong numerics
            cpu_job(relu_code(ret="torch.relu(x)"))]  # library-op hack: the static rules (before any evaluator)
    remote = evaluate_many(jobs, evaluator=ray_ev)
    local = [evaluate_job(j, evaluator) for j in jobs]
    assert [r.outcome for r in remote] == [Outcome.CORRECT, Outcome.MISMATCH, Outcome.REJECTED]
    assert [_verdict(r) for r in remote] == [_verdict(r) for r in local]
    assert remote[0].timing is not None and remote[0].timing.method == local[0].timing.method
    assert "library_op" in remote[2].hacks
    assert "torch_compute" in ray_ev.evaluate(jobs[2]).hacks  # the evaluator alone: the judge's op audit
    assert ray_ev.evaluate(jobs[0]).outcome is Outcome.CORRECT


def test_many_jobs_spread_over_actors_in_order(ray_ev, cpu_job, solution, relu_code):
    before = {s["actor"]: s["done"] for s in ray_ev.stats()}
    jobs = [cpu_job(solution("level1/relu")) if i % 2 == 0 else cpu_job(relu_code(body="x * 2.0")) for i in range(6)]
    results = ray_ev.evaluate_many(jobs)
    assert [r.outcome for r in results] == [Outcome.CORRECT, Outcome.MISMATCH] * 3
    done = {s["actor"]: s["done"] - before[s["actor"]] for s in ray_ev.stats()}
    assert sum(done.values()) == 6 and all(n >= 1 for n in done.values()), done
    assert all(s["in_flight"] == 0 for s in ray_ev.stats())


def test_a_sandbox_crash_is_a_verdict_not_an_actor_death(ray_ev, cpu_job, relu_code):
    restarts = sum(s["restarts"] for s in ray_ev.stats())
    crashed = ray_ev.evaluate(cpu_job(relu_code(header="import ctypes", extra="ctypes.string_at(0)")))
    assert crashed.outcome in (Outcome.CRASH, Outcome.REJECTED)  # the static rules may see ctypes first
    assert sum(s["restarts"] for s in ray_ev.stats()) == restarts


def test_actor_killed_mid_job_is_retried_and_nothing_is_lost(ray_ev, slow_job, cpu_job, solution):
    job, marker = slow_job
    restarts = sum(s["restarts"] for s in ray_ev.stats())
    jobs = [job] + [cpu_job(solution("level1/relu")) for _ in range(3)]
    out: list = []
    runner = threading.Thread(target=lambda: out.append(ray_ev.evaluate_many(jobs)))
    runner.start()
    os.kill(_wait_for_pid(marker), signal.SIGKILL)  # the actor process itself: its sandbox worker dies with it
    runner.join(timeout=240)
    assert out, "evaluate_many did not return"
    assert [r.outcome for r in out[0]] == [Outcome.CORRECT] * 4
    assert sum(s["restarts"] for s in ray_ev.stats()) == restarts + 1


def test_second_actor_death_is_a_crash_result(ray_ev, slow_job):
    job, marker = slow_job
    out: list = []
    runner = threading.Thread(target=lambda: out.append(ray_ev.evaluate(job)))
    runner.start()
    first = _wait_for_pid(marker)
    os.kill(first, signal.SIGKILL)
    os.kill(_wait_for_pid(marker, not_pid=first), signal.SIGKILL)  # the retry, on a restarted actor
    runner.join(timeout=240)
    assert out and out[0].outcome is Outcome.CRASH
    assert "failed twice" in out[0].message and "died" in out[0].message
    assert out[0].infra_failure  # no verdict on the kernel: a trainer drops the turn
    assert ray_ev.evaluate(job).outcome is Outcome.CORRECT  # the restarted actors serve the next job


def test_env_episode_through_ray(ray_ev, respond, solution, relu_code):
    import gymnasium as gym

    import kernel_gym  # noqa: F401

    env = gym.make("KernelRefine-v0", task="level1/relu", device="cpu", max_turns=2, evaluator=ray_ev)
    try:
        env.reset(seed=0)
        _, reward, _, truncated, info = env.step(respond(solution("level1/relu")))
        assert info["correct"] and reward > 0 and not truncated
        _, reward, _, truncated, info = env.step(respond(relu_code(ret="torch.relu(x)")))
        assert info["error"] == "rejected" and info["score"] == 0.0 and truncated
        assert len(info["returns"]) == 2
    finally:
        env.close()
    assert ray_ev.evaluate is not None and ray_ev.stats()  # the env did not close an evaluator it does not own


def test_evaluator_from_spec_and_bad_arguments(ray_cluster):
    from kernel_gym.errors import ConfigError
    from kernel_gym.integrations.evaluators import evaluator_from_spec
    from kernel_gym.integrations.ray import RayEvaluator

    with pytest.raises(ConfigError):
        RayEvaluator(device="cpu", workers_per_actor=0)
    from kernel_gym.errors import KernelGymError

    unplaceable = RayEvaluator(device="cpu", resources={"no_such_resource": 1})
    try:
        with pytest.raises(KernelGymError, match="ray status"):
            unplaceable.warm_up(timeout_s=2)
    finally:
        unplaceable.close()
    ev = evaluator_from_spec("ray")
    try:
        assert isinstance(ev, RayEvaluator) and ev.device == "cpu" and ev.capacity == 1
        with pytest.raises(KernelGymError, match="another process"):
            pickle.dumps(ev)
    finally:
        ev.close()


def test_service_backed_by_ray(ray_ev, cpu_job, solution, relu_code):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from kernel_gym.service.app import create_app

    with TestClient(create_app(ray_ev)) as client:
        assert client.get("/health").json()["evaluator"] == "RayEvaluator"
        assert client.get("/health").json()["capacity"] == 2
        jobs = [cpu_job(solution("level1/relu")).to_dict(), cpu_job(relu_code(body="x + 1.0")).to_dict()]
        response = client.post("/v1/evaluate", json={"jobs": jobs})
        assert [r["outcome"] for r in response.json()["results"]] == ["correct", "mismatch"]
