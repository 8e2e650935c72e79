"""The policy interface: a batch of requests (one per live trajectory) in, one response text per request out."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kernel_gym.errors import ConfigError, KernelGymError, UnknownNameError


class PolicyError(KernelGymError, RuntimeError):
    """A policy could not produce responses (a server that keeps failing, a replay file without an answer)."""


@dataclass(frozen=True)
class Request:
    """What a policy answers: one turn of one trajectory."""

    prompt: str
    """The observation the response answers: the task prompt on turn 1, then the env's refinement observation
    (task, earlier attempts, their feedback). Each turn is one user message: the history is inside it."""
    task: str
    """The task id."""
    turn: int = 1
    """1-based turn of the trajectory."""
    trajectory: int = 0
    """Index of the trajectory among its configuration's k trajectories for this task (0-based)."""
    config: str = ""
    """The configuration label, "KxT" (k trajectories of T turns), e.g. "32x4"."""
    seed: int = 0
    """Sampling seed of this request, derived from the run's seed, the configuration, task, trajectory and turn."""
    system_prompt: str | None = None
    """An optional system message that chat policies put before the prompt."""

    def messages(self, system_prompt: str | None = None) -> list[dict[str, str]]:
        """The chat for a chat-template or chat-completions policy: [system], user."""
        system = system_prompt if system_prompt is not None else self.system_prompt
        chat = [{"role": "system", "content": system}] if system else []
        return chat + [{"role": "user", "content": self.prompt}]


class Policy:
    """Turns requests into responses. Subclasses implement `generate`; `close` frees what they hold."""

    name: str = "policy"
    batched: bool = False
    """True when answering many requests in one call is much cheaper than one at a time (a local model): the
    rollout then collects one request per live trajectory into each call."""

    def generate(self, requests: Sequence[Request]) -> list[str]:
        """One response text per request, in order (the whole response: reasoning and a fenced code block)."""
        raise NotImplementedError

    def close(self) -> None:
        """Free models, threads or connections (nothing by default)."""

    def __enter__(self) -> Policy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_FACTORIES: dict[str, Callable[..., Policy]] = {}


def register_policy(kind: str) -> Callable[[Callable[..., Policy]], Callable[..., Policy]]:
    """Register `factory(arg: str, **options) -> Policy` for specs `kind:arg` (its docstring says what arg is)."""

    def wrap(factory: Callable[..., Policy]) -> Callable[..., Policy]:
        _FACTORIES[kind] = factory
        return factory

    return wrap


def list_policies() -> list[str]:
    """The kinds a spec may start with: `replay`, `scripted`, `openai`, `hf`, ..."""
    _load_builtins()
    return sorted(_FACTORIES)


def make_policy(spec: str | Policy, **options: object) -> Policy:
    """A policy from a spec `KIND:ARG` (e.g. `replay:run.jsonl`, `openai:http://localhost:8000/v1`, `hf:gpt2`).

    `options` go to the kind's factory (sampling parameters and the like); a Policy passes through unchanged.
    """
    if isinstance(spec, Policy):
        return spec
    _load_builtins()
    kind, sep, arg = str(spec).partition(":")
    if kind not in _FACTORIES:
        raise UnknownNameError("policy kind", kind, list(_FACTORIES))
    if not sep or not arg:
        raise ConfigError(f"a policy spec is KIND:ARG, e.g. 'replay:responses.jsonl'; got {spec!r}")
    return _FACTORIES[kind](arg, **options)


def _load_builtins() -> None:
    # Importing the modules registers their factories; none of them imports a heavy library at import time.
    from kernel_gym.policies import hf, openai_compat, replay, scripted  # noqa: F401


def as_text(response: object) -> str:
    """A policy's output as the env's action: None becomes "", bytes are decoded, anything else str()'d."""
    if response is None:
        return ""
    if isinstance(response, bytes):
        return response.decode("utf-8", errors="replace")
    return response if isinstance(response, str) else str(response)
