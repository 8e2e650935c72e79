"""`kernel_gym.rollout.evaluate` through the real env on the CPU backend, with scripted policies; resuming."""

import json

import pytest

from kernel_gym.errors import ConfigError
from kernel_gym.policies import Request, ScriptedPolicy
from kernel_gym.rollout import Budget, evaluate, parse_budgets, resolve_tasks
from kernel_gym.rollout.log import log_path
from kernel_gym.samples import samples_from_logs
from kernel_gym.trajectory import read_log

TASKS = ["level1/relu", "level1/sum_reduce"]


class Counting(ScriptedPolicy):
    """A scripted policy that records every request it answers."""

    def __init__(self, script):
        super().__init__(script)
        self.requests: list[Request] = []

    def generate(self, requests):
        self.requests.extend(requests)
        return super().generate(requests)


@pytest.fixture
def script(solution, relu_code, respond):
    """relu: trajectory 0 answers a wrong kernel on turn 1, then the fix; sum_reduce: trajectory 1 of 4x1 answers
    prose only (a format error), every other turn the genuine solution."""
    wrong = respond(relu_code(body="tl.minimum(x, 0.0)"))

    def answer(r: Request) -> str:
        if r.task == "level1/relu" and r.trajectory == 0 and r.turn == 1:
            return wrong
        if r.task == "level1/sum_reduce" and r.config == "4x1" and r.trajectory == 1:
            return "I would sum the rows with a tree reduction, but I ran out of time."
        return respond(solution(r.task))

    return answer


@pytest.mark.timeout(300)
def test_rollout_through_the_real_env(evaluator, script, tmp_path):
    policy = Counting(script)
    result = evaluate(policy, TASKS, "4x1,2x2", out=tmp_path, evaluator=evaluator, env={"device": "cpu"}, seed=3)
    assert result.budgets == [Budget(4, 1), Budget(2, 2)] and result.tasks == TASKS
    assert (result.ran, result.skipped) == (12, 0)
    assert len(policy.requests) == 16  # 2 tasks x (4x1 + 2x2) attempts
    assert {(r.config, r.turn) for r in policy.requests} == {("4x1", 1), ("2x2", 1), ("2x2", 2)}
    assert len({r.seed for r in policy.requests}) == 16
    records = read_log(log_path(tmp_path))
    assert len(records) == 16 and all(r["prompt"] and r["info"]["task"] == r["task"] for r in records)
    turn2 = [r for r in records if r["turn"] == 2]
    assert all("Feedback on your latest attempt (turn 1)" in r["prompt"] for r in turn2)

    m = result.metrics()
    assert list(m) == ["4x1", "2x2"]
    four, two = m["4x1"], m["2x2"]
    assert (four.tasks, four.trajectories, four.attempts) == (2, 8, 8)
    assert four.rates["correct"] == pytest.approx(6 / 8)  # relu traj 0 wrong, sum_reduce traj 1 prose
    assert four.rates["format_error"] == pytest.approx(1 / 8) and four.rates["not_okay"] == pytest.approx(1 / 8)
    assert four.not_okay_reasons == {"no_code_block": 1}
    assert two.rates["correct"] == pytest.approx(7 / 8) and two.rates["hack"] == 0
    assert four.solved == two.solved == 1.0 and four.fast_p[0.0] == 1.0
    assert four.mean_speedup > 0 and len(two.turn_best) == 2 and two.turn_best[1] >= two.turn_best[0]
    assert four.best_at_k[4] == pytest.approx(four.mean_speedup)  # all K trajectories: Kevin's mean speedup
    assert "4x1" in result.table() and "mean speedup" in result.table()

    samples = samples_from_logs([log_path(tmp_path)])  # a rollout log is a trajectory log too
    assert len(samples) == 16 and {s["turn"] for s in samples} == {1, 2}


@pytest.mark.timeout(300)
def test_resume_skips_complete_trajectories(evaluator, solution, respond, tmp_path):
    answer = respond(solution("level1/relu"))
    first = Counting(answer)
    evaluate(first, ["level1/relu"], "2x2", out=tmp_path, evaluator=evaluator, env={"device": "cpu"})
    assert len(first.requests) == 4
    log = log_path(tmp_path)
    lines = log.read_text().splitlines(keepends=True)
    last = json.loads(lines[-1])
    # A crash during the last step: its record is lost, and the line before it is half written.
    log.write_text("".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])

    again = Counting(answer)
    result = evaluate(again, ["level1/relu"], "2x2,1x1", out=tmp_path, evaluator=evaluator, env={"device": "cpu"})
    asked = {(r.config, r.trajectory, r.turn) for r in again.requests}
    # the finished trajectory is not redone; the cut one goes on at its turn 2 (its logged turn 1 is not asked again)
    assert asked == {("2x2", last["trajectory"], 2), ("1x1", 0, 1)}
    assert len(again.requests) == 2 and (result.ran, result.skipped, result.resumed) == (2, 1, 1)
    assert sorted((t.config, t.index, len(t.attempts)) for t in result.trajectories) == [
        ("1x1", 0, 1), ("2x2", 0, 2), ("2x2", 1, 2)]

    third = Counting(answer)
    assert evaluate(third, ["level1/relu"], "2x2,1x1", out=tmp_path, evaluator=evaluator,
                    env={"device": "cpu"}).ran == 0
    assert third.requests == []
    with pytest.raises(ConfigError, match="other env settings"):
        evaluate(third, ["level1/relu"], "1x1", out=tmp_path, evaluator=evaluator,
                 env={"device": "cpu", "checks": "strict"})


@pytest.mark.timeout(300)
def test_resume_continues_a_partial_trajectory_from_its_last_logged_turn(evaluator, solution, relu_code, respond,
                                                                        tmp_path):
    """A run killed after turn 2 of 3: running it again asks the policy for turn 3 only, with the observation the
    uninterrupted run showed (turns 1 and 2 rebuilt from the log: summaries, kernels, feedback), and the log then
    holds one complete episode."""
    answers = {1: respond(solution("level1/relu")), 2: respond(relu_code(body="tl.minimum(x, 0.0)")),
               3: respond(solution("level1/relu"))}
    full, cut = tmp_path / "full", tmp_path / "cut"
    whole = Counting(lambda r: answers[r.turn])
    evaluate(whole, ["level1/relu"], "1x3", out=full, evaluator=evaluator, env={"device": "cpu"}, seed=5)
    records = read_log(log_path(full))
    assert [r["info"]["error"] for r in records] == [None, "mismatch", None]
    cut.mkdir()
    (cut / "run.json").write_text((full / "run.json").read_text())
    log_path(cut).write_text("".join(json.dumps(r) + "\n" for r in records[:2]))  # killed during turn 3

    resumed = Counting(lambda r: answers[r.turn])
    result = evaluate(resumed, ["level1/relu"], "1x3", out=cut, evaluator=evaluator, env={"device": "cpu"}, seed=5)
    assert [r.turn for r in resumed.requests] == [3]  # turns 1 and 2 are not asked again
    (request,) = resumed.requests
    assert request.prompt == records[2]["prompt"] and request.seed == whole.requests[2].seed
    assert (result.ran, result.skipped, result.resumed) == (1, 0, 1)
    (trajectory,) = result.trajectories
    assert len(trajectory.attempts) == 3 and trajectory.attempts[2].correct
    logged = read_log(log_path(cut))
    assert len({r["episode_id"] for r in logged}) == 1 and [r["turn"] for r in logged] == [1, 2, 3]
    assert logged[2]["info"]["scores"][:2] == [r["info"]["score"] for r in records[:2]]


def test_a_log_that_cannot_be_read_back_is_run_from_turn_1(evaluator, tmp_path, caplog):
    prose = Counting("No code this time, only a plan.")
    evaluate(prose, ["level1/relu"], "1x2", out=tmp_path, evaluator=evaluator, env={"device": "cpu"})
    records = read_log(log_path(tmp_path))
    del records[0]["info"]["feedback"]  # a record of an older version
    log_path(tmp_path).write_text(json.dumps(records[0]) + "\n")
    again = Counting("No code this time, only a plan.")
    result = evaluate(again, ["level1/relu"], "1x2", out=tmp_path, evaluator=evaluator, env={"device": "cpu"})
    assert [r.turn for r in again.requests] == [1, 2] and (result.ran, result.resumed) == (1, 0)
    assert "running it again from turn 1" in caplog.text


def test_budgets_and_tasks_parse():
    assert [b.label for b in parse_budgets("128x1, 32x4,16X8".replace("X", "x"))] == ["128x1", "32x4", "16x8"]
    assert parse_budgets([(2, 3), "2x3"]) == [Budget(2, 3)] and Budget(16, 8).attempts == 128
    with pytest.raises(ConfigError):
        parse_budgets("32by4")
    with pytest.raises(ConfigError):
        parse_budgets("0x4")
    assert resolve_tasks("level1/relu,level1/relu") == ["level1/relu"]
    assert "level1/softmax" in resolve_tasks("level1") and resolve_tasks("suite:level2") == resolve_tasks("level2")
    with pytest.raises(KeyError, match="Did you mean"):
        resolve_tasks("level1/rleu")
    with pytest.raises(ConfigError, match="set by the rollout"):
        evaluate(ScriptedPolicy("x"), "level1/relu", "1x1", env={"max_turns": 3})


@pytest.mark.timeout(300)
def test_schedules_send_the_same_requests(evaluator, solution, respond, tmp_path):
    answer = respond(solution("level1/relu"))
    seen = {}
    for schedule in ("rounds", "async"):
        policy = Counting(answer)
        result = evaluate(policy, ["level1/relu"], "2x2", evaluator=evaluator, env={"device": "cpu"}, seed=7,
                          schedule=schedule, concurrency=2)
        assert [len(t.attempts) for t in result.trajectories] == [2, 2]
        seen[schedule] = sorted((r.trajectory, r.turn, r.seed) for r in policy.requests)
    assert seen["rounds"] == seen["async"] and len(seen["rounds"]) == 4


@pytest.mark.timeout(300)
def test_a_failing_policy_keeps_finished_trajectories(evaluator, solution, respond, tmp_path):
    from kernel_gym.policies import PolicyError

    answer = respond(solution("level1/relu"))

    def flaky(r: Request) -> str:
        if r.trajectory == 1:
            raise PolicyError("the server went away")
        return answer

    with pytest.raises(PolicyError, match="went away"):
        evaluate(ScriptedPolicy(flaky), ["level1/relu"], "2x1", out=tmp_path, evaluator=evaluator,
                 env={"device": "cpu"}, concurrency=1)
    assert [(r["trajectory"], r["turn"]) for r in read_log(log_path(tmp_path))] == [(0, 1)]
    resumed = Counting(answer)
    evaluate(resumed, ["level1/relu"], "2x1", out=tmp_path, evaluator=evaluator, env={"device": "cpu"})
    assert [(r.trajectory, r.turn) for r in resumed.requests] == [(1, 1)]
