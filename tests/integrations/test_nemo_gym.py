"""The NeMo Gym adapter against nemo-gym 0.7.0 (installed without its pinned dependencies: scripts/install.sh says
why): whole episodes through NeMo Gym's own stack on real local ports: NeMo Gym's `gymnasium_agent` server runs the
rollout (its `/run`), calling our resources server (`/reset`, `/step`) and a scripted model server (`/v1/responses`)
through NeMo Gym's own `ServerClient`."""

from __future__ import annotations

import threading
import time

import pytest
from serving import free_port  # (tests/serving.py)

pytest.importorskip("resources_servers.gymnasium", reason="nemo-gym is not installed (scripts/install.sh adds it)")

import httpx  # noqa: E402
import uvicorn  # noqa: E402
from fastapi import FastAPI, Request  # noqa: E402
from nemo_gym.config_types import ModelServerRef, ResourcesServerRef  # noqa: E402
from nemo_gym.server_utils import BaseServerConfig, ServerClient  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402
from responses_api_agents.gymnasium_agent.app import GymnasiumAgent, GymnasiumAgentConfig  # noqa: E402

from kernel_gym.integrations.nemo_gym import KernelGymResourcesServer, KernelGymResourcesServerConfig  # noqa: E402
from kernel_gym.rewards import aggregate  # noqa: E402

NO_CODE = "A fused kernel would help, but I forgot the code."


class _Served:
    """An ASGI app served by uvicorn on 127.0.0.1 in a thread of this process."""

    def __init__(self, app, port: int):
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline and self.thread.is_alive(), "a server did not start"
            time.sleep(0.05)

    def stop(self):
        self.server.should_exit = True
        self.thread.join(timeout=30)


def scripted_model(replies: list[str], requests: list[dict]) -> FastAPI:
    """A model server answering `/v1/responses` (NeMo Gym's Responses API shape) with the next scripted reply."""
    app = FastAPI()

    @app.post("/{path:path}")
    async def responses(path: str, request: Request):
        body = await request.json()
        requests.append(body)
        return {"id": f"r{len(requests)}", "created_at": 0.0, "model": "scripted", "object": "response",
                "output": [{"id": f"m{len(requests)}", "type": "message", "role": "assistant", "status": "completed",
                            "content": [{"type": "output_text", "text": replies.pop(0), "annotations": []}]}],
                "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}

    return app


@pytest.fixture
def nemo_gym_stack(evaluator, monkeypatch):
    """NeMo Gym's agent, our resources server and a scripted model, each on its own port; yields (agent URL,
    replies, model requests, the resources server). The global config reaches NeMo Gym's process-wide state the way
    its launcher hands it to each server (NEMO_GYM_CONFIG_DICT); its process-wide HTTP client is made afresh (the
    agent's event loop is new)."""
    from nemo_gym import global_config, server_utils

    ports = {name: free_port() for name in ("env", "model", "agent")}
    config = OmegaConf.create({
        "kernel_gym_env": {"resources_servers": {"kernel_gym": {"host": "127.0.0.1", "port": ports["env"]}}},
        "policy_model": {"responses_api_models": {"scripted": {"host": "127.0.0.1", "port": ports["model"]}}},
        "observability_enabled": False})
    monkeypatch.setenv(global_config.NEMO_GYM_CONFIG_DICT_ENV_VAR_NAME, OmegaConf.to_yaml(config))
    monkeypatch.setattr(global_config, "_GLOBAL_CONFIG_DICT", None)
    monkeypatch.setattr(server_utils, "_GLOBAL_AIOHTTP_CLIENT", None)
    client = ServerClient(head_server_config=BaseServerConfig(host="127.0.0.1", port=free_port()),
                          global_config_dict=config)
    settings = {"device": "cpu", "score": "correctness"}
    env_server = KernelGymResourcesServer(
        config=KernelGymResourcesServerConfig(host="127.0.0.1", port=ports["env"], entrypoint="", name="kernel_gym",
                                              env=settings),
        server_client=client, evaluator=evaluator)
    agent = GymnasiumAgent(config=GymnasiumAgentConfig(
        host="127.0.0.1", port=ports["agent"], entrypoint="", name="kernel_gym_agent", max_steps=8,
        resources_server=ResourcesServerRef(type="resources_servers", name="kernel_gym_env"),
        model_server=ModelServerRef(type="responses_api_models", name="policy_model")), server_client=client)
    replies, requests = [], []
    served = [_Served(env_server.setup_webserver(), ports["env"]),
              _Served(scripted_model(replies, requests), ports["model"]),
              _Served(agent.setup_webserver(), ports["agent"])]
    try:
        yield f"http://127.0.0.1:{ports['agent']}", replies, requests, env_server
    finally:
        for s in served:
            s.stop()


def gym_rewards(make_env, responses, **kwargs):
    env = make_env(**kwargs)
    env.reset(seed=0)
    return [env.step(text)[1] for text in responses]


@pytest.mark.timeout(600)
def test_a_whole_episode_through_nemo_gyms_gymnasium_agent(nemo_gym_stack, make_env, respond, solution, relu_code):
    url, replies, requests, env_server = nemo_gym_stack
    responses = [NO_CODE, respond(solution("level1/relu")), respond(relu_code(body="x"))]
    replies.extend(responses)
    row = {"responses_create_params": {"input": [{"role": "system", "content": "Be brief."}]},
           "kernel_gym": {"task": "level1/relu", "max_turns": 3, "seed": 0}}
    result = httpx.post(f"{url}/run", json=row, timeout=300).json()
    rewards = gym_rewards(make_env, responses, max_turns=3, score="correctness")
    info = result["info"]
    assert info["scores"] == rewards == [0.0, 1.0, 0.0], result
    returns = aggregate(rewards, 0.4, "sum")
    for t, ret in enumerate(returns):
        assert info["returns"][t] == pytest.approx(ret)  # turn t's return R_t
    assert result["reward"] == pytest.approx(sum(rewards))  # the agent sums the step rewards
    assert result["truncated"] and not result["terminated"]
    assert info["kernel_gym"]["error"] == "mismatch" and info["metrics"]["kernel/return"] == pytest.approx(0.4)
    assert len(requests) == 3
    first = requests[0]["input"]
    assert first[0]["content"] == "Be brief." and "ModelNew" in first[-1]["content"]
    assert "Result of turn 1" in requests[1]["input"][-1]["content"]
    assert env_server.session_state == {}  # the episode's env closed with its session


def test_a_row_without_a_label_fails_its_run(nemo_gym_stack):
    url, _, _, _ = nemo_gym_stack
    reply = httpx.post(f"{url}/run", json={"responses_create_params": {"input": []}}, timeout=60)
    assert reply.status_code >= 400
