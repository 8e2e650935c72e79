"""What every trainer adapter (OpenRLHF, verl, TRL) shares, with no framework imported: a dataset label read as
`gym.make` keywords, and the follow-up user turn that carries a step's feedback to the policy's next answer."""

from __future__ import annotations

import json
from typing import Any

from kernel_gym.errors import ConfigError

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
