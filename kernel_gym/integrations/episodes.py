"""What every trainer adapter (OpenRLHF, verl, TRL) shares, with no framework imported: a dataset label read as
`gym.make` keywords, the follow-up user turn that carries a step's feedback to the policy's next answer, and the
policy's own summary of each turn (Kevin) requested from an async trainer's engine before the step."""

from __future__ import annotations

import json
import logging
from typing import Any

from kernel_gym.errors import ConfigError

logger = logging.getLogger(__name__)

FOLLOWUP = ("Result of turn {turn}: {feedback}\n\nTurn {next} of {max_turns}: improve on your best correct kernel "
            "(or fix the error above) and answer with your reasoning and the complete solution in one ```python "
            "code block.")


def followup(info: dict[str, Any], max_turns: int) -> str:
    """The user turn after a step: its feedback and what the next turn asks."""
    return FOLLOWUP.format(turn=info["turn"], feedback=info["feedback"], next=info["turn"] + 1, max_turns=max_turns)


def parse_label(label: Any, where: str = "a label") -> dict[str, Any]:
    """A label -> gym.make keywords (+ `seed`): a dict or JSON object string with at least "task", or a bare task id.
    A chat prompt (a list of messages) is read from its last message's content. `where` names it in errors."""
    if isinstance(label, list) and label and isinstance(label[-1], dict):
        label = label[-1].get("content", "")
    if isinstance(label, dict):
        data = dict(label)
    elif isinstance(label, str) and label.strip().startswith("{"):
        data = json.loads(label)
    elif isinstance(label, str) and label.strip():
        data = {"task": label.strip()}
    else:
        raise ConfigError(f"{where} must be a task id or a JSON object (or dict) with a 'task' key, got {label!r}")
    if not isinstance(data, dict) or not data.get("task"):
        raise ConfigError(f"{where} needs a 'task' key, got {label!r}")
    return data


# ---- Kevin's self-summaries from an async trainer's own engine ------------------------------------------------------
def _made_by_the_trainer(messages: Any) -> str:
    raise RuntimeError("no summary from the trainer's engine for this turn (its request failed or was not made)")


def policy_summarizer(max_chars: int = 400) -> Any:
    """The env's summarizer when the trainer's async engine writes the summaries (`prefill_summary` before each step):
    a `ModelSummarizer` whose own call only fails, so a turn the trainer could not summarize gets the extractive
    summary, with `info["summary_source"] == "fallback"` and the reason in `info["summary_error"]`."""
    from kernel_gym.feedback.summarize import ModelSummarizer

    return ModelSummarizer(_made_by_the_trainer, max_chars=max_chars)


async def prefill_summary(env: Any, action_text: str, generate: Any) -> None:
    """Before `env.step(action_text)`: the policy's summary of the action's reasoning, from `await generate(messages)
    -> text` (the trainer's engine, on its event loop), put in the env's summarizer cache where the step finds it.
    Does nothing unless the env's summarizer came from `policy_summarizer`; a failed request only logs (the step then
    falls back and says so in `info`)."""
    from kernel_gym.actions import parse_action
    from kernel_gym.feedback.summarize import clean_summary

    summarizer = getattr(env, "summarizer", None)
    if getattr(summarizer, "generate", None) is not _made_by_the_trainer:
        return
    cfg = env.config
    reasoning = parse_action(action_text, backend=cfg.backend, max_response_chars=cfg.max_response_chars,
                             max_code_chars=cfg.max_code_chars).reasoning
    if not reasoning or summarizer.cached(reasoning):
        return
    try:
        text = clean_summary(await generate(summarizer.messages(reasoning)), summarizer.max_chars)
    except Exception as e:  # noqa: BLE001 - the env's step falls back to the extractive summary and reports it
        logger.warning("kernel-gym: the policy's summary request failed (%s: %s)", type(e).__name__, e)
        return
    if text:
        summarizer.prefill(reasoning, text)
