"""The judge's build service (kernel_gym/judge/builds.py, judge/builder.py): a candidate's load_inline is built by a
trusted, confined build process and published into a cache that no runner may write.

- what a build request may carry (flags that would run a program of the candidate's choosing are refused);
- a C++ extension solution built by the judge and run for real on the CPU backend, then loaded from the cache;
- the attack it closes: a runner taken over by its solution plants files in the machine's build caches.
"""

from __future__ import annotations

import os
import shutil
import textwrap
from pathlib import Path

import pytest

from kernel_gym.eval.result import Outcome
from kernel_gym.judge import builds
from kernel_gym.paths import cache_dir

ROOT = Path(__file__).resolve().parents[2]
CPP_RELU = (ROOT / "tests" / "solutions" / "cpp" / "relu_extension.py").read_text()
SOURCE = "int add1(int x) { return x + 1; }"


@pytest.mark.parametrize("flags", [
    {"extra_cflags": ["-fplugin=/tmp/evil.so"]},
    {"extra_cflags": ["-B/tmp/evil"]},
    {"extra_cflags": ["-B", "/tmp/evil"]},
    {"extra_cflags": ["-specs=/tmp/evil.specs"]},
    {"extra_cflags": ["@/tmp/flags.txt"]},
    {"extra_cflags": ["-wrapper", "/tmp/evil,-x"]},
    {"extra_ldflags": ["-Wl,-plugin,/tmp/evil.so"]},
    {"extra_ldflags": ["-fuse-ld=/tmp/evil-ld"]},
    {"extra_cuda_cflags": ["-ccbin", "/tmp/evil"]},
    {"extra_cuda_cflags": ["--compiler-bindir=/tmp/evil"]},
    {"extra_cuda_cflags": ["-Xcompiler -fplugin=/tmp/evil.so"]},
    {"extra_cuda_cflags": ["--compiler-options=-fplugin=/tmp/evil.so"]},
    {"extra_cflags": ["-o", "/tmp/elsewhere.so"]},
])
def test_flags_that_run_another_program_are_refused(flags):
    with pytest.raises(builds.BuildRefused, match="not allowed"):
        builds.normalize("ext", {"cpp_sources": SOURCE, **flags})


def test_ordinary_flags_and_arguments_are_kept():
    name, params = builds.normalize("ext", {
        "cpp_sources": SOURCE, "cuda_sources": ["__global__ void k() {}"], "functions": ["add1"],
        "extra_cflags": ["-O3", "-DBLOCK=256", "-march=native"], "extra_cuda_cflags": ["--use_fast_math", "-O3",
                                                                                       "-Xptxas=-v"],
        "extra_ldflags": ["-lcublas", "-Wl,-Bstatic", "-L/usr/lib"], "extra_include_paths": ["/usr/include"],
        "with_cuda": True, "verbose": True, "build_directory": "/tmp/x", "keep_intermediates": False})
    assert name == "ext" and params["cpp_sources"] == [SOURCE] and params["with_cuda"] is True
    assert "verbose" not in params and "build_directory" not in params  # the judge's to choose


@pytest.mark.parametrize("name, params, match", [
    ("../x", {"cpp_sources": SOURCE}, "identifier"),
    ("ext", {"cpp_sources": SOURCE, "is_standalone": True}, "does not build with: is_standalone"),
    ("ext", {"cpp_sources": 3}, "string or a list"),
    ("ext", {}, "no C\\+\\+ or CUDA source"),
    ("ext", {"cpp_sources": SOURCE, "functions": ["add1; system"]}, "identifiers"),
    ("ext", {"cpp_sources": SOURCE, "with_cuda": "yes"}, "True or False"),
])
def test_malformed_requests_are_refused_with_a_reason(name, params, match):
    with pytest.raises(builds.BuildRefused, match=match):
        builds.normalize(name, params)


def test_build_names_follow_every_input():
    chain = {"torch": "t", "cuda": "c", "arch": "9.0", "cxx": "c++"}
    base = builds.build_name("ext", {"cpp_sources": [SOURCE]}, chain)
    assert base == builds.build_name("ext", {"cpp_sources": [SOURCE]}, chain)
    others = {builds.build_name("ext", {"cpp_sources": [SOURCE + " "]}, chain),
              builds.build_name("ext", {"cpp_sources": [SOURCE], "extra_cflags": ["-O3"]}, chain),
              builds.build_name("ext", {"cpp_sources": [SOURCE]}, {**chain, "arch": "10.0"}),
              builds.build_name("other", {"cpp_sources": [SOURCE]}, chain)}
    assert base not in others and len(others) == 4


def test_a_refused_request_is_an_answer_not_an_exception():
    answer = builds.build({"name": "ext", "params": {"cpp_sources": SOURCE, "extra_cflags": ["-fplugin=x.so"]}}, "cpu")
    assert answer["ok"] is False and "not allowed" in answer["log"]
    assert builds.build("not a dict", "cpu")["ok"] is False


def _job(code: str, **config):
    from kernel_gym.eval.job import EvalConfig, job_for
    from kernel_gym.tasks import load_task

    config.setdefault("compile_timeout_s", 600)
    return job_for(load_task("level1/relu"), code, backend="cuda", config=EvalConfig(device="cpu", **config))


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.skipif(shutil.which("c++") is None and shutil.which("g++") is None, reason="needs a C++ compiler")
def test_a_cpp_extension_is_built_by_the_judge_and_runs_on_cpu(evaluator, build_cache):
    """A genuine C++ load_inline solution: built by the judge's build process (fast path: the precompiled stock
    header, which its own `#include <torch/extension.h>` must not break; the same flags as
    test_pch_is_used_by_torchs_own_main_cpp_flags, so one PCH serves both), correct on the CPU backend, and loaded
    from the cache on resubmission."""
    # the judge reads the cache's place at each build: the session's (conftest.BUILD_CACHE, test_fast_build.py's
    # too), so that one PCH serves both files
    tag = f"// {os.getpid()}-{os.urandom(4).hex()}"  # a source no earlier run has built
    code = CPP_RELU.replace("torch::Tensor relu_forward(torch::Tensor x) {", f"{tag}\ntorch::Tensor relu_forward("
                                                                             "torch::Tensor x) {")
    first = evaluator.evaluate(_job(code))
    assert first.outcome == Outcome.CORRECT, first.message
    built = [p for p in builds.cache_root().glob("relu_cpp_*") if tag in (p / "main.cpp").read_text()]
    assert len(built) == 1 and (built[0] / "kernel_gym_build.json").exists()
    assert built[0].name + "f" in (built[0] / "kernel_gym_build.json").read_text()  # the fast build held
    again = evaluator.evaluate(_job(code))
    assert again.outcome == Outcome.CORRECT
    assert again.stage_ms["compile"] < 0.2 * first.stage_ms["compile"], (first.stage_ms, again.stage_ms)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_refused_flag_reads_as_a_compile_error(evaluator):
    code = CPP_RELU.replace('functions=["relu_forward"])', 'functions=["relu_forward"], extra_cflags=["-fplugin=/tmp/evil.so"])')
    assert code != CPP_RELU
    result = evaluator.evaluate(_job(code, checks="none"))
    assert result.outcome == Outcome.COMPILE_ERROR and "-fplugin" in result.message and "not allowed" in result.message


# A genuine Triton ReLU whose import first tries to plant a file in each of the machine's build caches (no static
# rule runs: the job goes straight to the judge's pool). Each attempt's outcome is kept in the runner's scratch.
PLANT = textwrap.dedent('''
    import os
    CACHE = os.environ.get("KERNEL_GYM_CACHE") or os.path.expanduser("~/.cache/kernel_gym")
    seen = []
    for sub in ("extensions", "pch", "fast_build", "cuda_raw", "nvcc_checks"):
        path = os.path.join(CACHE, sub, "planted_{tag}")
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write("planted")
            seen.append(sub + ":written")
        except OSError as e:
            seen.append(sub + ":" + type(e).__name__)
    with open({report!r}, "w") as f:
        f.write(" ".join(seen))
''')


@pytest.mark.timeout(600)
def test_a_runner_cannot_plant_files_in_the_build_caches(pool, runner_scratch, solution):
    from kernel_gym.eval.job import EvalConfig, job_for
    from kernel_gym.tasks import load_task

    tag = os.urandom(4).hex()
    report = runner_scratch / "planted.txt"
    code = PLANT.format(tag=tag, report=str(report)) + solution("level1/relu")
    result = pool.evaluate(job_for(load_task("level1/relu"), code, backend="triton",
                                   config=EvalConfig(device="cpu", checks="none")))
    assert result.outcome == Outcome.CORRECT, result.message  # the attempt itself is no verdict: it simply fails
    planted = list(cache_dir().glob(f"*/planted_{tag}"))
    assert not planted, f"a runner wrote into the build caches: {planted} ({report.read_text()})"
    assert "written" not in report.read_text()


SWAP_SERVICE = textwrap.dedent('''
    import sys
    cuda = getattr(sys, "modules")["kernel_gym.harness.cuda"]
    cuda.BUILD_SERVICE = lambda request: {"ok": True, "directory": "/dev/shm/planted", "module": "planted"}
''')


@pytest.mark.timeout(600)
def test_swapping_the_build_service_is_harness_tampering(fresh_pool, solution):
    """The next job in the same runner would load whatever a swapped service names: the swap is caught (the runner
    is replaced) before that job."""
    from kernel_gym.eval.job import EvalConfig, job_for
    from kernel_gym.tasks import load_task

    code = SWAP_SERVICE + solution("level1/relu")
    result = fresh_pool.evaluate(job_for(load_task("level1/relu"), code, backend="triton",
                                         config=EvalConfig(device="cpu", checks="none")))
    assert "harness_tampering" in result.hacks, (result.outcome, result.message)
    assert result.worker_recycled


@pytest.fixture
def fresh_pool():
    from kernel_gym.judge.pool import WorkerPool

    pool = WorkerPool("cpu", size=1)
    yield pool
    pool.close()


def test_staging_folders_of_dead_judges_are_swept(tmp_path):
    staging = tmp_path / ".staging"
    dead, alive, other = (staging / "ext_ab.999999999.x1", staging / f"ext_ab.{os.getpid()}.x2", staging / "README")
    for folder in (dead, alive, other):
        folder.mkdir(parents=True)
    assert builds.sweep_staging(tmp_path) == 1
    assert not dead.exists() and alive.exists() and other.exists()


def _broken(source: str) -> dict:
    """A build request that the compiler refuses at once (no torch headers to parse)."""
    return {"name": "broken", "params": {"cpp_sources": source, "no_implicit_headers": True}}


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.skipif(shutil.which("c++") is None and shutil.which("g++") is None, reason="needs a C++ compiler")
def test_a_build_takes_a_build_process_started_ahead(monkeypatch, build_cache):
    """A build process costs a Python start and torch's import before its compiler runs: the judge keeps one started
    ahead, waiting for a request, and the next build takes it (a new one starts in its place). One started with
    another environment (here MAX_JOBS) serves no build. The judge's KERNEL_GYM_FAST_BUILD=0 reaches the build
    process (it is part of the build's name: a build named stock must be built the stock way)."""
    # (the session's build cache, `build_cache`: test_fast_build.py's too, one PCH serves all)
    spares = builds.SpareBuilders(limit=1)
    monkeypatch.setattr(builds, "SPARES", spares)
    started = []  # every build process this test starts (other tests' may wait in the same cache)
    start = builds.start_builder
    monkeypatch.setattr(builds, "start_builder", lambda *args: started.append(start(*args)) or started[-1])
    try:
        first = builds.build(_broken("int x = ;"), "cpu")
        assert not first["ok"] and "error" in first["log"], first
        assert "/pch/" in first["log"]  # the fast build: the precompiled header's folder on the include path
        [waiting] = [f.result() for group in spares.spares.values() for f in group]
        assert waiting.proc.poll() is None and waiting.staging.is_dir()  # started, waiting for its request
        second = builds.build(_broken("int y = ;"), "cpu")
        assert not second["ok"] and "error" in second["log"], second  # the same answer, from the waiting process
        assert waiting.proc.poll() is not None and not waiting.staging.exists()  # it served the build, and ended
        assert spares.waiting() == 1  # another in its place
        [nxt] = [f.result() for group in spares.spares.values() for f in group]
        monkeypatch.setenv("MAX_JOBS", "1")
        monkeypatch.setenv("KERNEL_GYM_FAST_BUILD", "0")
        third = builds.build(_broken("int z = ;"), "cpu")
        assert not third["ok"] and "error" in third["log"], third
        assert "/pch/" not in third["log"]  # built the stock way, as its name says
        assert nxt.proc.poll() is None  # started under the old environment: not used
    finally:
        spares.close()
    assert len(started) == 5 and not [b.staging for b in started if b.staging.exists()]  # 3 builds, 2 in reserve
