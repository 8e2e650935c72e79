"""The evaluation service (FastAPI app, `kernel-gym serve`) and its client `ServiceEvaluator`, on the CPU backend."""

from __future__ import annotations

import json
import time

import pytest

from kernel_gym.eval.result import EvalResult, Outcome

pytest.importorskip("fastapi")
pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def make_client(evaluator):
    """make_client(**create_app kwargs) -> a TestClient over the shared LocalEvaluator."""
    from fastapi.testclient import TestClient

    from kernel_gym.service.app import create_app

    clients = []

    def make(**kwargs):
        client = TestClient(create_app(evaluator, **kwargs))
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


@pytest.fixture(scope="module")
def client(make_client):
    return make_client()


@pytest.fixture(scope="module")
def jobs(cpu_job, solution, relu_code):
    return [cpu_job(solution("level1/relu")), cpu_job(relu_code(body="x + 1.0")), cpu_job(relu_code(ret="torch.relu(x)"))]


def test_one_job_gets_the_local_verdict(client, evaluator, jobs):
    response = client.post("/v1/evaluate", json={"job": jobs[0].to_dict()})
    assert response.status_code == 200, response.text
    result = EvalResult.from_dict(response.json()["result"])
    local = evaluator.evaluate(jobs[0])
    assert result.outcome is local.outcome is Outcome.CORRECT and result.timing is not None


def test_a_batch_keeps_order_and_verdicts(client, jobs):
    response = client.post("/v1/evaluate", json={"jobs": [j.to_dict() for j in jobs]})
    assert response.status_code == 200, response.text
    results = [EvalResult.from_dict(d) for d in response.json()["results"]]
    assert [r.outcome for r in results] == [Outcome.CORRECT, Outcome.MISMATCH, Outcome.REJECTED]
    assert "library_op" in results[2].hacks


def test_oversized_requests_get_413(make_client, jobs):
    small = make_client(max_request_bytes=2000)
    body = json.dumps({"job": jobs[0].to_dict()}).encode()
    response = small.post("/v1/evaluate", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 413
    assert response.json()["error"] == "request_too_large" and "2000 bytes" in response.json()["detail"]
    # without a Content-Length (chunked), the limit holds while the body streams in
    chunked = small.post("/v1/evaluate", content=iter([body[:1500], body[1500:]]))
    assert chunked.status_code == 413 and chunked.json()["error"] == "request_too_large"


@pytest.mark.parametrize("body, status, error, says", [
    (b"{not json", 400, "malformed_json", "not valid JSON"),
    (b"[1, 2]", 422, "invalid_request", '{"job": JOB}'),
    (b'{"job": {"code": 1}}', 422, "invalid_job", "task_id, task_source, code, backend"),
    (b'{"jobs": []}', 422, "invalid_request", "1 to"),
    (b'{"job": 5}', 422, "invalid_job", "JSON object"),
])
def test_malformed_requests_get_clear_errors(client, body, status, error, says):
    response = client.post("/v1/evaluate", content=body, headers={"content-type": "application/json"})
    assert response.status_code == status
    assert response.json()["error"] == error and says in response.json()["detail"]


def test_invalid_job_fields_are_named(client, jobs):
    bad_config = {**jobs[0].to_dict(), "config": {"device": "cpu", "bogus": 1}}
    response = client.post("/v1/evaluate", json={"job": bad_config})
    assert response.status_code == 422 and "bogus" in response.json()["detail"]
    cuda = {**jobs[0].to_dict(), "config": {**jobs[0].config.to_dict(), "device": "cuda"}}
    response = client.post("/v1/evaluate", json={"job": cuda})
    assert response.status_code == 422 and response.json()["error"] == "unsupported_device"


def test_token_is_required_when_configured(make_client, jobs):
    guarded = make_client(token="s3cret")
    body = {"job": jobs[2].to_dict()}
    assert guarded.post("/v1/evaluate", json=body).status_code == 401
    wrong = guarded.post("/v1/evaluate", json=body, headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401 and wrong.json()["error"] == "unauthorized"
    assert guarded.get("/metrics").status_code == 401
    assert guarded.get("/health").status_code == 200
    ok = guarded.post("/v1/evaluate", json=body, headers={"Authorization": "Bearer s3cret"})
    assert ok.status_code == 200 and ok.json()["result"]["outcome"] == "rejected"


def test_health_and_metrics(make_client, jobs):
    fresh = make_client()
    assert fresh.get("/health").json() == {"status": "ok", "device": "cpu", "evaluator": "LocalEvaluator",
                                           "capacity": 1, "version": fresh.get("/health").json()["version"]}
    fresh.post("/v1/evaluate", json={"jobs": [jobs[1].to_dict(), jobs[2].to_dict()]})
    fresh.post("/v1/evaluate", content=b"{", headers={"content-type": "application/json"})
    snap = fresh.get("/metrics?format=json").json()
    assert snap["jobs_done"] == 2 and snap["outcomes"] == {"mismatch": 1, "rejected": 1}
    assert snap["jobs_in_flight"] == 0 and snap["queue_depth"] == 0 and snap["latency_s"]["count"] == 2
    assert snap["requests"]["200"] == 3 and snap["requests"]["400"] == 1  # two /health, one /v1/evaluate
    text = fresh.get("/metrics").text
    assert 'kernel_gym_jobs_total{outcome="mismatch"} 1' in text and "kernel_gym_queue_depth 0" in text
    assert snap["infra_failures"] == 0 and "kernel_gym_infra_failures_total 0" in text


def test_metrics_count_infrastructure_failures_apart():
    from kernel_gym.eval.result import EvalResult, Outcome
    from kernel_gym.service.app import Metrics

    metrics = Metrics(capacity=1)
    for result in (EvalResult(Outcome.CRASH), EvalResult(Outcome.CRASH, infra_failure=True)):
        metrics.begin(1)
        metrics.end(result, 0.1)
    assert metrics.snapshot()["outcomes"] == {"crash": 2} and metrics.snapshot()["infra_failures"] == 1
    assert "kernel_gym_infra_failures_total 1" in metrics.prometheus()


def test_refuses_to_serve_beyond_localhost_without_a_token(monkeypatch, capsys):
    from kernel_gym.cli import main
    from kernel_gym.errors import ConfigError
    from kernel_gym.service.app import check_bind

    with pytest.raises(ConfigError, match="without a token"):
        check_bind("0.0.0.0", None)
    check_bind("0.0.0.0", "t")
    check_bind("127.0.0.1", None)
    monkeypatch.delenv("KERNEL_GYM_TOKEN", raising=False)
    assert main(["serve", "--host", "0.0.0.0"]) == 2
    assert "without a token" in capsys.readouterr().err


def test_service_evaluator_against_a_live_server(live_service, jobs, respond, solution):
    import gymnasium as gym

    import kernel_gym  # noqa: F401
    from kernel_gym.integrations.evaluators import evaluator_from_spec
    from kernel_gym.service.client import ServiceError, ServiceEvaluator

    ev = ServiceEvaluator(live_service, token="s3cret")
    try:
        assert ev.device == "cpu"
        assert ev.evaluate(jobs[0]).outcome is Outcome.CORRECT
        assert [r.outcome for r in ev.evaluate_many(jobs, batch_size=2)] == [
            Outcome.CORRECT, Outcome.MISMATCH, Outcome.REJECTED]
        env = gym.make("KernelRefine-v0", task="level1/relu", device="cpu", max_turns=1, evaluator=ev)
        env.reset(seed=0)
        _, reward, _, truncated, info = env.step(respond(solution("level1/relu")))
        assert info["correct"] and reward > 0 and truncated
        env.close()
    finally:
        ev.close()
    bad = evaluator_from_spec(live_service)  # no token
    try:
        with pytest.raises(ServiceError, match="401"):
            bad.evaluate(jobs[2])
    finally:
        bad.close()


def test_service_evaluator_against_a_dead_url(unused_url, jobs):
    from kernel_gym.service.client import SERVICE_UNAVAILABLE, ServiceEvaluator, ServiceUnavailable

    ev = ServiceEvaluator(unused_url, retries=2, backoff_s=0.05, connect_timeout=2)
    t0 = time.monotonic()
    result = ev.evaluate(jobs[0])
    many = ev.evaluate_many(jobs[:2])
    assert time.monotonic() - t0 < 20
    assert result.outcome is Outcome.CRASH and result.message.startswith(SERVICE_UNAVAILABLE)
    assert result.infra_failure
    assert "3 attempts" in result.message and unused_url in result.message
    assert [r.outcome for r in many] == [Outcome.CRASH, Outcome.CRASH]
    assert ev.device is None
    strict = ServiceEvaluator(unused_url, retries=0, raise_on_unavailable=True)
    with pytest.raises(ServiceUnavailable):
        strict.evaluate(jobs[0])
    import pickle

    copy = pickle.loads(pickle.dumps(strict))  # e.g. into an AsyncVectorEnv worker: same service, own connections
    assert copy is not strict and copy.url == strict.url and copy.raise_on_unavailable


def test_serve_command_end_to_end(cpu_job, solution, tmp_path, unused_url):
    """`kernel-gym serve` as a real process: it answers /health and jobs, and stops cleanly on SIGTERM."""
    import signal
    import subprocess
    import sys

    import httpx

    from kernel_gym.service.client import ServiceEvaluator

    port = int(unused_url.rsplit(":", 1)[1])
    log = (tmp_path / "serve.log").open("w")
    proc = subprocess.Popen([sys.executable, "-c", "import sys; from kernel_gym.cli import main; sys.exit(main())",
                             "serve", "--port", str(port), "--device", "cpu", "--token", "tok"],
                            stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(url + "/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        ev = ServiceEvaluator(url, token="tok")
        assert ev.evaluate(cpu_job(solution("level1/relu"))).outcome is Outcome.CORRECT
        ev.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=60)
    output = (tmp_path / "serve.log").read_text()
    assert rc in (0, -signal.SIGTERM), output  # uvicorn re-raises the signal after its graceful shutdown
    assert "Application shutdown complete" in output and "LocalEvaluator on cpu" in output and "token required" in output



def test_openrlhf_agent_evaluates_through_the_service(live_service, monkeypatch, respond, solution):
    """Evaluation off the training GPUs: the OpenRLHF agent, configured only by environment variables, sends its
    jobs to `kernel-gym serve` (the service's job counter moves; the verdict is the genuine kernel's)."""
    import asyncio
    import json

    import httpx

    pytest.importorskip("openrlhf")
    from kernel_gym.integrations import openrlhf as adapter
    from kernel_gym.integrations import shared_evaluator as shared

    def jobs_done() -> float:
        metrics = httpx.get(live_service + "/metrics", params={"format": "json"},
                            headers={"Authorization": "Bearer s3cret"}).json()
        return float(metrics["jobs_done"])

    monkeypatch.setenv("KERNEL_GYM_EVALUATOR", live_service)
    monkeypatch.setenv("KERNEL_GYM_TOKEN", "s3cret")
    before = jobs_done()
    label = json.dumps({"task": "level1/relu", "device": "cpu", "max_turns": 1})
    agent = adapter.KernelRefineAgent()

    async def episode():
        await agent.reset({"observation": "prompt", "label": label})
        return await agent.step({"observation_text": "prompt", "action_text": respond(solution("level1/relu")),
                                 "label": label, "sampling_params": None})

    try:
        out = asyncio.run(episode())
    finally:
        shared.close_shared_evaluators()
    assert out["done"] is True and out["extra_logs"]["kernel/correct"] == 1.0, out["info"]["feedback"]
    assert jobs_done() >= before + 1
