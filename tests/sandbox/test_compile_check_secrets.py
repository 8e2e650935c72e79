"""The judge's compile checks on the CPU backend (kernel_gym/judge/compile_check.py) and its build processes
(judge/builds.py) against a CUDA or C++ source that includes a file outside its job to read it back in the compile
error's feedback.

On cpu the judge is the trainer's own process (a private pool): its environment holds the client's API keys. A cpu
runner never compiles a `load_inline` call with CUDA sources (it reports them and the judge compiles them with
nvcc), and a `cuda_raw` source the runner compiled is compiled again by the judge with NVRTC. The attacks include,
from that compile:
- `/proc/self/environ`: the compiling process's own environment (was the judge's, API keys included);
- `/proc/<pid>/environ` of a client process holding a secret (here a process the test starts; in a container, pid 1
  often is the trainer), and `/proc/1/environ` itself;
- a secret file of the client's outside the job (a `~/.netrc`-style file, mode 0600, in a folder of the test's).

The cuda_raw source guards its include with `__has_include` of a marker file its runner creates before the compile
and removes after it, so the include fires only in the judge's check (what a runner compiles itself is the runner's
business: its own confinement). A compile check now runs like a build process: an allow-listed environment with no
variable named like a secret, Landlock (reads only beneath the toolchain, the Python install and the check's own
folder; writes only there), and a compile log that never quotes a file outside the job and the toolchain.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from kernel_gym.eval.job import EvalConfig, job_for
from kernel_gym.eval.result import Outcome
from kernel_gym.harness.cuda import find_nvcc
from kernel_gym.tasks import load_task

SECRET_NAME, SECRET = "KERNEL_GYM_TEST_API_KEY", "sk-test-compile-check-0123456789"
FILE_SECRET = "kg-client-file-secret-9f8e7d6c5b4a"
PID_SECRET = "kg-client-proc-secret-1a2b3c4d5e6f"
SAFE_SECRET_NAME, SAFE_SECRET = "CUDA_KG_TEST_SERVICE_KEY", "sk-test-allowlisted-prefix-4242"  # CUDA_ passes the list

RAW = textwrap.dedent('''
    import os
    import tempfile

    import torch
    import torch.nn as nn

    from kernel_gym import cuda_raw

    MARK = os.path.join(tempfile.gettempdir(), "kg_runner_mark")  # exists only while this runner compiles
    SOURCE = r"""
    #if !__has_include("MARK")
    #include "TARGET"
    #endif
    extern "C" __global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, long long n) {
        long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
        if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
    }
    """.replace("MARK", MARK)
    open(MARK, "w").close()
    try:
        kernels = cuda_raw.compile(SOURCE)
    finally:
        os.remove(MARK)


    class ModelNew(nn.Module):
        def forward(self, x):
            y = torch.empty_like(x)
            kernels.relu_kernel(x, y, x.numel(), grid=(x.numel() + 255) // 256, block=256)
            return y
''')

INLINE = textwrap.dedent('''
    import torch
    import torch.nn as nn
    from torch.utils.cpp_extension import load_inline

    cuda_source = r"""
    #include "TARGET"
    __global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, long n) {
        long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
        if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
    }
    """
    ext = load_inline(name="relu_leak", cpp_sources="torch::Tensor relu_forward(torch::Tensor x);",
                      cuda_sources=cuda_source, functions=["relu_forward"], no_implicit_headers=True)


    class ModelNew(nn.Module):
        def forward(self, x):
            return ext.relu_forward(x)
''')


@pytest.fixture
def client_secrets(tmp_path, monkeypatch):
    """The client's secrets: two variables in this process's environment (the judge's, on cpu), a process holding a
    third in its own, and a file holding a fourth. Yields what an include can name, by name."""
    monkeypatch.setenv(SECRET_NAME, SECRET)
    monkeypatch.setenv(SAFE_SECRET_NAME, SAFE_SECRET)
    monkeypatch.setenv("KERNEL_GYM_CACHE", str(tmp_path / "cache"))  # (no nvcc check result of an earlier run)
    home = Path(tempfile.mkdtemp(prefix="kg_home_"))  # (a short path: the whole compile error fits the feedback)
    secret_file = home / ".netrc"
    secret_file.write_text(f"machine api.example.com password {FILE_SECRET}\n")
    secret_file.chmod(0o600)
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                              env={**os.environ, "KG_HOLDER_TOKEN": PID_SECRET})
    try:
        yield {"self": "/proc/self/environ", "pid": f"/proc/{holder.pid}/environ", "init": "/proc/1/environ",
               "file": str(secret_file)}
    finally:
        holder.kill()
        holder.wait()
        shutil.rmtree(home, ignore_errors=True)


def _leaks(result, path: str) -> list[str]:
    """The secrets in the result, and any diagnostic located in the included file (its content, quoted)."""
    text = repr(result.to_dict())
    found = [s for s in (SECRET, SAFE_SECRET, FILE_SECRET, PID_SECRET) if s in text]
    located = re.search(rf"^{re.escape(path)}(?:\(\d+\)|:\d+)", result.message, re.MULTILINE)
    return found + ([f"a diagnostic located in {path}"] if located else [])


def _refused(message: str, path: str) -> bool:
    """The compiler could not open the included file (NVRTC's and cudafe's words, or gcc's preprocessor's)."""
    return f'cannot open source file "{path}"' in message or f"{path}: Permission denied" in message


def _job(code: str, backend: str):
    return job_for(load_task("level1/relu"), code, backend=backend,
                   config=EvalConfig(device="cpu", checks="none", compile_timeout_s=300))


def _nvrtc_available() -> bool:
    try:
        from cuda.bindings import nvrtc  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.timeout(600)
@pytest.mark.skipif(not _nvrtc_available(), reason="needs NVRTC (cuda-bindings)")
@pytest.mark.parametrize("target", ["self", "pid", "init", "file"])
def test_a_cuda_raw_include_reads_nothing_of_the_client(evaluator, client_secrets, target):
    result = evaluator.evaluate(_job(RAW.replace("TARGET", client_secrets[target]), "cuda_raw"))
    assert not _leaks(result, client_secrets[target]), f"the judge's NVRTC check echoed the client's secret: {result.message[:3000]}"
    assert result.outcome == Outcome.COMPILE_ERROR and not result.compiled, (result.outcome, result.message)
    assert _refused(result.message, client_secrets[target]), result.message  # the include was refused, not read


@pytest.mark.timeout(600)
@pytest.mark.skipif(not _nvrtc_available(), reason="needs NVRTC (cuda-bindings)")
def test_the_nvrtc_check_still_reports_a_genuine_error_with_its_line(evaluator, client_secrets):
    code = RAW.replace('#include "TARGET"', "#define UNUSED 1").replace("y[i] = x[i]", "y[i] = zero_value + x[i]")
    result = evaluator.evaluate(_job(code.replace('!__has_include("MARK")', '__has_include("MARK")'), "cuda_raw"))
    assert result.outcome == Outcome.COMPILE_ERROR, (result.outcome, result.message)
    assert "zero_value" in result.message and "cuda_source(" in result.message, result.message


@pytest.mark.timeout(600)
@pytest.mark.skipif(find_nvcc() is None, reason="needs nvcc")
@pytest.mark.parametrize("target", ["self", "pid", "init", "file"])
def test_a_load_inline_include_reads_nothing_of_the_client(evaluator, client_secrets, target):
    result = evaluator.evaluate(_job(INLINE.replace("TARGET", client_secrets[target]), "cuda"))
    assert not _leaks(result, client_secrets[target]), f"the judge's nvcc check echoed the client's secret: {result.message[:3000]}"
    assert result.outcome == Outcome.COMPILE_ERROR and not result.compiled, (result.outcome, result.message)
    assert _refused(result.message, client_secrets[target]), result.message  # the include was refused, not read


# ---- the build processes of load_inline (judge/builds.py): the same includes in a C++ source ------------------------

CPP = textwrap.dedent('''
    import torch
    import torch.nn as nn
    from torch.utils.cpp_extension import load_inline

    ext = load_inline(name="relu_leak_cpp", cpp_sources=r"""
    #include "TARGET"
    int add1(int x) { return x + 1; }
    """, functions=["add1"], no_implicit_headers=True)


    class ModelNew(nn.Module):
        def forward(self, x):
            return torch.relu(x)
''')


@pytest.mark.timeout(600)
@pytest.mark.skipif(shutil.which("c++") is None and shutil.which("g++") is None, reason="needs a C++ compiler")
@pytest.mark.parametrize("target", ["self", "pid", "file"])
def test_a_build_process_include_reads_nothing_of_the_client(client_secrets, target, monkeypatch):
    """The judge's build service, asked directly (what a runner's load_inline sends): the build process reads only
    the toolchain, Python and its staging folder, and its environment holds no variable named like a secret."""
    from kernel_gym.judge import builds

    monkeypatch.setenv("KERNEL_GYM_FAST_BUILD", "0")  # the stock build: no precompiled header to make first
    path = client_secrets[target]
    answer = builds.build({"name": "leak", "params": {"cpp_sources": f'#include "{path}"\nint x;',
                                                      "no_implicit_headers": True}}, "cpu")
    assert answer["ok"] is False
    found = [s for s in (SECRET, SAFE_SECRET, FILE_SECRET, PID_SECRET) if s in answer["log"]]
    assert not found and not re.search(rf"^{re.escape(path)}:\d+", answer["log"], re.MULTILINE), answer["log"]
    assert f"{path}: Permission denied" in answer["log"], answer["log"]


@pytest.mark.timeout(600)
@pytest.mark.skipif(shutil.which("c++") is None and shutil.which("g++") is None, reason="needs a C++ compiler")
def test_a_cpp_load_inline_include_reads_nothing_through_the_pipeline(evaluator, client_secrets, monkeypatch):
    monkeypatch.setenv("KERNEL_GYM_FAST_BUILD", "0")
    result = evaluator.evaluate(_job(CPP.replace("TARGET", client_secrets["file"]), "cuda"))
    assert not _leaks(result, client_secrets["file"]), result.message
    assert result.outcome == Outcome.COMPILE_ERROR and _refused(result.message, client_secrets["file"]), result.message


# ---- the pieces: what a compile check runs with, and what its log may show -----------------------------------------

def test_a_compile_check_runs_confined_with_no_secret(client_secrets, tmp_path):
    from kernel_gym.sandbox import toolchain

    folder = tmp_path / "check"
    folder.mkdir()
    probe = textwrap.dedent(f"""
        import json, os, sys
        from pathlib import Path
        from kernel_gym.sandbox import toolchain
        pieces = toolchain.confine(Path(sys.argv[1]))
        def readable(path):
            try:
                open(path, "rb").read(1)
                return True
            except OSError:
                return False
        print(json.dumps({{"pieces": pieces, "env": dict(os.environ),
                           "read": {{k: readable(p) for k, p in {client_secrets!r}.items()}},
                           "toolchain": readable(sys.executable) and readable("/usr/include/stdio.h")}}))
    """)
    run = toolchain.run_process([sys.executable, "-c", probe, str(folder)], folder, 120)
    assert run.returncode == 0, run.stderr[-3000:]
    seen = __import__("json").loads(run.stdout.strip().splitlines()[-1])
    assert SECRET_NAME not in seen["env"] and SAFE_SECRET_NAME not in seen["env"]
    assert seen["env"]["HOME"] == str(folder) and seen["env"]["TMPDIR"] == str(folder)
    from kernel_gym.sandbox.confine.landlock import landlock_abi

    if landlock_abi() >= 1:
        assert "landlock_read" in seen["pieces"], seen["pieces"]
        assert not any(seen["read"].values()), seen["read"]
        assert seen["toolchain"] or not Path("/usr/include/stdio.h").exists()


def test_redaction_withholds_diagnostics_located_outside_the_job(tmp_path):
    from kernel_gym.sandbox import toolchain

    job = tmp_path / "job"
    log = "\n".join([
        f"{job}/main.cpp:3:10: error: 'zero_value' was not declared in this scope",
        "    3 |   return zero_value;",
        "      |          ^~~~~~~~~~",
        "/home/user/.netrc:1:1: error: 'machine' does not name a type",
        "    1 | machine api password sk-secret",
        "      | ^~~~~~~",
        "/proc/self/environ(1): error: identifier \"sk\" is undefined",
        "  API_KEY=sk-secret",
        "  ^",
        "",
        "cuda_source(7): error: identifier \"zero_value\" is undefined",
        "  y[i] = zero_value;",
        "         ^",
        "/usr/include/stdio.h:20:1: note: a toolchain header may be quoted",
        "3 errors detected in the compilation of \"cuda_source\".",
    ])
    out = toolchain.redact(log, job)
    assert "sk-secret" not in out and "machine" not in out and "API_KEY" not in out
    assert "withheld" in out and "/home/user/.netrc" in out  # the file is named, its text is not
    assert f"{job}/main.cpp:3:10: error: 'zero_value'" in out and "    3 |   return zero_value;" in out
    assert "cuda_source(7): error" in out and "  y[i] = zero_value;" in out
    assert "/usr/include/stdio.h:20:1: note" in out and "3 errors detected" in out
