"""Caches a candidate could write and a later job (or the judge) would read (docs/anti-hacking.md, "Build caches").

- A runner serves several jobs (judge/pool.py reuses a clean one): its own folder outlives them, and each candidate may
  write it. Triton's kernel cache, HOME, TMPDIR, the working directory and (for a runner started as a fresh
  interpreter, as on cuda) the head of Python's import path all were that folder: job A plants an entry, job B of
  the same runner finds it (a cubin under the key of B's kernel, a module B imports). Now each job has its own
  (limits.job_environment, deleted with the job) and the import path never starts with the working directory.
- A build process runs the compiler with the candidate's flags through a shell (torch's build.ninja): a `;` in a
  flag ran a command of the candidate's in the build process, which may write the machine's header caches (a
  precompiled header there is compiled into every later extension built with the same flags). Flags are now made
  of shell-safe characters only.
"""

from __future__ import annotations

import os
import textwrap

import pytest

from kernel_gym.eval.job import EvalConfig, job_for
from kernel_gym.eval.result import Outcome
from kernel_gym.tasks import load_task

# Job A: a genuine ReLU whose import plants a file in every place a library of its runner keeps a cache or scratch
# files, and a module in every writable folder of the import path. Job B: a genuine ReLU that answers wrong if it
# finds any of them (so B's verdict says whether A's plants reached it).
PLANT = textwrap.dedent('''
    import os, sys, tempfile
    _PLACES = [os.environ.get("TRITON_CACHE_DIR"), os.environ.get("HOME"), tempfile.gettempdir(), os.getcwd(),
               os.environ.get("TORCHINDUCTOR_CACHE_DIR"), os.environ.get("TORCH_EXTENSIONS_DIR")]
    for place in [p for p in _PLACES if p]:
        try:
            os.makedirs(place, exist_ok=True)
            open(os.path.join(place, "kg_planted_{tag}"), "w").close()
        except OSError:
            pass
    for folder in sys.path:
        try:
            with open(os.path.join(folder or ".", "kg_planted_{tag}.py"), "w") as f:
                f.write("PLANTED = True\\n")
        except OSError:
            pass
    with open({report!r}, "a") as f:
        f.write(f"A {{os.getpid()}}\\n")
''')
PROBE = textwrap.dedent('''
    import importlib, os, sys, tempfile


    def _found():
        places = [os.environ.get("TRITON_CACHE_DIR"), os.environ.get("HOME"), tempfile.gettempdir(), os.getcwd(),
                  os.environ.get("TORCHINDUCTOR_CACHE_DIR"), os.environ.get("TORCH_EXTENSIONS_DIR")]
        seen = [p for p in places if p and os.path.exists(os.path.join(p, "kg_planted_{tag}"))]
        try:
            importlib.import_module("kg_planted_{tag}")
            seen.append("import")
        except ImportError:
            pass
        with open({report!r}, "a") as f:
            f.write(f"B {{os.getpid()}} {{seen}}\\n")
        return bool(seen)
''')


@pytest.fixture(params=["forked", "fresh interpreter"])
def one_runner(request, monkeypatch):
    """A pool of one candidate runner, forked from the fork server (cpu's default) or a fresh interpreter (cuda's),
    which serves the next job after a clean one (the "clean" reuse policy, cuda's default: cpu's runs every job in a
    runner of its own)."""
    from kernel_gym.judge.pool import WorkerPool

    monkeypatch.setenv("KERNEL_GYM_FORKSERVER", "1" if request.param == "forked" else "0")
    monkeypatch.setenv("KERNEL_GYM_RUNNER_REUSE", "clean")
    pool = WorkerPool("cpu", size=1)
    yield pool
    pool.close()


@pytest.mark.timeout(600)
def test_a_job_finds_nothing_an_earlier_job_of_its_runner_planted(one_runner, runner_scratch, relu_code):
    tag = os.urandom(4).hex()
    report = runner_scratch / f"plants_{tag}.txt"
    config = EvalConfig(device="cpu", checks="none")
    task = load_task("level1/relu")
    first = one_runner.evaluate(job_for(task, relu_code(header=PLANT.format(tag=tag, report=str(report))),
                                        backend="triton", config=config))
    assert first.outcome == Outcome.CORRECT, first.message
    second = one_runner.evaluate(job_for(task, relu_code(header=PROBE.format(tag=tag, report=str(report)),
                                                         ret="y + 1.0 if _found() else y"),
                                         backend="triton", config=config))
    lines = report.read_text().split("\n")
    pids = {line.split()[1] for line in lines if line}
    assert len(pids) == 1, f"the two jobs did not run in the same runner: {lines}"  # (else the test proves nothing)
    assert second.outcome == Outcome.CORRECT, f"job B found what job A planted: {lines} ({second.message[:500]})"


@pytest.mark.parametrize("flag", [
    "-O2;echo${IFS}planted>PLANTED;true",
    "-O2 $(touch PLANTED)",
    "-O2 `touch PLANTED`",
    "-O2 | tee PLANTED",
    "-O2\nbuild PLANTED: phony",
])
def test_a_build_flag_cannot_run_a_shell_command(flag, tmp_path, monkeypatch):
    """Refused before any build process starts; were it built, the shell would have written PLANTED."""
    from kernel_gym.judge import builds

    monkeypatch.setenv("KERNEL_GYM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("KERNEL_GYM_FAST_BUILD", "0")
    planted = tmp_path / "cache" / "pch" / "planted.txt"
    planted.parent.mkdir(parents=True)
    answer = builds.build({"name": "inject", "params": {
        "cpp_sources": "int add1(int x) { return x + 1; }", "no_implicit_headers": True,
        "extra_cflags": [flag.replace("PLANTED", str(planted))]}}, "cpu")
    assert answer["ok"] is False and "not allowed" in answer["log"], answer
    assert not planted.exists()


@pytest.mark.parametrize("how", ["another uid's", "writable by anyone"])
def test_a_judge_folder_someone_else_controls_is_refused(how, tmp_path, monkeypatch):
    """/tmp/kernel_gym_judges_<uid> made first by another uid (a runner's, where Landlock is missing), or one anyone
    may write: its owner could put a socket of its own where clients look for their judge."""
    from kernel_gym.errors import SandboxError
    from kernel_gym.judge.client import run_dir

    folder = tmp_path / "judges"
    folder.mkdir(mode=0o700)
    if how == "writable by anyone":
        folder.chmod(0o777)
    elif os.geteuid() == 0:
        os.chown(folder, 54321, 54321)
    else:
        pytest.skip("needs root to make a folder of another uid")
    monkeypatch.setenv("KERNEL_GYM_JUDGE_DIR", str(folder))
    with pytest.raises(SandboxError, match="KERNEL_GYM_JUDGE_DIR"):
        run_dir()
    folder.chmod(0o700)
    if how == "writable by anyone":
        assert run_dir() == folder  # the user's own, private: fine


def test_a_builds_compiler_cannot_write_the_header_caches(tmp_path, monkeypatch):
    """A flag that names an output file (`-MF`: the dependency file) pointed at another key's precompiled-header
    folder: the build process writes only its staging folder, so nothing lands in the cache (it did: that folder's
    `torch/extension.h` is what g++ reads beside the PCH)."""
    from kernel_gym.judge import builds, pch_cache

    monkeypatch.setenv("KERNEL_GYM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("KERNEL_GYM_FAST_BUILD", "0")  # the stock build: its own compile, no PCH to make first
    target = tmp_path / "cache" / "pch" / ("0" * 20) / "torch" / "extension.h"  # as an earlier honest build left it
    target.parent.mkdir(parents=True)
    target.write_text(pch_cache._FORWARD_TEXT)
    answer = builds.build({"name": "depfile", "params": {
        "cpp_sources": "int add1(int x) { return x + 1; }", "no_implicit_headers": True,
        "extra_cflags": ["-MD", "-MF", str(target), "-MT", "planted"]}}, "cpu")
    written = target.read_text()
    assert written == pch_cache._FORWARD_TEXT, f"a build process wrote into the header cache: {written[:200]}"
    assert answer["ok"] is False  # (its compiler could not write the file it was told to)


def test_the_judge_publishes_only_the_pch_of_the_requests_own_flags(tmp_path, monkeypatch):
    """A build process makes a missing PCH in its staging folder; the judge moves the one keyed by the request's own
    flags into the cache, sealed, and nothing else a build process left there (another key's folder, a PCH folder
    whose text files are not pch_cache's)."""
    from kernel_gym.judge import pch_cache
    from kernel_gym.judge.torch_headers import BIND_HEADER

    monkeypatch.setenv("KERNEL_GYM_CACHE", str(tmp_path / "cache"))
    params = {"cpp_sources": ["int f();"], "extra_cflags": ["-O2"]}
    keys = pch_cache.pch_keys(params)
    own = next(k for k, header in keys.items() if header == "stock")
    scratch = tmp_path / "staging" / "headers"
    for key, text in ((own, pch_cache._FORWARD_TEXT), ("f" * 20, pch_cache._FORWARD_TEXT)):
        (scratch / "pch" / key / "torch").mkdir(parents=True)
        (scratch / "pch" / key / "torch" / "extension.h").write_text(text)
        (scratch / "pch" / key / "torch" / "extension.h.gch").write_bytes(b"gch")
    lite = next(k for k, header in keys.items() if header == "lite")
    (scratch / "pch" / lite).mkdir(parents=True)
    (scratch / "pch" / lite / BIND_HEADER).write_text("#include <planted.h>\n")  # not pch_cache's text
    (scratch / "pch" / lite / f"{BIND_HEADER}.gch").write_bytes(b"gch")
    assert pch_cache.publish_pch(scratch, params) == [own]
    published = tmp_path / "cache" / "pch" / own
    assert pch_cache.cached_pch(own, "stock") == published
    assert sorted(p.name for p in (tmp_path / "cache" / "pch").iterdir()) == [own]
    if os.geteuid() == 0:
        assert (published / "torch" / "extension.h").stat().st_uid == 0
        assert not (published / "torch" / "extension.h").stat().st_mode & 0o022
