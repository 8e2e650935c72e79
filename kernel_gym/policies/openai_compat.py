"""Any OpenAI-compatible chat-completions server (vLLM, SGLang, TGI, llama.cpp, a hosted API), with the standard
library only: one POST /chat/completions per request, several in flight at once."""

from __future__ import annotations

import json
import logging
import os
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kernel_gym.errors import ConfigError
from kernel_gym.policies.base import Policy, PolicyError, Request, register_policy

logger = logging.getLogger(__name__)

RETRY_STATUS = (408, 409, 429, 500, 502, 503, 504)


class OpenAIPolicy(Policy):
    """Chat completions from `base_url` (e.g. `http://localhost:8000/v1`; a URL without `/v1` gets it added).

    | argument | default | meaning |
    |---|---|---|
    | model | None | the served model's name; None asks the server (`GET /models`, the first one) |
    | api_key | None | bearer token; None reads `OPENAI_API_KEY` (servers that need none ignore it) |
    | temperature, top_p | 1.0, 1.0 | sampling parameters |
    | max_tokens | None | completion limit (None: the server's) |
    | system_prompt | None | a system message before each prompt |
    | concurrency | 16 | requests in flight at once |
    | timeout_s | 600 | per request |
    | retries | 3 | retries of a failed request (connection errors, 408/409/429/5xx), with exponential backoff |
    | include_reasoning | True | put a separate `reasoning_content` (reasoning parsers) before the answer, so the env
    sees the reasoning as the response's text |
    | extra_body | None | more fields for each request body (`top_k`, `min_p`, `stop`, ...) |

    Each request sends `seed = request.seed`, so a server that honours seeds (vLLM does) reproduces a run.
    """

    def __init__(self, base_url: str, *, model: str | None = None, api_key: str | None = None,
                 temperature: float = 1.0, top_p: float = 1.0, max_tokens: int | None = None,
                 system_prompt: str | None = None, concurrency: int = 16, timeout_s: float = 600.0, retries: int = 3,
                 include_reasoning: bool = True, extra_body: dict[str, Any] | None = None):
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"the OpenAI-compatible endpoint must be an http(s) URL, got {base_url!r}")
        base = base_url.rstrip("/")
        self.base_url = base if base.endswith("/v1") or "/v1/" in base else base + "/v1"
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self.sampling = {"temperature": temperature, "top_p": top_p}
        if max_tokens is not None:
            self.sampling["max_tokens"] = int(max_tokens)
        self.system_prompt, self.concurrency, self.timeout_s = system_prompt, max(1, concurrency), timeout_s
        self.retries, self.include_reasoning, self.extra_body = retries, include_reasoning, dict(extra_body or {})
        self.model = model
        self.name = f"openai:{self.base_url}"

    def generate(self, requests: Sequence[Request]) -> list[str]:
        if not requests:
            return []
        if self.model is None:
            self.model = self._default_model()
        if len(requests) == 1:
            return [self._complete(requests[0])]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(requests))) as pool:
            return list(pool.map(self._complete, requests))

    def _complete(self, request: Request) -> str:
        body = {"model": self.model, "messages": request.messages(self.system_prompt), "seed": request.seed,
                **self.sampling, **self.extra_body}
        reply = self._call("POST", "/chat/completions", body)
        try:
            message = reply["choices"][0]["message"]
        except (KeyError, IndexError, TypeError) as e:
            raise PolicyError(f"{self.base_url}: a chat completion without choices[0].message: {str(reply)[:300]}") from e
        content = message.get("content") or ""
        reasoning = message.get("reasoning_content") or message.get("reasoning")
        if self.include_reasoning and isinstance(reasoning, str) and reasoning.strip():
            return f"<think>\n{reasoning.strip()}\n</think>\n\n{content}"
        return content

    def _default_model(self) -> str:
        models = self._call("GET", "/models", None).get("data") or []
        if not models or "id" not in models[0]:
            raise PolicyError(f"{self.base_url}/models lists no model; pass model=")
        return str(models[0]["id"])

    def _call(self, method: str, path: str, body: dict[str, Any] | None) -> dict[str, Any]:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        data = None if body is None else json.dumps(body).encode("utf-8")
        for attempt in range(self.retries + 1):
            req = urllib.request.Request(self.base_url + path, data=data, headers=headers, method=method)
            try:
                with urllib.request.urlopen(req, timeout=self.timeout_s) as response:
                    return json.loads(response.read().decode("utf-8"))
            except urllib.error.HTTPError as e:
                detail = e.read().decode("utf-8", errors="replace")[:500]
                if e.code not in RETRY_STATUS or attempt == self.retries:
                    raise PolicyError(f"{method} {self.base_url}{path}: HTTP {e.code}: {detail}") from e
            except (urllib.error.URLError, TimeoutError, ConnectionError, json.JSONDecodeError) as e:
                if attempt == self.retries:
                    raise PolicyError(f"{method} {self.base_url}{path} failed after {attempt + 1} tries: {e}") from e
            delay = min(30.0, 0.5 * 2**attempt)
            logger.warning("%s %s%s failed; retrying in %.1f s", method, self.base_url, path, delay)
            time.sleep(delay)
        raise AssertionError("unreachable")


@register_policy("openai")
def _from_spec(arg: str, **options: Any) -> Policy:
    """`openai:URL`: an OpenAI-compatible server's base URL; options as OpenAIPolicy's arguments."""
    return OpenAIPolicy(arg, **options)
