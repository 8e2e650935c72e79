"""Summaries of a turn's reasoning for later observations. Deterministic and extractive by default.

A summarizer is any callable `(reasoning: str) -> str`; pass your own (e.g. one that asks the policy to
summarize itself, as Kevin does) as `gym.make(..., summarizer=fn)`.
"""

from __future__ import annotations

import re
from collections.abc import Callable

Summarizer = Callable[[str], str]

_KEYWORDS = re.compile(
    r"\b(because|bottleneck|coalesc\w*|shared memory|tile|tiling|block|fus\w+|vectori\w+|occupancy|register\w*|"
    r"bandwidth|memory[- ]bound|compute[- ]bound|reduction|warp|latency|error|bug|fix\w*|wrong|instead|speed\w*|"
    r"faster|slower|launch|grid|mask\w*|precision|atomic\w*)\b", re.I)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n{2,}|\n(?=[-*#\d])")


def extractive_summary(reasoning: str, max_chars: int = 400) -> str:
    """The first sentence plus the most technical later sentences, in their original order, within max_chars."""
    text = re.sub(r"<think>|</think>", " ", reasoning or "")
    sentences = [re.sub(r"\s+", " ", s).strip(" -*#") for s in _SENTENCE.split(text)]
    sentences = [s for s in sentences if len(s) > 3]
    if not sentences:
        return ""
    ranked = sorted(range(1, len(sentences)), key=lambda i: (-len(_KEYWORDS.findall(sentences[i])), i))
    chosen, used = [0], len(sentences[0])
    for i in ranked:
        if not _KEYWORDS.search(sentences[i]):
            break
        if used + len(sentences[i]) + 1 > max_chars:
            continue
        chosen.append(i)
        used += len(sentences[i]) + 1
    summary = " ".join(sentences[i] for i in sorted(chosen))
    return summary if len(summary) <= max_chars else summary[: max_chars - 3].rstrip() + "..."
