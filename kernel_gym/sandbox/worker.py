"""A worker process: started once, pre-initialized (torch, triton, CUDA context), then runs jobs one at a time.

    python -m kernel_gym.sandbox.worker --in-fd R --out-fd W --device cpu|cuda --root DIR

Candidate output (print, stderr, faulthandler dumps) goes to DIR/output.log, never to the message pipe.
"""

from __future__ import annotations

import argparse
import faulthandler
import os
import shutil
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path


def _redirect_output(root: Path) -> None:
    log = os.open(root / "output.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    faulthandler.enable(file=sys.stderr, all_threads=False)


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _initialize(device: str, root: Path) -> object:
    """Import and warm everything a job needs, then freeze the harness snapshot."""
    import torch
    import torch._dynamo  # noqa: F401 - on import it wraps torch.manual_seed; must precede the snapshot
    import torch.profiler  # noqa: F401
    import torch.utils.cpp_extension  # noqa: F401
    import triton  # noqa: F401 - imported before any candidate, under the worker's TRITON_INTERPRET

    from kernel_gym.eval import (
        cuda,
        launches,
        profile,  # noqa: F401 - part of the snapshot (binds the profiler before any candidate runs)
        runner,  # noqa: F401 - part of the snapshot
    )
    from kernel_gym.eval.integrity import Snapshot, pin_precision

    launches.install_triton_hooks()
    cuda.install(device, root / "extensions")
    from kernel_gym import cuda_raw

    cuda_raw.TARGET_DEVICE = device  # raw-CUDA kernels launch only in a cuda worker
    pin_precision(device)
    if device == "cuda":
        torch.cuda.init()
        torch.empty(1, device="cuda").add_(1)
        torch.cuda.synchronize()
        from kernel_gym.eval.timing import pooled_streams

        pooled_streams(torch.device("cuda"))  # the streams the launch gate holds, named before any candidate runs
    return Snapshot()


def serve(in_fd: int, out_fd: int, device: str, root: Path, memory_limit_gb: float | None) -> None:
    from kernel_gym.sandbox import limits, protocol

    applied = limits.apply(device, memory_limit_gb)
    (root / "pid").write_text(str(os.getpid()))  # lets a later pool sweep this folder if the worker dies
    _redirect_output(root)
    t0 = time.perf_counter()
    snapshot = _initialize(device, root)
    from kernel_gym.eval.job import EvalJob
    from kernel_gym.eval.runner import run_job

    protocol.send(out_fd, {"ready": True, "pid": os.getpid(), "limits": applied,
                           "init_s": round(time.perf_counter() - t0, 3)})
    reader = protocol.Reader(in_fd)
    home = Path.cwd()
    while True:
        try:
            message = reader.receive(deadline=None)
        except protocol.ChannelClosed:
            return
        nonce = message.get("nonce")
        job = EvalJob.from_dict(message["job"])
        workdir = Path(tempfile.mkdtemp(prefix="job_", dir=root))
        os.environ["TORCH_EXTENSIONS_DIR"] = str(workdir / "extensions")
        os.chdir(workdir)
        threads = set(threading.enumerate())
        try:
            result, poisoned = run_job(job, workdir=workdir, progress=lambda stage, nonce=nonce: protocol.send(
                out_fd, {"nonce": nonce, "stage": stage}), snapshot=snapshot)
        except Exception:  # a bug of ours or a broken task, not the candidate's doing
            protocol.send(out_fd, {"nonce": nonce, "internal_error": traceback.format_exc()})
            os._exit(1)
        finally:
            os.chdir(home)
            limits.kill_descendants(os.getpid())
            _reap()
            shutil.rmtree(workdir, ignore_errors=True)
        leftover = [t for t in threading.enumerate() if t not in threads and t.is_alive()]
        recycle = poisoned or bool(leftover) or bool(snapshot.changes())
        protocol.send(out_fd, {"nonce": nonce, "result": result.to_dict(), "recycle": recycle})
        # The env answers every result with a ping: a pong proves this loop, not candidate code, sent the result.
        try:
            ping = reader.receive(deadline=None)
        except protocol.ChannelClosed:
            return
        protocol.send(out_fd, {"pong": ping.get("ping")})
        if recycle:
            os._exit(0)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--in-fd", type=int, required=True)
    parser.add_argument("--out-fd", type=int, required=True)
    parser.add_argument("--device", choices=("cpu", "cuda"), required=True)
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--memory-limit-gb", type=float, default=None)
    args = parser.parse_args(argv)
    serve(args.in_fd, args.out_fd, args.device, args.root, args.memory_limit_gb)


if __name__ == "__main__":
    main()
