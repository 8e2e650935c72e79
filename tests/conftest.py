"""Shared fixtures: one warm sandbox pool for the whole session, env factories, response helpers.

The tests directory is not a package (OpenRLHF ships a top-level `tests` package): nothing here is imported by
name, so helpers are handed out as fixtures.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import pathlib
import shutil
import tempfile
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "tests" / "solutions"

# Runners may write only in their own folders (kernel_gym.sandbox.confine). Tests whose candidate code reports through
# a file (its pid, its environment, GC states) write under this one folder, which every runner of the session is
# allowed (set before any runner starts; the judge passes KERNEL_GYM_RUNNER_* variables to its runners).
RUNNER_SCRATCH = pathlib.Path(tempfile.mkdtemp(prefix="kernel_gym_test_scratch_"))
RUNNER_SCRATCH.chmod(0o1777)  # runners run as uids of their own (sandbox/uids.py): each may make its files here
# The build cache the tests that build C++ share (one precompiled header serves them all): outside pytest's own
# temporary folder, which pytest makes 0700 again whenever a session starts (another session on the machine too), and
# which runners of other uids, started before a test moved the cache here, could then no longer enter.
BUILD_CACHE = pathlib.Path(tempfile.mkdtemp(prefix="kernel_gym_test_build_cache_"))
BUILD_CACHE.chmod(0o755)
os.environ["KERNEL_GYM_RUNNER_WRITABLE"] = str(RUNNER_SCRATCH)

# The machine's judges that tests start (on cuda every env's evaluator uses one) live in a folder of the session's
# own and are stopped when it ends: tests never send jobs to a judge serving the machine's real clients, and leave
# none behind holding the GPU (a judge exits only after 10 idle minutes; one left by the GPU tests held memory a
# benchmark right after them needed). A KERNEL_GYM_JUDGE_DIR set by the caller is kept.
# A session killed before its end (a `timeout` around pytest: no sessionfinish) leaves its judges behind: they exit
# a minute after their last client went away (KERNEL_GYM_JUDGE_IDLE_EXIT_S; one left by a killed GPU test run held
# 13 GiB of the GPU beside the benchmark that came next, 2026-12-06).
SESSION_JUDGES = os.environ.get("KERNEL_GYM_JUDGE_DIR") is None
if SESSION_JUDGES:
    os.environ["KERNEL_GYM_JUDGE_DIR"] = tempfile.mkdtemp(prefix="kgj_")
os.environ.setdefault("KERNEL_GYM_JUDGE_IDLE_EXIT_S", "60")
# Build processes started ahead (judge/builds.py) are on by default on cuda only; the CPU suite's C++ extension builds
# take them too, so that the path the GPU machines use is tested here.
os.environ.setdefault("KERNEL_GYM_SPARE_BUILDERS", "2")


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(BUILD_CACHE, ignore_errors=True)
    if SESSION_JUDGES:
        from kernel_gym.judge.client import stop_judge

        folder = pathlib.Path(os.environ["KERNEL_GYM_JUDGE_DIR"])
        for sock in folder.glob("*.sock"):
            stop_judge(sock)
        if exitstatus == 0:  # (kept after a failure: the judges' logs are in it)
            shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def build_cache(monkeypatch) -> pathlib.Path:
    """$KERNEL_GYM_CACHE for this test: the session's shared build cache (BUILD_CACHE)."""
    monkeypatch.setenv("KERNEL_GYM_CACHE", str(BUILD_CACHE))
    return BUILD_CACHE


@pytest.fixture
def runner_scratch(request) -> pathlib.Path:
    """A folder this test's candidate code may write to (a runner may write nowhere else outside its own)."""
    path = RUNNER_SCRATCH / request.node.name.replace("/", "_").replace("[", "_").replace("]", "_")
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o1777)  # (any runner's uid; the sticky bit keeps one runner's files from another's deletes)
    return path

# A small Triton ReLU whose pieces the env tests vary: an extra import, the kernel body, extra lines at the end of
# forward, and the returned expression. `self.calls` counts forward calls (the first one happens while compiling).
RELU_TEMPLATE = """\
import torch
import torch.nn as nn
import triton
import triton.language as tl
{header}

@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, {body}, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
{extra}
        return {ret}
"""


def _require(modname: str, minversion: str | None = None, reason: str | None = None, **kwargs):
    """pytest.importorskip under KERNEL_GYM_REQUIRE_OPTIONAL=1: the module is imported or the test errors."""
    try:
        return importlib.import_module(modname)
    except ImportError as e:
        raise ImportError(f"{modname} is missing, and KERNEL_GYM_REQUIRE_OPTIONAL=1 turns this test's skip into an "
                          f"error: the README's install (bash scripts/install.sh) provides every optional package "
                          f"({reason or e})") from e


if os.environ.get("KERNEL_GYM_REQUIRE_OPTIONAL") == "1":
    # Set by .ci/run: on the README's install path every CPU test runs; only GPU tests may skip.
    pytest.importorskip = _require


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto` (pyproject's addopts): how many processes run the tests. $KERNEL_GYM_TEST_WORKERS if set; none on a
    machine with a GPU (GPU tests time kernels: each wants the GPU to itself); else one per core, at most 4 (most
    tests start a judge's runners or compilers of their own, which want the cores too)."""
    if os.environ.get("KERNEL_GYM_TEST_WORKERS"):
        return int(os.environ["KERNEL_GYM_TEST_WORKERS"])
    import torch

    if torch.cuda.is_available():
        return 0
    return min(4, len(os.sched_getaffinity(0)))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu_items = [item for item in items if item.get_closest_marker("gpu") is not None]
    if not gpu_items:
        return
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU")
    for item in gpu_items:
        item.add_marker(skip)


@pytest.fixture(scope="session")
def evaluator():
    """One LocalEvaluator (static checks + a one-worker CPU pool) shared by every test that steps an env."""
    from kernel_gym.judge.local import LocalEvaluator

    ev = LocalEvaluator("cpu", workers=1)
    ev.start()
    ev.pool.warm_up()
    yield ev
    ev.close()


@pytest.fixture(scope="session")
def pool(evaluator):
    """The shared evaluator's WorkerPool: evaluating through it skips the static checks (sandbox-only tests)."""
    return evaluator.pool


@pytest.fixture
def reusing_runners(evaluator, monkeypatch):
    """The shared evaluator's slots under the "clean" candidate-runner reuse policy (cuda's default; cpu's is a fresh
    runner per job) for one test of what reuse must keep apart."""
    for slot in evaluator.pool._all:  # noqa: SLF001 - the pool's slots
        monkeypatch.setattr(slot, "reuse", "clean")


@pytest.fixture
def make_env(evaluator):
    """gym.make("KernelRefine-v0", ...) on the CPU backend with the shared evaluator; closed after the test."""
    import gymnasium as gym

    import kernel_gym  # noqa: F401 - registers the id

    envs = []

    def make(**kwargs):
        kwargs.setdefault("task", "level1/relu")
        kwargs.setdefault("device", "cpu")
        kwargs.setdefault("evaluator", evaluator)
        env = gym.make("KernelRefine-v0", **kwargs)
        envs.append(env)
        return env

    yield make
    for env in envs:
        env.close()


def _respond(code: str, reasoning: str = "I write a Triton kernel because the op is memory-bound.") -> str:
    return f"{reasoning}\n\n```python\n{code.rstrip()}\n```\n"


@pytest.fixture(scope="session")
def respond():
    """respond(code, reasoning=...) -> a model response: the reasoning, then the code in a ```python block."""
    return _respond


@pytest.fixture(scope="session")
def solution():
    """solution("level1/relu") -> the text of the genuine Triton solution in tests/solutions/."""

    def read(task_id: str) -> str:
        return (SOLUTIONS / (task_id.replace("/", "_") + ".py")).read_text()

    return read


@pytest.fixture(scope="session")
def relu_code():
    """relu_code(header=, body=, extra=, ret=) -> a variant of a small Triton ReLU solution (see RELU_TEMPLATE)."""

    def make(header: str = "", body: str = "tl.maximum(x, 0.0)", extra: str = "", ret: str = "y") -> str:
        return RELU_TEMPLATE.format(
            header=header, body=body, extra=textwrap.indent(textwrap.dedent(extra), " " * 8), ret=ret
        )

    return make


@pytest.fixture(scope="session")
def oom_once():
    """oom_once(flag) -> lines to put before a solution: its first evaluation raises CUDA's out-of-memory error (as
    if another job held the memory) and creates `flag` (a file under `runner_scratch`); later evaluations run."""

    def make(flag: pathlib.Path) -> str:
        return textwrap.dedent(f"""
            import os
            if not os.path.exists({str(flag)!r}):
                open({str(flag)!r}, "w").close()
                raise MemoryError("CUDA out of memory. Tried to allocate 512.00 MiB")
            """)

    return make


@pytest.fixture(scope="session")
def repo_root() -> pathlib.Path:
    return ROOT


@pytest.fixture(scope="session")
def cpu_job():
    """cpu_job(code, **config) -> an EvalJob for level1/relu on the CPU backend (Ray, service and adapter tests)."""
    from kernel_gym.eval.job import EvalConfig, job_for
    from kernel_gym.tasks import load_task

    task = load_task("level1/relu")

    def make(code: str, **config):
        config.setdefault("compile_timeout_s", 60)
        config.setdefault("run_timeout_s", 60)
        return job_for(task, code, backend="triton", config=EvalConfig(device="cpu", **config))

    return make


@pytest.fixture
def openai_server():
    """A local OpenAI-compatible endpoint (http.server). Yields a namespace: `url` (the base URL, ending in /v1),
    `replies` (canned answers, used in order), `respond` (set it to `body -> content` to answer otherwise) and
    `requests` (each POST's path, JSON body and Authorization header). Paths other than /chat/completions: 404."""
    import json
    import threading
    import types
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    server = types.SimpleNamespace(url="", replies=[], requests=[], respond=None)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            server.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
            if self.path != "/v1/chat/completions":
                self.send_error(404)
                return
            content = (server.respond(body) if server.respond else
                       server.replies.pop(0) if server.replies else "no code here")
            data = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": body.get("model"),
                               "choices": [{"index": 0, "finish_reason": "stop",
                                            "message": {"role": "assistant", "content": content}}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    server.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    yield server
    httpd.shutdown()
    httpd.server_close()


@contextlib.contextmanager
def _closing_vector_env(envs):
    try:
        yield envs
    except BaseException:
        envs.close(terminate=True)  # a sub-env that hangs would make a plain close wait for it forever
        raise
    envs.close()


@pytest.fixture
def closing_vector_env():
    """`with closing_vector_env(gym.vector.AsyncVectorEnv(...)) as envs:` closes it at the end, and terminates its
    sub-envs when the test fails (a timeout included), where a plain close would wait for a hung one forever."""
    return _closing_vector_env
