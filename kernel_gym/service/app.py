"""The evaluation service: `kernel-gym serve` puts an evaluator (a local pool or Ray) behind HTTP.

| method | path | body / answer |
|---|---|---|
| POST | /v1/evaluate | `{"job": JOB}` → `{"result": RESULT}`; `{"jobs": [JOB, ...]}` → `{"results": [...]}` in order |
| GET | /health | `{"status": "ok", "device", "evaluator", "capacity", "version"}` (never needs the token) |
| GET | /metrics | Prometheus text; `?format=json` for JSON (jobs by outcome, latency, in flight, queue depth) |

JOB is `EvalJob.to_dict()`, RESULT is `EvalResult.to_dict()`. The service runs the static rules itself
(`kernel_gym.eval.evaluator.evaluate_job`, the one place they run), so it never trusts a client. Errors are JSON `{"error": CODE, "detail": TEXT}`:
400 malformed JSON, 401 missing or wrong token, 413 body over the size limit, 422 not a valid job,
500 the evaluation harness failed (not the solution).
"""

# No `from __future__ import annotations`: FastAPI reads the endpoints' annotations (Request is imported lazily).
import hmac
import json
import logging
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import Any

from kernel_gym.errors import ConfigError
from kernel_gym.eval.evaluator import evaluate_job
from kernel_gym.eval.job import EvalJob
from kernel_gym.eval.result import EvalResult

log = logging.getLogger(__name__)

LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
DEFAULT_MAX_REQUEST_BYTES = 16 * 2**20
MAX_BATCH = 1024
_REQUIRED_TEXT = ("task_id", "task_source", "code", "backend")


def check_bind(host: str, token: str | None) -> None:
    """Refuse to serve beyond localhost without a token: anyone who can reach the port could run code on it."""
    if host not in LOCAL_HOSTS and not token:
        raise ConfigError(f"refusing to serve on {host!r} without a token: pass --token (or set KERNEL_GYM_TOKEN), "
                          "or bind to 127.0.0.1")


class ApiError(Exception):
    """An HTTP error with a JSON body `{"error": code, "detail": detail}`."""

    def __init__(self, status: int, code: str, detail: str):
        super().__init__(detail)
        self.status, self.code, self.detail = status, code, detail


def parse_job(data: Any) -> EvalJob:
    """A job from its JSON form, or ApiError 422 saying what is wrong with it."""
    if not isinstance(data, dict):
        raise ApiError(422, "invalid_job", f"a job must be a JSON object, not {type(data).__name__}")
    bad = [k for k in _REQUIRED_TEXT if not isinstance(data.get(k), str)]
    if bad:
        raise ApiError(422, "invalid_job", f"a job needs text fields {', '.join(bad)} (EvalJob.to_dict())")
    if not isinstance(data.get("config", {}), dict):
        raise ApiError(422, "invalid_job", "the job's config must be a JSON object (EvalConfig.to_dict())")
    try:
        job = EvalJob.from_dict({**data, "config": data.get("config", {})})
    except (TypeError, ValueError, KeyError) as e:
        raise ApiError(422, "invalid_job", f"not a valid job: {e}") from e
    if job.config.device not in ("cpu", "cuda"):
        raise ApiError(422, "invalid_job", f"config.device must be 'cpu' or 'cuda', not {job.config.device!r}")
    return job


class Metrics:
    """Counters behind /metrics; thread-safe."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.started = time.time()
        self.outcomes: Counter[str] = Counter()
        self.infra_failures = 0  # results marked infra_failure (counted in their outcome, crash, too)
        self.statuses: Counter[int] = Counter()
        self.latency_sum = self.latency_max = 0.0
        self.in_flight = 0
        self._lock = threading.Lock()

    def begin(self, n: int) -> None:
        with self._lock:
            self.in_flight += n

    def end(self, result: EvalResult | None, seconds: float) -> None:
        with self._lock:
            self.in_flight -= 1
            if result is not None:
                self.outcomes[result.outcome.value] += 1
                self.infra_failures += bool(result.infra_failure)
                self.latency_sum += seconds
                self.latency_max = max(self.latency_max, seconds)

    def request(self, status: int) -> None:
        with self._lock:
            self.statuses[status] += 1

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            done = sum(self.outcomes.values())
            return {"jobs_done": done, "outcomes": dict(self.outcomes), "infra_failures": self.infra_failures,
                    "jobs_in_flight": self.in_flight,
                    "queue_depth": max(0, self.in_flight - self.capacity), "capacity": self.capacity,
                    "latency_s": {"sum": round(self.latency_sum, 6), "count": done, "max": round(self.latency_max, 6),
                                  "mean": round(self.latency_sum / done, 6) if done else None},
                    "requests": {str(k): v for k, v in sorted(self.statuses.items())},
                    "uptime_s": round(time.time() - self.started, 3)}

    def prometheus(self) -> str:
        s = self.snapshot()
        lines = ["# HELP kernel_gym_jobs_total Jobs evaluated, by outcome.", "# TYPE kernel_gym_jobs_total counter"]
        lines += [f'kernel_gym_jobs_total{{outcome="{k}"}} {v}' for k, v in sorted(s["outcomes"].items())]
        lines += ["# HELP kernel_gym_infra_failures_total Jobs the evaluation infrastructure failed on (no verdict on "
                  "the kernel; counted as crash above too).", "# TYPE kernel_gym_infra_failures_total counter",
                  f"kernel_gym_infra_failures_total {s['infra_failures']}"]
        lines += ["# HELP kernel_gym_job_latency_seconds Time from a job's start to its result.",
                  "# TYPE kernel_gym_job_latency_seconds summary",
                  f"kernel_gym_job_latency_seconds_sum {s['latency_s']['sum']}",
                  f"kernel_gym_job_latency_seconds_count {s['latency_s']['count']}"]
        for name, value, what in (("jobs_in_flight", s["jobs_in_flight"], "Jobs accepted and not finished."),
                                  ("queue_depth", s["queue_depth"], "Jobs waiting for a free evaluation slot."),
                                  ("capacity", s["capacity"], "Jobs the evaluator runs at once."),
                                  ("uptime_seconds", s["uptime_s"], "Seconds since the service started.")):
            lines += [f"# HELP kernel_gym_{name} {what}", f"# TYPE kernel_gym_{name} gauge", f"kernel_gym_{name} {value}"]
        lines += ["# HELP kernel_gym_requests_total HTTP requests, by status.", "# TYPE kernel_gym_requests_total counter"]
        lines += [f'kernel_gym_requests_total{{status="{k}"}} {v}' for k, v in s["requests"].items()]
        return "\n".join(lines) + "\n"


def _capacity(evaluator: Any) -> int:
    return int(getattr(evaluator, "capacity", None) or getattr(evaluator, "workers", None) or 1)


def create_app(evaluator: Any, *, token: str | None = None, max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
               close_evaluator: bool = False):
    """A FastAPI app serving `evaluator` (anything with evaluate(job)); closes it at shutdown if asked."""
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse, PlainTextResponse
    from starlette.concurrency import run_in_threadpool

    from kernel_gym import __version__

    capacity = _capacity(evaluator)
    metrics = Metrics(capacity)
    app = FastAPI(title="kernel-gym evaluation service", version=__version__,
                  lifespan=_lifespan(evaluator, close_evaluator),
                  docs_url=None, redoc_url=None, openapi_url=None)
    app.state.evaluator, app.state.metrics = evaluator, metrics

    @app.exception_handler(ApiError)
    async def api_error(request: Request, e: ApiError):
        headers = {"WWW-Authenticate": "Bearer"} if e.status == 401 else None
        return JSONResponse({"error": e.code, "detail": e.detail}, status_code=e.status, headers=headers)

    @app.middleware("http")
    async def count(request: Request, call_next):
        try:
            response = await call_next(request)
        except Exception as e:  # the harness failed (SandboxError): our fault, not the client's or the solution's
            log.exception("evaluation failed")
            response = JSONResponse({"error": "internal", "detail": f"{type(e).__name__}: {e}"}, status_code=500)
        metrics.request(response.status_code)
        return response

    @app.post("/v1/evaluate")
    async def evaluate(request: Request):
        _authorize(request, token)
        batch, jobs = _parse_request(await _read_json(request, max_request_bytes), evaluator)
        metrics.begin(len(jobs))
        results = await run_in_threadpool(_run_batch, jobs, evaluator, metrics, capacity)
        dicts = [r.to_dict() for r in results]
        return {"results": dicts} if batch else {"result": dicts[0]}

    @app.get("/health")
    async def health():
        return {"status": "ok", "device": getattr(evaluator, "device", None), "evaluator": type(evaluator).__name__,
                "capacity": capacity, "version": __version__}

    @app.get("/metrics")
    async def get_metrics(request: Request, format: str = "prometheus"):
        _authorize(request, token)
        judge = _judge_status(evaluator)
        if format == "json":
            return {**metrics.snapshot(), **({"judge": judge} if judge else {})}
        return PlainTextResponse(metrics.prometheus() + _judge_prometheus(judge),
                                 media_type="text/plain; version=0.0.4")

    return app


def _lifespan(evaluator: Any, close_evaluator: bool) -> Any:
    """The app's lifespan: at shutdown, the evaluator closed if asked."""

    @asynccontextmanager
    async def lifespan(app: Any):
        yield
        if close_evaluator:
            evaluator.close()

    return lifespan


def _authorize(request: Any, token: str | None) -> None:
    """ApiError 401 unless the request carries `Authorization: Bearer <token>` (when the service has a token)."""
    if token is None:
        return
    given = request.headers.get("authorization", "")
    scheme, _, value = given.partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip().encode(), token.encode()):
        raise ApiError(401, "unauthorized", "this service needs 'Authorization: Bearer <token>' with its token")


async def _read_json(request: Any, max_request_bytes: int) -> Any:
    """The request's body as JSON, read up to `max_request_bytes` (ApiError 413 beyond, 400 when not JSON)."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit()):
        raise ApiError(400, "bad_request", "invalid Content-Length header")
    if declared is not None and int(declared) > max_request_bytes:
        raise _too_large(int(declared), max_request_bytes)
    body, size = bytearray(), 0
    async for chunk in request.stream():  # also bounds bodies sent without a Content-Length
        size += len(chunk)
        if size > max_request_bytes:
            raise _too_large(size, max_request_bytes)
        body += chunk
    try:
        return json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ApiError(400, "malformed_json", f"the body is not valid JSON: {e}") from e


def _parse_request(data: Any, evaluator: Any) -> tuple[bool, list[EvalJob]]:
    """(whether it is a batch, its jobs) of a /v1/evaluate body, or ApiError 422 saying what is wrong with it."""
    if not isinstance(data, dict) or ("job" in data) == ("jobs" in data):
        raise ApiError(422, "invalid_request", 'the body must be {"job": JOB} or {"jobs": [JOB, ...]}')
    batch = "jobs" in data
    raw = data["jobs"] if batch else [data["job"]]
    if not isinstance(raw, list) or not raw or len(raw) > MAX_BATCH:
        raise ApiError(422, "invalid_request", f'"jobs" must be a list of 1 to {MAX_BATCH} jobs')
    jobs = [parse_job(item) for item in raw]
    device = getattr(evaluator, "device", None)
    wrong = [j.config.device for j in jobs if device == "cpu" and j.config.device == "cuda"]
    if wrong:
        raise ApiError(422, "unsupported_device", "this service evaluates on cpu; the job asks for cuda")
    return batch, jobs


def _timed(job: EvalJob, evaluator: Any, metrics: Metrics) -> EvalResult:
    t0, result = time.perf_counter(), None
    try:
        result = evaluate_job(job, evaluator)
        return result
    finally:
        metrics.end(result, time.perf_counter() - t0)


def _run_batch(jobs: list[EvalJob], evaluator: Any, metrics: Metrics, capacity: int) -> list[EvalResult]:
    """The jobs' results in order, up to `capacity` of them at once."""
    if len(jobs) == 1:
        return [_timed(jobs[0], evaluator, metrics)]
    with ThreadPoolExecutor(max_workers=max(1, min(capacity, len(jobs)))) as pool:
        return list(pool.map(lambda job: _timed(job, evaluator, metrics), jobs))


def _judge_prometheus(judge: dict[str, Any]) -> str:
    """The machine's judge behind a shared LocalEvaluator, as Prometheus gauges: its queue and waits ("" without)."""
    if not judge:
        return ""
    return "".join(
        f"# HELP kernel_gym_judge_{name} {what}\n# TYPE kernel_gym_judge_{name} gauge\n"
        f"kernel_gym_judge_{name} {value}\n"
        for name, value, what in (
            ("queued", judge.get("queued", 0), "Jobs waiting in the machine's judge (all clients)."),
            ("running", judge.get("running", 0), "Jobs the judge runs now."),
            ("clients", judge.get("clients", 0), "Clients connected to the judge."),
            ("queue_wait_median_seconds", judge.get("queue_wait", {}).get("median_s", 0),
             "Median wait of a job in the judge's queue."),
            ("timing_wait_median_seconds", judge.get("timing_lock_wait", {}).get("median_s", 0),
             "Median wait for the GPU before a job's timing."),
            ("alone_waiting", judge.get("alone_waiting", 0),
             "Jobs waiting to run again with the pool to themselves (out-of-memory confirmations)."),
            ("alone_reruns", judge.get("alone_wait", {}).get("n", 0),
             "Jobs run again alone so far (of the last 1000)."),
            ("alone_wait_max_seconds", judge.get("alone_wait", {}).get("max_s", 0),
             "Longest wait of a job for the pool to itself."),
            ("gpu_reserved_bytes", int(judge.get("gpu_reserved_mb", 0) * 2**20),
             "GPU memory the judge's process holds (its jobs' buffers and torch's cache)."),
            ("idle_releases", judge.get("idle_releases", 0),
             "Times the judge gave its cached GPU memory back after going idle."),
            ("spare_builders", judge.get("spare_builders", 0),
             "Build processes started ahead, waiting for a load_inline build.")))


def _judge_status(evaluator: Any) -> dict[str, Any]:
    """The status of the machine's judge when the evaluator is a client of it, else {}."""
    if not getattr(evaluator, "shared", False):
        return {}
    try:
        return evaluator.pool.status()
    except Exception:  # noqa: BLE001 - metrics never fail for want of the judge
        return {}


def _too_large(size: int, limit: int) -> ApiError:
    return ApiError(413, "request_too_large", f"the request body is over the limit of {limit} bytes "
                    f"({limit / 2**20:.1f} MiB; got at least {size}): send fewer jobs per request, or start the "
                    "service with a larger --max-request-mb")
