"""An optional LLM reviewer: is a kernel a genuine implementation (not a PyTorch wrapper, a decoy or a hack), and how
good is it? The reward survey's "quality" signal, and a review flag beside the hack checks. (Not the trusted judge of
kernel_gym/judge/, which decides verdicts: a reviewer only gives an opinion. Its config keyword `judge=`, its
`info["judge"]` entry and its `judge`/`judge_genuine` signals keep their names, which logs and scores use.)

The reviewer is any policy (kernel_gym.policies): an OpenAI-compatible endpoint ("openai:URL") or a local
transformers model ("hf:MODEL"), prompted with a jinja2 rubric (templates/review.j2, or your own). Its reply is parsed
for `{"genuine": bool, "quality": 0..10, "reason": str}` (a JSON object anywhere in the reply, or `genuine: yes`,
`quality: 7/10` lines) and becomes

    judge = quality / 10 if genuine else 0          (in [0, 1])

Verdicts are cached per (rubric, reviewer, task, code) hash in memory and, with `cache_dir`, on disk. The reviewer
never stops or stalls the env: a call has a hard deadline (`timeout_s`), and a failure — connection refused, HTTP
error, timeout, an unparseable reply — gives no signal (`score` None) with a note saying why; after the endpoint fails
(not a bad reply) the reviewer is not asked again for `retry_after_s`, so a reviewer that is down costs at most one
deadline per that period.

A reviewer pickles by its configuration (into `gym.vector.AsyncVectorEnv` sub-envs, Ray actors, ...): a policy built
from a spec ("openai:URL", "hf:MODEL") is rebuilt lazily where the reviewer is unpickled (a local model is loaded
there on first use, never pickled) and the disk cache is re-opened from its path; a Policy object passed in is
pickled as itself. The in-memory cache, the worker threads and the pause after a failure are not carried.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2

from kernel_gym.errors import ConfigError
from kernel_gym.policies.base import Policy, Request, make_policy

logger = logging.getLogger(__name__)

_TEMPLATES = jinja2.Environment(autoescape=False, undefined=jinja2.StrictUndefined, keep_trailing_newline=False)
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_GENUINE = re.compile(r"genuine\W{0,5}(yes|no|true|false)\b", re.IGNORECASE)
_QUALITY = re.compile(r"quality\W{0,5}(\d+(?:\.\d+)?)(?:\s*/\s*10)?", re.IGNORECASE)
_TRUE, _FALSE = ("true", "yes", "1"), ("false", "no", "0")


@dataclass(frozen=True)
class ReviewVerdict:
    """The reviewer's answer for one kernel; `score` None means no signal (`note` says why)."""

    score: float | None
    genuine: bool | None = None
    quality: float | None = None
    reason: str = ""
    note: str = ""
    cached: bool = False

    def info(self) -> dict[str, Any]:
        return asdict(self)


class ReviewReplyError(ValueError):
    """The reviewer's reply holds no usable verdict."""


def _as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    return True if text in _TRUE else False if text in _FALSE else None


def _as_quality(value: Any) -> float | None:
    if isinstance(value, str):
        m = re.match(r"\s*(\d+(?:\.\d+)?)\s*(?:/\s*10)?\s*$", value)
        value = float(m.group(1)) if m else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if 0.0 <= float(value) <= 10.0 else None


def _json_objects(text: str) -> list[dict[str, Any]]:
    decoder, found = json.JSONDecoder(), []
    for start in [m.start() for m in re.finditer(r"\{", text)]:
        try:
            obj, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            found.append(obj)
    return found


def parse_verdict(text: str) -> tuple[bool, float | None, str]:
    """(genuine, quality 0..10 or None, reason) from a reviewer's reply; raises ReviewReplyError when there is none.

    The last JSON object with a `genuine` key wins (models often restate the format before answering); failing
    that, `genuine: yes/no` and `quality: N` lines. A genuine verdict needs a quality; a non-genuine one does not."""
    text = _THINK.sub("", text or "")
    for obj in reversed(_json_objects(text)):
        lowered = {str(k).lower(): v for k, v in obj.items()}
        genuine = _as_bool(lowered.get("genuine"))
        if genuine is None:
            continue
        quality = _as_quality(lowered.get("quality", lowered.get("score")))
        if genuine and quality is None:
            continue
        return genuine, quality, str(lowered.get("reason", ""))[:500]
    g, q = _GENUINE.search(text), _QUALITY.search(text)
    if g:
        genuine, quality = _as_bool(g.group(1)), _as_quality(q.group(1)) if q else None
        if genuine is not None and (quality is not None or not genuine):
            return genuine, quality, ""
    raise ReviewReplyError(f"no verdict in the reviewer's reply: {text.strip()[:200]!r}")


def verdict_score(genuine: bool, quality: float | None) -> float:
    """judge = quality / 10 when genuine, else 0."""
    return round(quality / 10.0, 6) if genuine and quality is not None else 0.0


_POLICY_DEFAULTS = {"openai": {"temperature": 0.0, "retries": 0, "max_tokens": 1024},
                    "hf": {"temperature": 0.0, "max_new_tokens": 1024, "batch_size": 1}}


class LLMReviewer:
    """Rates kernels with an LLM; never raises from `review`.

    | argument | default | meaning |
    |---|---|---|
    | policy | — | "openai:URL", "hf:MODEL", or a Policy object |
    | template | None | a jinja2 rubric (text, or a path to a file); None: the packaged templates/review.j2 |
    | timeout_s | 30 | hard deadline of one review (the endpoint's own timeout too) |
    | retry_after_s | 60 | after the endpoint fails, answer "no signal" without asking for this long |
    | cache_dir | None | a folder for verdicts on disk (one JSON file per hash), shared across runs |
    | max_code_chars | 24000 | longest code or reference shown (cut beyond) |
    | **options | | passed to the policy (model, api_key, max_tokens, system_prompt, ...) |
    """

    def __init__(self, policy: str | Policy, *, template: str | None = None, timeout_s: float = 30.0,
                 retry_after_s: float = 60.0, cache_dir: str | Path | None = None, max_code_chars: int = 24_000,
                 **options: Any):
        spec: tuple[str, dict[str, Any]] | None = None
        if isinstance(policy, str):
            kind = policy.partition(":")[0]
            defaults = dict(_POLICY_DEFAULTS.get(kind, {}))
            if kind == "openai":
                defaults["timeout_s"] = timeout_s
            spec = (policy, {**defaults, **options})
            try:
                policy = make_policy(spec[0], **spec[1])
            except TypeError as e:  # an option the policy does not take
                raise ConfigError(f"LLM reviewer (judge=) {policy!r}: {e}") from None
        elif not isinstance(policy, Policy):
            raise ConfigError(f"an LLM reviewer's (judge=) policy must be a spec like 'openai:URL' or a Policy, "
                              f"got {policy!r}")
        if template is None:
            text = (resources.files("kernel_gym.preference") / "templates" / "review.j2").read_text(encoding="utf-8")
        elif "\n" not in template and Path(template).is_file():
            text = Path(template).read_text(encoding="utf-8")
        else:
            text = template
        self._setup({"spec": spec, "policy": policy, "template": text, "timeout_s": float(timeout_s),
                     "retry_after_s": float(retry_after_s), "max_code_chars": max_code_chars,
                     "cache_dir": Path(cache_dir).expanduser() if cache_dir else None,
                     # a new rubric or reviewer: a new cache
                     "identity": hashlib.sha256(f"{text}\0{policy.name}".encode()).hexdigest()})

    def _setup(self, state: dict[str, Any]) -> None:
        self._spec: tuple[str, dict[str, Any]] | None = state["spec"]
        """(spec, policy options) when the policy was built from a spec: how an unpickled copy rebuilds it."""
        self._policy: Policy | None = state["policy"]
        self._template_text = state["template"]
        self.template = _TEMPLATES.from_string(state["template"])
        self.timeout_s, self.retry_after_s = state["timeout_s"], state["retry_after_s"]
        self.max_code_chars, self.cache_dir = state["max_code_chars"], state["cache_dir"]
        self._identity = state["identity"]
        self._memory: dict[str, ReviewVerdict] = {}
        self._lock = threading.Lock()
        self._down_until, self._last_failure = 0.0, ""
        self._pool: ThreadPoolExecutor | None = None
        self.calls = 0
        """Requests sent to the reviewer (cache hits excluded)."""

    # ---- pickling: by configuration (AsyncVectorEnv sub-envs, Ray actors) -----------------------------------
    def __getstate__(self) -> dict[str, Any]:
        """The configuration only: a spec-built policy is rebuilt lazily where the reviewer is unpickled (a local model
        is never pickled); a Policy object passed in is pickled as itself; caches in memory, threads and the pause
        after a failure stay behind; the disk cache is re-opened from its (absolute) path."""
        return {"spec": self._spec, "policy": None if self._spec is not None else self._policy,
                "template": self._template_text, "timeout_s": self.timeout_s, "retry_after_s": self.retry_after_s,
                "max_code_chars": self.max_code_chars, "identity": self._identity,
                "cache_dir": None if self.cache_dir is None else self.cache_dir.absolute()}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._setup(state)

    def __repr__(self) -> str:  # stable across runs and free of api keys (a rollout's run.json records env settings)
        name = self._spec[0] if self._spec is not None else self._policy.name
        return f"LLMReviewer({name!r}, rubric={self._identity[:12]})"

    @property
    def policy(self) -> Policy:
        """The reviewing policy; after unpickling, built from its spec on first use (a local model loads then)."""
        if self._policy is None:
            with self._lock:
                if self._policy is None:
                    spec, options = self._spec
                    self._policy = make_policy(spec, **options)
        return self._policy

    @policy.setter
    def policy(self, value: Policy) -> None:  # a policy set by hand is no longer the spec's: pickled as itself
        self._policy, self._spec = value, None

    # ---- the one entry point ---------------------------------------------------------------------------
    def review(self, task: str, reference: str, code: str, *, language: str = "python",
               allowed_library: bool = True) -> ReviewVerdict:
        """The verdict on `code` for `task`: cached, or asked within the deadline, or "no signal" with a note."""
        key = self.cache_key(task, reference, code)
        hit = self._cached(key)
        if hit is not None:
            return hit
        now = time.monotonic()
        if now < self._down_until:
            return ReviewVerdict(None, note=f"reviewer unavailable ({self._last_failure}); not asked again for "
                                            f"{self._down_until - now:.0f} s")
        prompt = self.template.render(task=task, reference=reference[: self.max_code_chars],
                                      code=code[: self.max_code_chars], language=language,
                                      allowed_library=allowed_library)
        try:
            policy = self.policy  # built here on first use after unpickling: a local model loads outside the deadline
        except Exception as e:
            return self._failed(f"reviewer unavailable: could not build {self._spec[0]}: {type(e).__name__}: {e}")
        self.calls += 1
        future = self._executor().submit(policy.generate, [Request(prompt=prompt, task=task, seed=0)])
        try:
            reply = future.result(timeout=self.timeout_s)[0]
            genuine, quality, reason = parse_verdict(reply)
        except FutureTimeout:
            future.cancel()
            return self._failed(f"reviewer timed out after {self.timeout_s:g} s")
        except ReviewReplyError as e:  # the reviewer is up but said nothing usable: no signal, and no pause
            logger.warning("reviewer reply unusable: %s", e)
            return ReviewVerdict(None, note=f"reviewer reply unusable: {e}"[:500])
        except Exception as e:  # connection refused, HTTP errors, a local model's errors: no signal, never a crash
            return self._failed(f"reviewer unavailable: {type(e).__name__}: {e}")
        verdict = ReviewVerdict(verdict_score(genuine, quality), genuine, quality, reason)
        self._store(key, verdict)
        return verdict

    def cache_key(self, task: str, reference: str, code: str) -> str:
        return hashlib.sha256("\0".join((self._identity, task, reference, code)).encode("utf-8")).hexdigest()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)

    # ---- pieces ------------------------------------------------------------------------------------------
    def _executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="kernel-gym-review")
            return self._pool

    def _failed(self, note: str) -> ReviewVerdict:
        logger.warning("%s", note)
        self._last_failure = note[:200]
        self._down_until = time.monotonic() + self.retry_after_s
        return ReviewVerdict(None, note=note[:500])

    def _cached(self, key: str) -> ReviewVerdict | None:
        with self._lock:
            hit = self._memory.get(key)
        if hit is None and self.cache_dir is not None:
            path = self.cache_dir / f"{key}.json"
            try:
                data = json.loads(path.read_text())
                hit = ReviewVerdict(**{k: data[k] for k in ("score", "genuine", "quality", "reason")})
            except (OSError, ValueError, KeyError, TypeError):
                hit = None
            if hit is not None:
                with self._lock:
                    self._memory[key] = hit
        return None if hit is None else ReviewVerdict(hit.score, hit.genuine, hit.quality, hit.reason, cached=True)

    def _store(self, key: str, verdict: ReviewVerdict) -> None:
        with self._lock:
            self._memory[key] = verdict
        if self.cache_dir is not None:
            try:
                self.cache_dir.mkdir(parents=True, exist_ok=True)
                tmp = self.cache_dir / f"{key}.{threading.get_ident()}.tmp"
                tmp.write_text(json.dumps(verdict.info()))
                tmp.replace(self.cache_dir / f"{key}.json")
            except OSError as e:
                logger.warning("review cache not written: %s", e)


def make_reviewer(spec: Any) -> LLMReviewer | None:
    """A reviewer from None, "openai:URL" / "hf:MODEL", a Policy, an LLMReviewer, or a dict
    {"policy": "openai:URL", "timeout_s": ..., "cache_dir": ..., "model": ..., ...} (a TOML table in a preset)."""
    if spec is None or spec is False or spec == "":
        return None
    if isinstance(spec, LLMReviewer):
        return spec
    if isinstance(spec, dict):
        params = dict(spec)
        policy = params.pop("policy", None) or params.pop("spec", None)
        if policy is None:
            raise ConfigError(f"an LLM reviewer (judge=) given as a dict needs a 'policy' key (e.g. 'openai:URL'), "
                              f"got {spec!r}")
        return LLMReviewer(policy, **params)
    return LLMReviewer(spec)
