"""The env's side of one episode, for the environment standards whose own runners drive the conversation
(verifiers, NeMo Gym, SkyRL-gym): they generate each answer and hand it to the env, so their adapters need no
`Policy`, only the shared driver's label reader, env builder and `Episode` (`kernel_gym.integrations.episodes`),
and, after each step, the next user turn of the framework's conversation:

- `followup="feedback"` (default): the turn's feedback and what the next turn asks (`episodes.followup`), appended
  to the conversation as the frameworks' stock multi-turn environments do;
- `followup="observation"`: the env's whole next observation (the task, Kevin's summary of every earlier turn,
  the newest feedback), so the model sees the summaries even inside a growing conversation.

The summaries themselves are the env's (`gym.make(..., summarizer=...)`: extractive by default, an
OpenAI-compatible endpoint, or any callable), passed through the adapter's env settings like every other keyword.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kernel_gym.errors import ConfigError
from kernel_gym.integrations.episodes import Episode, episode_settings, make_env
from kernel_gym.integrations.shared_evaluator import shared_evaluator

FOLLOWUPS = ("feedback", "observation")


@dataclass(frozen=True)
class Turn:
    """One step as a framework's runner wants it."""

    reward: float
    """The env's step reward: the turn's score s_t (with `reward_mode="return"`: 0, then R_1 at the end)."""
    done: bool
    """The env ended the episode (at `max_turns`); its `info` then holds `scores` and `returns`."""
    message: str | None
    """The next user turn (see `followup`); None once the episode is over."""
    info: dict[str, Any]
    """The env's step `info` (docs/info.md)."""


def turn_numbers(info: dict[str, Any]) -> dict[str, Any]:
    """The plain numbers of one step's info that a framework logs per turn (JSON-safe)."""
    return {"turn": int(info["turn"]), "task": str(info["task"]), "score": float(info["score"]),
            "format_ok": bool(info.get("format_ok")), "compiled": bool(info.get("compiled")),
            "correct": bool(info.get("correct")), "speedup": float(info.get("speedup") or 0.0),
            "hacks": list(info.get("hacks") or []), "error": info.get("error") or "",
            "infra_failure": bool(info.get("infra_failure")),
            "summary_source": str(info.get("summary_source") or "")}


def resolve_evaluator(evaluator: Any = None, workers: int | None = None):
    """(evaluator, shared) for `make_env`: an evaluator object is used as it is; a spec string ("local",
    "ray[:address]", "http(s)://host:port") or None picks the process's shared evaluator for the env's device
    (None: $KERNEL_GYM_EVALUATOR, see `shared_evaluator`)."""
    if evaluator is None or isinstance(evaluator, str):
        return None, lambda device: shared_evaluator(device, evaluator, workers)
    return evaluator, shared_evaluator


class HubEpisode:
    """One KernelRefine episode driven by a framework's runner: `start()` -> the first prompt, then `step(text)`
    per answer until `Turn.done`; `record()` sums it up; `close()` at the end (a shared evaluator stays open).

    `label` names the episode (a task id, or a JSON object / dict with "task" and any `gym.make` keyword, plus
    "seed"); `defaults` are the adapter's `gym.make` keywords, which the label's own keys override.
    """

    def __init__(self, label: Any, *, defaults: dict[str, Any] | None = None, evaluator: Any = None,
                 eval_workers: int | None = None, followup: str = "feedback", where: str = "a label"):
        if followup not in FOLLOWUPS:
            raise ConfigError(f"followup must be one of {FOLLOWUPS}, got {followup!r}")
        settings, self.seed = episode_settings(label, defaults, where)
        ev, shared = resolve_evaluator(evaluator, eval_workers)
        self.episode = Episode(make_env(settings, evaluator=ev, shared=shared))
        self.followup = followup

    @property
    def max_turns(self) -> int:
        return int(self.episode.env.config.max_turns)

    @property
    def over(self) -> bool:
        return self.episode.done

    def start(self) -> str:
        """Reset the env; its first observation (the task's prompt)."""
        self.episode.reset(self.seed)
        return self.episode.observation

    def step(self, text: str) -> Turn:
        """Evaluate one answer (blocking: run it off an event loop)."""
        _, reward, _, _, info = self.episode.step(text)
        done = self.episode.done
        message = None if done else (self.episode.followup() if self.followup == "feedback"
                                     else self.episode.observation)
        return Turn(reward=float(reward), done=done, message=message, info=info)

    def record(self) -> dict[str, Any]:
        """The episode so far: its task, per-turn scores and returns R_t (`aggregate(scores, gamma, aggregation)`),
        the whole conversation's reward (`Episode.reward()`), whether the env ended it, and each turn's numbers."""
        e = self.episode
        return {"task": e.infos[0]["task"] if e.infos else None, "scores": e.scores, "returns": e.returns(),
                "reward": e.reward() if e.infos else 0.0, "complete": e.done,
                "turns": [turn_numbers(info) for info in e.infos]}

    def close(self) -> None:
        self.episode.close()


def episode_metrics(record: dict[str, Any]) -> dict[str, float]:
    """Numbers a framework logs per episode, the same keys for every episode."""
    turns = record["turns"]
    return {"kernel/return": float(record["returns"][0]) if record["returns"] else 0.0,
            "kernel/reward": float(record["reward"]), "kernel/turns": float(len(turns)),
            "kernel/best_score": max(record["scores"], default=0.0),
            "kernel/correct": float(any(t["correct"] for t in turns)),
            "kernel/best_speedup": max((t["speedup"] for t in turns if t["correct"]), default=0.0),
            "kernel/hacks": float(sum(len(t["hacks"]) for t in turns)),
            "kernel/infra_failures": float(sum(t["infra_failure"] for t in turns))}
