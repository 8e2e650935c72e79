"""The OpenEnv adapter: openenv-core's own server (create_app) on a real local port, driven by OpenEnv's client classes.

`KernelGymClient` is an OpenEnv `EnvClient` (its WebSocket session protocol, `.sync()` wrapper); `GenericEnvClient`
is OpenEnv's client for any server, so it checks the wire format without any kernel-gym code on the client side.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time

import pytest
from serving import free_port  # (tests/serving.py)

pytest.importorskip("openenv.core", reason="openenv-core is not installed (pip install 'kernel-gym[openenv]')")

import httpx  # noqa: E402
import uvicorn  # noqa: E402
from openenv.core import GenericEnvClient  # noqa: E402

from kernel_gym.integrations.openenv import KernelAction, KernelGymClient, create_openenv_app  # noqa: E402
from kernel_gym.rewards import aggregate  # noqa: E402

NO_CODE = "I would fuse the loads, but there is no code block here."


class _Server:
    """uvicorn serving an app on 127.0.0.1 in a thread of this process."""

    def __init__(self, app):
        self.port = free_port()
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline and self.thread.is_alive(), "the server did not start"
            time.sleep(0.05)
        return f"http://127.0.0.1:{self.port}"

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(timeout=30)


@pytest.fixture(scope="module")
def openenv_url(evaluator):
    app = create_openenv_app(env_kwargs={"task": "level1/relu", "device": "cpu", "max_turns": 2},
                             evaluator=evaluator, max_concurrent_envs=4)
    with _Server(app) as url:
        yield url


@pytest.mark.timeout(600)
def test_a_whole_episode_through_openenvs_client(openenv_url, respond, solution):
    with KernelGymClient(base_url=openenv_url).sync() as client:
        first = client.reset(seed=0, task="level1/relu")
        assert not first.done and first.reward is None
        assert first.observation.task == "level1/relu" and first.observation.max_turns == 2
        assert "ModelNew" in first.observation.prompt and first.observation.turn == 0

        bad = client.step(KernelAction(response=NO_CODE))  # bad input: feedback, score 0
        assert bad.reward == 0.0 and not bad.done
        assert bad.observation.info["error"] == "format_error" and bad.observation.feedback
        assert bad.observation.feedback in bad.observation.prompt  # the next prompt shows the feedback

        good = client.step(KernelAction(response=respond(solution("level1/relu"))))
        info = good.observation.info
        assert good.done and info["correct"], info["feedback"]
        assert good.reward == pytest.approx(info["score"]) and good.reward > 0
        assert info["scores"] == [0.0, good.reward]
        assert info["returns"] == pytest.approx(aggregate(info["scores"], 0.4, "sum"))

        state = client.state()
        assert state.step_count == 2 and state.task == "level1/relu"
        assert state.returns == pytest.approx(info["returns"])


def test_openenvs_generic_client_and_its_http_endpoints(openenv_url):
    with GenericEnvClient(base_url=openenv_url).sync() as client:
        reset = client.reset(task="level1/relu")
        assert "ModelNew" in reset.observation["prompt"]
        step = client.step({"response": "no code at all"})
        assert step.reward == 0.0 and step.observation["info"]["error"] == "format_error"
        with pytest.raises(RuntimeError, match="VALIDATION_ERROR|validation"):
            client.step({"not_a_field": 1})  # a malformed action is refused by OpenEnv's validation
    health = httpx.get(f"{openenv_url}/health").json()
    assert health["status"] == "healthy"
    schema = httpx.get(f"{openenv_url}/schema").json()
    assert "response" in schema["action"]["properties"]
    assert httpx.get(f"{openenv_url}/metadata").json()["name"] == "kernel_gym"
    stateless = httpx.post(f"{openenv_url}/step", json={"action": {"response": "still no code"}}, timeout=120).json()
    assert stateless["reward"] == 0.0 and stateless["observation"]["turn"] == 1


def test_a_bad_request_is_a_4xx_with_a_message_and_a_session_closes_quietly(openenv_url, caplog):
    """POST /reset with an unknown task was HTTP 500; now 400 with the reason. A WebSocket session that its client
    ends normally logged an ASGI traceback (openenv-core closes the socket again); now nothing."""
    reply = httpx.post(f"{openenv_url}/reset", json={"task": "level1/no_such_task"}, timeout=60)
    assert reply.status_code == 400, reply.text
    assert reply.json()["error"] == "UnknownTaskError" and "level1/no_such_task" in reply.json()["detail"]
    server_log = logging.getLogger("uvicorn.error")  # (uvicorn's loggers do not propagate to the root's)
    server_log.addHandler(caplog.handler)
    try:
        with KernelGymClient(base_url=openenv_url).sync() as client:
            client.reset(task="level1/relu")
        time.sleep(1.0)  # the server's side of the close
    finally:
        server_log.removeHandler(caplog.handler)
    assert not [r for r in caplog.records if "Exception in ASGI" in r.getMessage()], caplog.text[-2000:]


def test_the_token_guards_http_and_websocket(evaluator):
    app = create_openenv_app(env_kwargs={"device": "cpu", "max_turns": 1}, evaluator=evaluator, token="s3cret")
    with _Server(app) as url:
        assert httpx.get(f"{url}/health").status_code == 401
        assert httpx.get(f"{url}/health", headers={"Authorization": "Bearer s3cret"}).status_code == 200
        with pytest.raises(ConnectionError):
            KernelGymClient(base_url=url).sync().connect()
        with KernelGymClient(base_url=url, token="s3cret").sync() as client:
            result = client.step(KernelAction(response="no code"))  # a step without reset: a fresh episode
            assert result.done and result.reward == 0.0


@pytest.mark.timeout(300)
def test_kernel_gym_serve_protocol_openenv(repo_root):
    port = free_port()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "kernel_gym.cli", "serve", "--protocol", "openenv", "--device", "cpu", "--port",
           str(port), "--env-kwargs", '{"task": "level1/relu", "max_turns": 3}', "--log-level", "warning"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=repo_root)
    try:
        line = proc.stdout.readline()
        assert "kernel-gym serve (openenv)" in line, line
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline and proc.poll() is None, "kernel-gym serve --protocol openenv died"
            time.sleep(0.5)
        with KernelGymClient(base_url=f"http://127.0.0.1:{port}").sync() as client:
            assert client.reset().observation.max_turns == 3
            result = client.step(KernelAction(response=NO_CODE))
            assert result.reward == 0.0 and result.observation.info["error"] == "format_error"
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    bad = subprocess.run([*cmd[:-4], "--env-kwargs", '{"task": "level9/nope"}'], capture_output=True, text=True,
                         timeout=120, cwd=repo_root)
    assert bad.returncode == 2 and "level9/nope" in bad.stderr
