"""NeMo Gym adapter: KernelRefine episodes as a NeMo Gym resources server (NVIDIA NeMo RL; nemo-gym 0.7.0).

`KernelGymResourcesServer` is a `GymnasiumServer` (NeMo Gym's resources-server base for Gymnasium-style envs,
`resources_servers.gymnasium`), played by NeMo Gym's own `gymnasium_agent` (`responses_api_agents.gymnasium_agent`):
for each dataset row the agent's `/run` posts `/reset` (one `KernelRefineEnv` episode per session cookie), then per
turn asks the model server (`/v1/responses`) and posts the answer to `/step`, until the env ends the episode.

- A row (NeMo Gym's JSONL) names its episode with a top-level `kernel_gym` key next to `responses_create_params`:
  a task id or a JSON object / dict with "task", any `gym.make` keyword and "seed". `responses_create_params.input`
  may hold a system message; `/reset` returns the env's own prompt, which the agent appends as the user turn.
- Server config (its YAML block, see examples/nemo_gym/kernel_gym.yaml): `env` (gym.make keywords, the defaults of
  every episode), `evaluator` ("local", "ray[:address]", "http(s)://host:port"; null: $KERNEL_GYM_EVALUATOR),
  `eval_workers`, `followup` ("feedback", or "observation": the env's whole observation with Kevin's summaries).
- `/step` returns the env's step: `reward` = the turn's score s_t (= `gym.make`'s), `truncated` at `max_turns`, the
  next user turn as `observation`, and `info`: the turn's numbers, plus at the end the episode's `scores` and per-turn
  `returns` R_t = `kernel_gym.rewards.aggregate(scores, gamma, aggregation)[t]` and `metrics`. The agent's run
  response carries the last `info` and `reward` = Σ s_t (the agent sums step rewards; `env: {reward_mode: return}`
  makes it R_1).

Evaluation never runs in the server's request handlers: steps run on a thread pool and send their jobs to the
evaluator shared by every session of the process.
"""

from __future__ import annotations

import logging
from typing import Any

from nemo_gym.base_resources_server import BaseResourcesServerConfig
from nemo_gym.openai_utils import NeMoGymResponse
from pydantic import Field
from resources_servers.gymnasium import GymnasiumServer, extract_text

from kernel_gym.integrations.hub_episode import HubEpisode, episode_metrics, turn_numbers
from kernel_gym.integrations.shared_evaluator import offload

logger = logging.getLogger(__name__)

LABEL_KEY = "kernel_gym"
"""The key of a row (a top-level field beside `responses_create_params`) that holds the episode's label."""


class KernelGymResourcesServerConfig(BaseResourcesServerConfig):
    """The server's YAML block."""

    env: dict[str, Any] = Field(default_factory=dict, description="gym.make keywords, the defaults of every episode")
    evaluator: str | None = Field(default=None, description="'local', 'ray[:address]' or 'http(s)://host:port'")
    eval_workers: int | None = Field(default=None, description="sandbox workers of a local evaluator")
    followup: str = Field(default="feedback", description="'feedback' or 'observation' (with Kevin's summaries)")


class KernelGymResourcesServer(GymnasiumServer):
    """One KernelRefine episode per NeMo Gym session (see the module docstring)."""

    config: KernelGymResourcesServerConfig
    evaluator: Any = Field(default=None, exclude=True)
    """An evaluator object shared by every session (else `config.evaluator`'s shared one)."""

    async def reset(self, metadata: dict, session_id: str | None = None) -> tuple[str | None, dict]:
        self._cleanup_session(session_id)
        hub = HubEpisode(metadata.get(LABEL_KEY), defaults=self.config.env,
                         evaluator=self.evaluator if self.evaluator is not None else self.config.evaluator,
                         eval_workers=self.config.eval_workers, followup=self.config.followup,
                         where=f"a NeMo Gym row's {LABEL_KEY!r}")
        self.session_state[session_id] = hub
        observation = await offload(hub.start)
        return observation, {"max_turns": hub.max_turns}

    async def step(self, action: NeMoGymResponse, metadata: dict,
                   session_id: str | None = None) -> tuple[str | None, float, bool, bool, dict]:
        hub: HubEpisode = self.session_state[session_id]
        turn = await offload(hub.step, extract_text(action))
        info: dict[str, Any] = {LABEL_KEY: turn_numbers(turn.info)}
        if turn.done:
            record = hub.record()
            info.update(scores=record["scores"], returns=record["returns"], metrics=episode_metrics(record))
        terminated, truncated = bool(turn.info.get("terminated", False)), turn.done
        return turn.message, turn.reward, terminated, truncated, info

    def _cleanup_session(self, session_id: str | None) -> None:
        hub = self.session_state.get(session_id)
        if isinstance(hub, HubEpisode):
            hub.close()  # the shared evaluator stays open
        super()._cleanup_session(session_id)


if __name__ == "__main__":  # NeMo Gym starts a resources server by running its entrypoint file
    KernelGymResourcesServer.run_webserver()
