"""Summaries of a turn's reasoning for later observations. Deterministic and extractive by default.

Three kinds, all usable as `gym.make(..., summarizer=...)`:
- the extractive default (`extractive_summary`): the first sentence plus the most technical later ones;
- `ModelSummarizer(generate)`: the policy summarizes its own reasoning, as in Kevin. `generate` is any callable
  `messages -> text` (OpenAI chat format) wrapping the trainer's generation engine (OpenRLHF's `llm_engine`, verl's
  server, TRL's model: `kernel_gym.integrations.trl` has one);
- `OpenAISummarizer(base_url, model)`: any OpenAI-compatible chat-completions endpoint (evaluation runs), also
  given as a dict: `summarizer={"base_url": "http://127.0.0.1:8000/v1", "model": "m"}`.
A model's summary is cached by the reasoning's text; when the call fails (an exception, an empty answer), the turn
gets the extractive summary and `info["summary_source"] == "fallback"` with the failure in `info["summary_error"]`.
Any other callable `(reasoning: str) -> str` works too (`summary_source` "custom").
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import threading
import urllib.request
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kernel_gym.errors import ConfigError

logger = logging.getLogger(__name__)

Summarizer = Callable[[str], str]
Messages = list[dict[str, str]]

SUMMARY_PROMPT = (
    "Below is your reasoning from an earlier attempt at optimizing a GPU kernel. Summarize it in at most {words} "
    "words for your own later turns: the approach you took, why, and what you meant to check or try next. "
    "Answer with the summary only.\n\n<reasoning>\n{reasoning}\n</reasoning>"
)

_KEYWORDS = re.compile(
    r"\b(because|bottleneck|coalesc\w*|shared memory|tile|tiling|block|fus\w+|vectori\w+|occupancy|register\w*|"
    r"bandwidth|memory[- ]bound|compute[- ]bound|reduction|warp|latency|error|bug|fix\w*|wrong|instead|speed\w*|"
    r"faster|slower|launch|grid|mask\w*|precision|atomic\w*)\b", re.I)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n{2,}|\n(?=[-*#\d])")
_THINK = re.compile(r"<think>.*?</think>", re.S)


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
    return _cut(summary, max_chars)


@dataclass(frozen=True)
class SummaryResult:
    """One turn's summary and where it came from."""

    text: str
    source: str
    """"extractive", "policy", "endpoint", "custom", "fallback" (a model call failed) or "none" (no reasoning)."""
    error: str | None = None
    """Why the model's summary was not used (source "fallback"), else None."""


class ExtractiveSummarizer:
    """The default: `extractive_summary` within `max_chars`."""

    source = "extractive"

    def __init__(self, max_chars: int = 400):
        self.max_chars = max_chars

    def summarize(self, reasoning: str) -> SummaryResult:
        return SummaryResult(extractive_summary(reasoning, self.max_chars), self.source)

    def __call__(self, reasoning: str) -> str:
        return self.summarize(reasoning).text


class ModelSummarizer:
    """A model summarizes the reasoning (`generate(messages) -> text`); cached by text; extractive on failure.

    `prefill(reasoning, text)` stores a summary made elsewhere (a trainer that batches the summary requests of all
    its episodes in one generation call), so the env's own call finds it in the cache.
    """

    source = "policy"

    def __init__(self, generate: Callable[[Messages], str], *, max_chars: int = 400, prompt: str = SUMMARY_PROMPT,
                 cache_size: int = 4096, source: str | None = None):
        self.generate, self.max_chars, self.prompt, self.cache_size = generate, max_chars, prompt, cache_size
        self.source = source or self.source
        self._cache: OrderedDict[str, str] = OrderedDict()
        self._failed: OrderedDict[str, str] = OrderedDict()  # reasoning key -> why its summary request failed
        self._lock = threading.Lock()

    def messages(self, reasoning: str) -> Messages:
        """The request for one summary (OpenAI chat format)."""
        words = max(20, self.max_chars // 6)
        return [{"role": "user", "content": self.prompt.format(words=words, reasoning=reasoning)}]

    def summarize(self, reasoning: str) -> SummaryResult:
        key = _key(reasoning)
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return SummaryResult(self._cache[key], self.source)
            failed = self._failed.pop(key, None)
        if failed is not None:  # the batched request already failed (prefill_summaries): its reason, not a retry
            return SummaryResult(extractive_summary(reasoning, self.max_chars), "fallback", failed[:500])
        try:
            text = clean_summary(self.generate(self.messages(reasoning)), self.max_chars)
            if not text:
                raise ValueError("the model's summary was empty")
        except Exception as e:  # noqa: BLE001 - any failure of the model call falls back, and is reported in info
            logger.warning("kernel-gym: %s summary failed (%s: %s); using the extractive summary", self.source,
                           type(e).__name__, e)
            return SummaryResult(extractive_summary(reasoning, self.max_chars), "fallback",
                                 f"{self.source}: {type(e).__name__}: {e}"[:500])
        self.prefill(reasoning, text)
        return SummaryResult(text, self.source)

    def prefill(self, reasoning: str, text: str) -> None:
        with self._lock:
            self._cache[_key(reasoning)] = clean_summary(text, self.max_chars)
            self._cache.move_to_end(_key(reasoning))
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)

    def fail(self, reasoning: str, why: str) -> None:
        """A summary asked for elsewhere (a trainer's batched request) failed: the step's fallback says why."""
        with self._lock:
            self._failed[_key(reasoning)] = f"{self.source}: {why}"
            while len(self._failed) > self.cache_size:
                self._failed.popitem(last=False)

    def cached(self, reasoning: str) -> bool:
        with self._lock:
            return _key(reasoning) in self._cache

    def __call__(self, reasoning: str) -> str:
        return self.summarize(reasoning).text


class OpenAISummarizer(ModelSummarizer):
    """Summaries from an OpenAI-compatible endpoint: POST {base_url}/chat/completions.

    The API key is read from the environment variable `api_key_env` when it is set (local servers need none).
    """

    source = "endpoint"

    def __init__(self, base_url: str, model: str, *, api_key_env: str = "OPENAI_API_KEY", timeout_s: float = 60.0,
                 max_tokens: int = 256, temperature: float = 0.0, **kwargs: Any):
        if not base_url or not model:
            raise ConfigError("an OpenAI-compatible summarizer needs base_url and model")
        self.base_url, self.model, self.api_key_env = base_url.rstrip("/"), model, api_key_env
        self.timeout_s, self.max_tokens, self.temperature = timeout_s, max_tokens, temperature
        super().__init__(self._chat, **kwargs)

    def _chat(self, messages: Messages) -> str:
        body = json.dumps({"model": self.model, "messages": messages, "max_tokens": self.max_tokens,
                           "temperature": self.temperature}).encode()
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        request = urllib.request.Request(f"{self.base_url}/chat/completions", data=body, headers=headers,
                                         method="POST")
        with urllib.request.urlopen(request, timeout=self.timeout_s) as response:  # noqa: S310 - a configured URL
            data = json.loads(response.read())
        return data["choices"][0]["message"]["content"] or ""


def make_summarizer(spec: Any, max_chars: int = 400) -> Any:
    """`gym.make(summarizer=...)` -> a summarizer: None or "extractive" (the default), a callable (kept as it is),
    or a dict of `OpenAISummarizer` keywords ({"base_url": ..., "model": ..., "api_key_env": ...})."""
    if spec is None or spec == "extractive":
        return ExtractiveSummarizer(max_chars)
    if isinstance(spec, dict):
        kwargs = dict(spec)
        kwargs.setdefault("max_chars", max_chars)
        try:
            return OpenAISummarizer(**kwargs)
        except TypeError as e:
            raise ConfigError(f"summarizer dict: {e} (keys: base_url, model, api_key_env, timeout_s, max_tokens, "
                              "temperature, max_chars, prompt, cache_size)") from e
    if callable(spec):
        return spec
    raise ConfigError(f"summarizer must be None, 'extractive', a callable or a dict of endpoint settings, got {spec!r}")


def summarize_turn(summarizer: Any, reasoning: str, max_chars: int = 400) -> SummaryResult:
    """One turn's summary from any summarizer; a failing plain callable falls back to the extractive summary."""
    if not reasoning:
        return SummaryResult("", "none")
    if hasattr(summarizer, "summarize"):
        return summarizer.summarize(reasoning)
    try:
        return SummaryResult(str(summarizer(reasoning)), "custom")
    except Exception as e:  # noqa: BLE001 - a user's summarizer must not end the episode
        logger.warning("kernel-gym: the summarizer failed (%s: %s); using the extractive summary", type(e).__name__, e)
        return SummaryResult(extractive_summary(reasoning, max_chars), "fallback", f"custom: {type(e).__name__}: {e}"[:500])


def clean_summary(text: str, max_chars: int) -> str:
    """A model's answer as a summary: its thinking block dropped, whitespace collapsed, cut to max_chars."""
    text = _THINK.sub(" ", text or "")
    text = text.rsplit("</think>", 1)[-1]
    return _cut(re.sub(r"\s+", " ", text).strip(), max_chars)


def _cut(text: str, max_chars: int) -> str:
    return text if len(text) <= max_chars else text[: max_chars - 3].rstrip() + "..."


def _key(reasoning: str) -> str:
    return hashlib.sha256(reasoning.encode("utf-8", "replace")).hexdigest()
