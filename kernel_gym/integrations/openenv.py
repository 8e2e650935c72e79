"""OpenEnv adapter: kernel-gym episodes behind OpenEnv's environment protocol (openenv-core's own server).

`kernel-gym serve --protocol openenv` (or `create_openenv_app(...)` in your own process) serves
`KernelGymEnvironment`, an OpenEnv `Environment`, through openenv-core's `create_app`: every WebSocket session
(`/ws`, what OpenEnv's `EnvClient` speaks) gets its own `KernelRefineEnv`, and all of them share the server's one
evaluator (the sandbox pool and judge of this machine, Ray workers, or a `kernel-gym serve` behind it), so candidate
code never runs in the server's own process. OpenEnv's stateless HTTP endpoints work too: `POST /reset` returns a
task's prompt, `POST /step` evaluates one response as the first turn of a fresh episode.

- Action `KernelAction(response=...)`: the model's whole response (reasoning, then the solution in a fenced code
  block; the last block counts), exactly what `env.step` takes.
- Observation `KernelObservation`: `prompt` (what the model answers next: the task, the summarized earlier turns,
  the newest feedback), `feedback` (this turn's), `task`, `turn`, `max_turns`, and `info` (the env's step `info`,
  every key of docs/info.md; at the last turn with `scores` and `returns`). `reward` is the turn's score
  (per turn); `done` is True at `max_turns`.
- State `KernelState`: `episode_id`, `step_count`, `task`, `max_turns`, `scores` and `returns` (the discounted
  returns of the turns so far, `kernel_gym.rewards.aggregate`).
- Client `KernelGymClient(base_url=...)`: OpenEnv's `EnvClient` for these types (`.sync()` for a blocking one).

A reset may name the task: `client.reset(task="level1/relu", seed=0)`; every other env setting is the server's
(`--env-kwargs`, `--preset`), so a client cannot turn off checks or write files on the server.
"""

from __future__ import annotations

import functools
import hmac
import logging
from typing import Any

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, EnvironmentMetadata, Observation, State
from pydantic import Field

from kernel_gym.errors import ConfigError, TaskFormatError, UnknownNameError
from kernel_gym.rewards import aggregate

logger = logging.getLogger(__name__)

ENV_NAME = "kernel_gym"


class KernelAction(Action):
    """One turn's answer."""

    response: str = Field(description="The model's whole response: its reasoning, then the solution (a ModelNew) in "
                                      "a fenced code block; the last code block counts.")


class KernelObservation(Observation):
    """What the model sees next, and the verdict on its last answer (reward = this turn's score)."""

    prompt: str = Field(default="", description="The text to answer next: task, summarized history, newest feedback")
    feedback: str = Field(default="", description="This turn's feedback ('' after reset)")
    task: str = Field(default="", description="Task id")
    turn: int = Field(default=0, description="Turns taken so far (0 after reset)")
    max_turns: int = Field(default=0, description="Turns in this episode")
    info: dict[str, Any] = Field(default_factory=dict, description="The env's info dict (docs/info.md)")


class KernelState(State):
    """The episode so far."""

    task: str | None = None
    max_turns: int = 0
    scores: list[float] = Field(default_factory=list)
    returns: list[float] = Field(default_factory=list)


class KernelGymEnvironment(Environment[KernelAction, KernelObservation, KernelState]):
    """One `KernelRefineEnv` per OpenEnv session, evaluating through a shared evaluator.

    `env_kwargs` are `gym.make("KernelRefine-v0", ...)` keywords (task, max_turns, preset, checks, ...);
    `evaluator` is shared by every session (None: the process-wide evaluator for the env's device).
    """

    SUPPORTS_CONCURRENT_SESSIONS = True  # every session has its own env; the evaluator is made for sharing

    def __init__(self, *, env_kwargs: dict[str, Any] | None = None, evaluator: Any = None):
        super().__init__()
        from kernel_gym.integrations.episodes import make_env

        self.env = make_env(env_kwargs or {}, evaluator=evaluator)
        self._state = KernelState(max_turns=self.env.config.max_turns)
        self._started = False

    def reset(self, seed: int | None = None, episode_id: str | None = None, task: str | None = None,
              **kwargs: Any) -> KernelObservation:
        if kwargs:
            logger.info("kernel-gym openenv: reset ignores %s (only seed, episode_id and task)", sorted(kwargs))
        prompt, info = self.env.reset(seed=seed, options={"task": task} if task else None)
        self._started = True
        self._state = KernelState(episode_id=episode_id or info["episode_id"], step_count=0, task=info["task"],
                                  max_turns=info["max_turns"])
        return KernelObservation(prompt=prompt, task=info["task"], turn=0, max_turns=info["max_turns"], info=info,
                                 reward=None, done=False)

    def step(self, action: KernelAction, timeout_s: float | None = None, **kwargs: Any) -> KernelObservation:
        if not self._started:  # a stateless POST /step: one turn of a fresh episode on the server's task
            self.reset()
        prompt, reward, terminated, truncated, info = self.env.step(action.response)
        done = bool(terminated or truncated)
        scores = [*self._state.scores, float(info["score"])]
        self._state = self._state.model_copy(update={
            "step_count": info["turn"], "scores": scores,
            "returns": aggregate(scores, self.env.config.gamma, self.env.config.aggregation)})
        if done:
            self._started = False
        return KernelObservation(prompt=prompt, feedback=info["feedback"], task=info["task"], turn=info["turn"],
                                 max_turns=self._state.max_turns, info=info, reward=float(reward), done=done)

    @property
    def state(self) -> KernelState:
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        from kernel_gym import __version__

        return EnvironmentMetadata(
            name=ENV_NAME, version=__version__, author="kernel-gym",
            description="Multi-turn GPU-kernel optimization: answer with a ModelNew whose hot path runs your own "
                        "Triton or CUDA kernels; each turn is compiled, checked, timed and screened for reward "
                        "hacks in a sandbox; reward = the turn's score.")

    def close(self) -> None:
        self.env.close()  # the shared evaluator stays open (the env does not own it)


def create_openenv_app(*, env_kwargs: dict[str, Any] | None = None, evaluator: Any = None,
                       max_concurrent_envs: int = 8, token: str | None = None):
    """The FastAPI app (openenv-core's `create_app`) serving `KernelGymEnvironment` sessions.

    With `token`, every request and WebSocket handshake must carry `Authorization: Bearer <token>`
    (`KernelGymClient(..., token=...)` sends it).
    """
    factory = functools.partial(KernelGymEnvironment, env_kwargs=env_kwargs, evaluator=evaluator)
    functools.update_wrapper(factory, KernelGymEnvironment)  # openenv names the factory in its errors
    app = create_app(factory, KernelAction, KernelObservation, env_name=ENV_NAME,
                     max_concurrent_envs=max_concurrent_envs)
    for client_error in (UnknownNameError, ConfigError, TaskFormatError):  # an unknown task, a bad setting or task
        app.add_exception_handler(client_error, _bad_request)  # file: the client's to fix (not a 500)
    app.add_middleware(_QuietClose)
    if token:
        app.add_middleware(_BearerToken, token=token)
    return app


class _QuietClose:
    """openenv-core 0.3.0 closes a WebSocket whose client has already closed it, and starlette raises
    WebSocketDisconnect from that close: an ASGI traceback in the server's log at every normal end of a session.
    A disconnect raised out of a WebSocket session is its normal end here."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return
        from starlette.websockets import WebSocketDisconnect

        try:
            await self.app(scope, receive, send)
        except WebSocketDisconnect:
            logger.debug("kernel-gym openenv: a WebSocket session ended by its client")


async def _bad_request(request: Any, exc: Exception):
    from fastapi.responses import JSONResponse

    detail = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)  # (KeyError's str() quotes it)
    return JSONResponse(status_code=400, content={"error": type(exc).__name__, "detail": str(detail)})


class _BearerToken:
    """ASGI middleware: HTTP requests and WebSocket handshakes need `Authorization: Bearer <token>`."""

    def __init__(self, app, token: str):
        self.app, self.expected = app, f"Bearer {token}".encode()

    async def __call__(self, scope, receive, send):
        if scope["type"] in ("http", "websocket"):
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1008})
                    return
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json")]})
                await send({"type": "http.response.body", "body": b'{"error": "unauthorized"}'})
                return
        await self.app(scope, receive, send)


class KernelGymClient(EnvClient[KernelAction, KernelObservation, KernelState]):
    """OpenEnv's `EnvClient` for a kernel-gym server: `await client.reset(task=...)`, `await client.step(action)`."""

    def __init__(self, base_url: str, *, token: str | None = None, message_timeout_s: float = 900.0, **kwargs: Any):
        # an evaluation can take minutes (a load_inline build): OpenEnv's default message timeout is 60 s
        super().__init__(base_url, message_timeout_s=message_timeout_s, **kwargs)
        self._token = token

    async def connect(self) -> KernelGymClient:
        if self._token is None or self._ws is not None:
            await super().connect()
            return self
        from websockets.asyncio.client import connect as ws_connect

        self._ws = await ws_connect(self._ws_url, open_timeout=self._connect_timeout, max_size=self._max_message_size,
                                    additional_headers={"Authorization": f"Bearer {self._token}"})
        return self

    def _step_payload(self, action: KernelAction) -> dict[str, Any]:
        return {"response": action.response}

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[KernelObservation]:
        observation = KernelObservation(**payload.get("observation", {}), reward=payload.get("reward"),
                                        done=bool(payload.get("done", False)))
        return StepResult(observation=observation, reward=payload.get("reward"), done=observation.done)

    def _parse_state(self, payload: dict[str, Any]) -> KernelState:
        return KernelState(**payload)
