"""A child forked from a process that imported kernel_gym does not hang in its first parallel torch op.

GNU OpenMP (torch's intra-op pool) cannot be used in a child forked after the parent used it; gymnasium's
AsyncVectorEnv forks its sub-envs, and on the cpu backend a sub-env's step runs torch (the judge's inputs and
comparison). In the parallel test run the sub-envs of tests/test_env.py::test_async_vector_env hung in the judge's
comparison for as long as the run lasted. Without the fork handler (a process that imported only torch), the same
child hangs on this machine (2 cores, torch 2.14.1, GNU OpenMP): measured when the handler was written."""

import subprocess
import sys
import textwrap

import pytest

CHILD_OP = textwrap.dedent("""
    import os, sys, time
    import torch
    {imports}
    torch.set_num_threads(2)
    x = torch.randn(4_000_000)
    (x - x).abs().max()  # the parent uses the intra-op pool
    pid = os.fork()
    if pid == 0:
        g = torch.randn(16, 256)
        g[g.isfinite()].sum()  # a boolean mask on 4096 elements (what the sub-envs hung in)
        y = torch.randn(4_000_000)
        (y - y).abs().max()  # a large elementwise op
        os._exit(0)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            print("child finished", os.waitstatus_to_exitcode(status))
            sys.exit(0)
        time.sleep(0.05)
    os.kill(pid, 9)
    print("child hung")
""")


def run(imports: str) -> str:
    proc = subprocess.run([sys.executable, "-c", CHILD_OP.format(imports=imports)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip()


@pytest.mark.timeout(300)
def test_a_forked_child_runs_torch_after_its_parent_did():
    assert run("import kernel_gym") == "child finished 0"
