"""LLM-written held-out tasks through an OpenAI-compatible chat endpoint (stdlib `urllib` only).

    kernel-gym tasks generate --n 20 --seed 0 --out DIR --llm-url http://localhost:8000/v1 --model M

The model is asked for one KernelBench-format program (a main operator from `ops.MAINS` plus 2-5 operators
from `ops.FOLLOWERS`, with a `KERNEL_GYM` dict); the last fenced code block of its answer is validated exactly
like a sampled program (validate.py), but in a child process since it is model-written code, and rejected as a
duplicate when its operator sequence is already known. An API key, if the endpoint needs one, is read from
`$KERNEL_GYM_LLM_API_KEY` (or `$OPENAI_API_KEY`).
"""

from __future__ import annotations

import json
import os
import random
import re
import urllib.error
import urllib.request
from typing import Any

from kernel_gym.errors import KernelGymError
from kernel_gym.tasks import ops as oplib
from kernel_gym.tasks.generator import Collector, GenerationResult, Program, suite_signatures, task_name
from kernel_gym.tasks.validate import MIN_MS, validate_isolated

_FENCE = re.compile(r"```[ \t]*([\w+-]*)[^\n]*\n(.*?)```", re.DOTALL)

SYSTEM = "You write PyTorch reference programs for a GPU-kernel optimization benchmark. Answer with one Python code block."

PROMPT = """Write a new KernelBench-format reference program (a "level 2" task).

It computes ONE computationally expensive main operator, chosen from: {mains},
followed by {k} cheaper operators in sequence, chosen from: {followers}.
Suggested combination for this request: main operator `{main}`, then some of {suggested}. Be inventive but valid.

Rules (the program is rejected otherwise):
- A module docstring (one line: what it computes); `import torch` and `import torch.nn as nn` only.
- Module-level integer size globals, read by get_inputs()/get_init_inputs() when they are called.
- A LITERAL dict KERNEL_GYM = {{"cpu": {{...}}, "alt": {{...}}, "full_alt": {{...}}, "dtype": "float32", "level": 2}}
  whose keys name size globals: "cpu" and "alt" are tiny (the reference must run in milliseconds on a CPU: batch
  2-3, channels 3-8, spatial 8-20, features 32-64), "alt" differs from "cpu" with odd, non-power-of-two values.
- Full sizes (the globals) must make the reference take over {min_ms} ms on an NVIDIA H200 in fp32 (GEMMs around
  2048x4096x4096, convolutions with batch 16-64 and 32-128 channels at 64-256 pixels) with all inputs < 1 GiB.
- class Model(nn.Module) with __init__ taking the get_init_inputs() values; parameters only from the global RNG.
- get_inputs() returns tensors made with torch.randn or torch.rand, without a device argument.
- Deterministic, finite, non-constant outputs that depend on every input. No dropout, no randomness in forward.

Here is an example of the format:
```python
{example}
```
"""


def extract_code(text: str) -> str | None:
    """The last fenced code block of a completion (None when there is none)."""
    blocks = _FENCE.findall(text or "")
    return blocks[-1][1] if blocks else None


def chat_completion(url: str, model: str, messages: list[dict[str, str]], *, temperature: float = 0.8,
                    seed: int | None = None, timeout: float = 300) -> str:
    """POST to `{url}/chat/completions` (or `url` itself if it already ends so) and return the message text."""
    endpoint = url if url.rstrip("/").endswith("/chat/completions") else url.rstrip("/") + "/chat/completions"
    body: dict[str, Any] = {"model": model, "messages": messages, "temperature": temperature}
    if seed is not None:
        body["seed"] = seed
    headers = {"Content-Type": "application/json"}
    key = os.environ.get("KERNEL_GYM_LLM_API_KEY") or os.environ.get("OPENAI_API_KEY")
    if key:
        headers["Authorization"] = f"Bearer {key}"
    request = urllib.request.Request(endpoint, data=json.dumps(body).encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - user-given endpoint
            data = json.loads(response.read().decode())
    except (urllib.error.URLError, TimeoutError, ValueError) as e:
        raise KernelGymError(f"LLM endpoint {endpoint}: {e}") from e
    try:
        return data["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError) as e:
        raise KernelGymError(f"LLM endpoint {endpoint}: unexpected response {str(data)[:300]}") from e


def build_prompt(rng: random.Random, example: str, min_ms: float) -> str:
    k = rng.randint(2, 5)
    followers = sorted(oplib.FOLLOWERS)
    return PROMPT.format(mains=", ".join(sorted(oplib.MAINS)), followers=", ".join(followers), k=k,
                         main=rng.choice(sorted(oplib.MAINS)), suggested=", ".join(rng.sample(followers, k + 2)),
                         min_ms=min_ms, example=example.strip())


def generate_llm(n: int, seed: int, url: str, model: str, *, min_ms: float = MIN_MS, measure: bool = False,
                 existing: set[tuple[str, ...]] | None = None, max_attempts: int | None = None,
                 temperature: float = 0.8, timeout: float = 300) -> GenerationResult:
    """Ask the model for programs until `n` pass validation (or `max_attempts`, default 5 n, were made)."""
    from kernel_gym.tasks import load_task

    rng = random.Random(seed)
    example = load_task("level2/gemm_bias_gelu").source
    collector = Collector(suite_signatures() if existing is None else existing,
                          lambda src: validate_isolated(src, min_ms=min_ms, measure=measure))
    limit = max_attempts if max_attempts is not None else 5 * n
    while len(collector.result.tasks) < n and collector.result.attempts < limit:
        messages = [{"role": "system", "content": SYSTEM},
                    {"role": "user", "content": build_prompt(rng, example, min_ms)}]
        text = chat_completion(url, model, messages, temperature=temperature,
                               seed=seed * 100_003 + collector.result.attempts, timeout=timeout)
        code = extract_code(text)
        if code is None:
            collector.result.attempts += 1
            collector.result.rejected["format"] += 1
            continue
        index = len(collector.result.tasks)
        collector.offer(Program(("llm",), code), f"{index:03d}_llm")
    for t in collector.result.tasks:  # name accepted programs by the operators they were found to run
        t.name = task_name(int(t.name[:3]), ["llm", *_short(t.verdict.signature)])
        t.program = Program(("llm", *t.verdict.signature), t.program.source)
    return collector.result


def _short(signature: tuple[str, ...]) -> list[str]:
    return [s.strip("_").replace("native_", "").replace("_with_indices", "") for s in signature][:6]
