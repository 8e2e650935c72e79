"""`ServiceEvaluator`: the Evaluator protocol over HTTP, for trainers outside Ray (`kernel-gym serve` on the far end).

    ev = ServiceEvaluator("http://gpu-host:8000", token=os.environ["KERNEL_GYM_TOKEN"])
    env = gym.make("KernelRefine-v0", task="level1/relu", device="cuda", evaluator=ev)

Failure policy (two channels, as everywhere in kernel-gym):
- The service cannot be reached (connection refused or reset, a gateway's 502/503/504, no answer in time): retried
  `retries` times with exponential backoff; then the job's result is `Outcome.CRASH` whose message starts with
  "evaluation service unavailable" (`SERVICE_UNAVAILABLE`), so an env step finishes (score 0, the reason in `info["feedback"]`) instead of killing a
  training run. A trainer that would rather stop passes `raise_on_unavailable=True` and gets `ServiceUnavailable`.
- The request itself is wrong (401 bad token, 413 too large, 422 invalid job) or the service's harness failed (500):
  `ServiceError` is raised, because that is our misconfiguration or bug, not the agent's doing.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Any

from kernel_gym.errors import KernelGymError
from kernel_gym.eval.job import EvalJob
from kernel_gym.eval.result import EvalResult, Outcome

log = logging.getLogger(__name__)

SERVICE_UNAVAILABLE = "evaluation service unavailable"
_RETRY_STATUSES = frozenset({502, 503, 504})
_ANSWER_SLACK_S = 300.0  # on top of the jobs' own limits: the service may queue them behind others


class ServiceError(KernelGymError):
    """The service refused the request (bad token, too large, invalid job) or failed internally."""

    def __init__(self, status: int, code: str, detail: str):
        super().__init__(f"evaluation service answered {status} {code}: {detail}")
        self.status, self.code, self.detail = status, code, detail


class ServiceUnavailable(KernelGymError):
    """The service could not be reached after every retry (only raised with raise_on_unavailable=True)."""


class ServiceEvaluator:
    """Evaluator protocol against `kernel-gym serve`; thread-safe. See the module docstring for failures.

    | argument | default | meaning |
    |---|---|---|
    | url | | the service's base URL, e.g. "http://127.0.0.1:8000" |
    | token | $KERNEL_GYM_TOKEN | bearer token, when the service has one |
    | timeout | None | seconds to wait for an answer; None: the jobs' compile + run limits plus 300 s |
    | connect_timeout | 5.0 | seconds to open a connection |
    | retries | 3 | further attempts after a connection failure or a 502/503/504 |
    | backoff_s | 0.5 | first wait between attempts (doubles each time) |
    | raise_on_unavailable | False | raise ServiceUnavailable instead of returning a CRASH result |
    """

    def __init__(self, url: str, token: str | None = None, *, timeout: float | None = None,
                 connect_timeout: float = 5.0, retries: int = 3, backoff_s: float = 0.5,
                 raise_on_unavailable: bool = False):
        import httpx

        self.url = url.rstrip("/")
        self.token = token if token is not None else os.environ.get("KERNEL_GYM_TOKEN")
        self.timeout, self.connect_timeout = timeout, connect_timeout
        self.retries, self.backoff_s, self.raise_on_unavailable = retries, backoff_s, raise_on_unavailable
        self._kwargs = {"token": self.token, "timeout": timeout, "connect_timeout": connect_timeout,
                        "retries": retries, "backoff_s": backoff_s, "raise_on_unavailable": raise_on_unavailable}
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        self._client = httpx.Client(base_url=self.url, headers=headers)
        self._health: dict[str, Any] | None = None
        self._lock = threading.Lock()

    # ---- the protocol ---------------------------------------------------------------------------------
    def evaluate(self, job: EvalJob) -> EvalResult:
        answer, why = self._post({"job": job.to_dict()}, [job])
        return EvalResult.from_dict(answer["result"]) if answer is not None else self._unavailable(job, why)

    def evaluate_many(self, jobs: list[EvalJob], batch_size: int = 64) -> list[EvalResult]:
        """Evaluate jobs in batches of `batch_size` per request (the service runs a batch concurrently)."""
        results: list[EvalResult] = []
        for i in range(0, len(jobs), batch_size):
            chunk = jobs[i:i + batch_size]
            answer, why = self._post({"jobs": [j.to_dict() for j in chunk]}, chunk)
            if answer is None:
                results += [self._unavailable(j, why) for j in chunk]
            else:
                results += [EvalResult.from_dict(d) for d in answer["results"]]
        return results

    def health(self) -> dict[str, Any]:
        """The service's /health answer (raises httpx errors when it is down)."""
        response = self._client.get("/health", timeout=self.connect_timeout)
        response.raise_for_status()
        return response.json()

    @property
    def device(self) -> str | None:
        """The service's device ("cpu"/"cuda"), asked once; None when the service cannot be reached."""
        with self._lock:
            if self._health is None:
                try:
                    self._health = self.health()
                except Exception as e:
                    log.warning("could not ask %s for its device: %s", self.url, e)
                    return None
            return self._health.get("device")

    def __deepcopy__(self, memo: dict) -> ServiceEvaluator:
        return self  # one connection pool shared by every env (gym.make deep-copies its kwargs)

    def __reduce__(self):
        # Another process (an AsyncVectorEnv worker) gets its own connection pool to the same service.
        return _rebuild, (self.url, self._kwargs)

    def close(self) -> None:
        self._client.close()

    # ---- transport ------------------------------------------------------------------------------------
    def _post(self, body: dict[str, Any], jobs: list[EvalJob]) -> tuple[dict[str, Any] | None, str]:
        """(the JSON answer, "") or (None, why) when the service stayed unreachable."""
        import httpx

        read = self.timeout or sum(j.config.compile_timeout_s + j.config.run_timeout_s for j in jobs) + _ANSWER_SLACK_S
        timeout = httpx.Timeout(read, connect=self.connect_timeout)
        why = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff_s * 2 ** (attempt - 1))
            try:
                response = self._client.post("/v1/evaluate", json=body, timeout=timeout)
            except httpx.TimeoutException as e:
                if not isinstance(e, httpx.ConnectTimeout):  # the jobs may be running: do not send them twice
                    return None, f"no answer within {read:.0f} s ({type(e).__name__})"
                why = f"{type(e).__name__}: {e}"
                continue
            except (httpx.TransportError, OSError) as e:
                why = f"{type(e).__name__}: {e}"
                continue
            if response.status_code in _RETRY_STATUSES:
                why = f"HTTP {response.status_code}"
                continue
            if response.status_code != 200:
                raise _service_error(response)
            return response.json(), ""
        return None, f"{self.retries + 1} attempts failed; last: {why}"

    def _unavailable(self, job: EvalJob, why: str) -> EvalResult:
        if self.raise_on_unavailable:
            raise ServiceUnavailable(f"{SERVICE_UNAVAILABLE} at {self.url}: {why}")
        log.warning("%s at %s: %s", SERVICE_UNAVAILABLE, self.url, why)
        return EvalResult(outcome=Outcome.CRASH, backend=job.backend, infra_failure=True,
                          message=f"{SERVICE_UNAVAILABLE} at {self.url} ({why}); this is an infrastructure "
                                  "failure, not a verdict on the kernel")


def _rebuild(url: str, kwargs: dict[str, Any]) -> ServiceEvaluator:
    return ServiceEvaluator(url, **kwargs)


def _service_error(response: Any) -> ServiceError:
    try:
        body = response.json()
        return ServiceError(response.status_code, str(body.get("error")), str(body.get("detail")))
    except Exception:
        return ServiceError(response.status_code, "http_error", response.text[:500])
