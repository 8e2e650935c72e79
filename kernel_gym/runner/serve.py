"""A runner process: started by the judge, pre-initialized (torch, triton, the CUDA context), confined, then
serving the judge's requests over its channel until told to stop or killed.

    python -m kernel_gym.runner --fd N --device cpu|cuda --root DIR --role candidate|reference [--memory-limit-gb G]

Candidate output (print, stderr, faulthandler dumps) goes to DIR/output.log, never to the channel.
"""

from __future__ import annotations

import argparse
import faulthandler
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any


def _redirect_output(root: Path) -> None:
    log = os.open(root / "output.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    faulthandler.enable(file=sys.stderr, all_threads=False)


def preload(fork_safe: bool = False) -> None:
    """Import what every job needs (the slow part of a start; shared by runners forked from the fork server).
    `fork_safe` (the fork server): start no CUDA driver thread. `torch.utils.cpp_extension` asks
    `torch.cuda.is_available()` at import only to word a warning, and on a GPU machine that call initializes the
    driver, which starts a thread (`cuda000...`, seen on an H100): the fork server then refuses to fork. So there it
    is imported with that one question answered without the driver, and the function put back right after."""
    import torch
    import torch._dynamo  # noqa: F401 - on import it wraps torch.manual_seed; must precede the snapshot
    import torch.profiler  # noqa: F401

    if fork_safe and "torch.utils.cpp_extension" not in sys.modules:
        is_available = torch.cuda.is_available
        torch.cuda.is_available = lambda: True
        try:
            import torch.utils.cpp_extension  # noqa: F401
        finally:
            torch.cuda.is_available = is_available
    import torch.utils.cpp_extension  # noqa: F401
    import triton  # noqa: F401 - imported before any candidate, under the runner's TRITON_INTERPRET

    from kernel_gym.harness import cuda, integrity, launches, op_audit, profile  # noqa: F401 - bound before any candidate
    from kernel_gym.runner import session  # noqa: F401 - part of the snapshot


def _initialize(device: str, root: Path) -> Any:
    """Import and warm everything a job needs, then freeze the harness snapshot (evidence of tampering)."""
    preload()
    import torch

    from kernel_gym.harness import cuda, launches
    from kernel_gym.harness.integrity import Snapshot, pin_precision

    launches.install_triton_hooks()
    from kernel_gym.harness import phases

    phases.install_triton()  # Triton's compiles are compile segments (harness/phases.py)
    cuda.install(device)
    from kernel_gym import cuda_raw

    cuda_raw.TARGET_DEVICE = device  # raw-CUDA kernels launch only in a cuda runner
    _no_tqdm_monitor()
    if device == "cpu":
        from kernel_gym.harness import interpreter_math

        interpreter_math.install()  # libdevice math (Helion's torch.exp, tanh, erf...) under Triton's interpreter
    pin_precision(device)
    from kernel_gym.sandbox import shared

    shared.install_view_guards()  # numpy/DLPack of the judge's tensors (acting in candidates' runners only)
    if device == "cuda":
        torch.cuda.init()
        torch.empty(1, device="cuda").add_(1)
        torch.cuda.synchronize()
        _warm_triton_driver()
        from kernel_gym.harness.timing import track_streams

        track_streams()  # the streams the launch gate holds: those the solution makes, tracked before any of it runs
    return Snapshot()


def _warm_triton_driver() -> None:
    """Triton's CUDA driver module (`cuda_utils`: built from C by the host compiler at its first use, and cached
    under TRITON_CACHE_DIR, which is new every job) built and loaded now, once per runner. Else a runner's first job
    builds it inside its first call, before any `triton.compiler.compile`, so under the call limit (2 s on cuda)."""
    try:
        from triton.runtime import driver

        driver.active.utils  # noqa: B018 - built and loaded on first access
        driver.active.get_current_target()
    except Exception as e:  # noqa: BLE001 - a job's first call builds it then, as before
        print(f"kernel_gym runner: Triton's driver was not warmed: {e}", file=sys.stderr, flush=True)


def _no_tqdm_monitor() -> None:
    """tqdm's first progress bar starts a `tqdm_monitor` thread that outlives the call (torch.fx's interpreter makes
    a disabled bar while Helion compiles a kernel), so the background-thread check would reject every Helion
    solution: the monitor is off in runners. A solution that turns it back on starts a thread of its own."""
    try:
        import tqdm
    except ImportError:
        return
    tqdm.tqdm.monitor_interval = 0


STAGES = {"load": "compile", "build": "first_call"}


def handle(session: Any, request: dict[str, Any]) -> dict[str, Any]:
    """Run one request; candidate failures become an `error` (outcome + message), never an exception."""
    from kernel_gym.runner.evidence import failure
    from kernel_gym.runner.session import Refusal

    op = request.get("op")
    args = {k: v for k, v in request.items() if k not in ("op", "id", "nfds", "_fds", "stage")}
    try:
        if op == "begin":
            return session.begin()
        if op == "end":
            return session.end()
        if op == "load":
            return session.load(**args)
        if op == "build":
            return session.build(**args)
        if op == "bind":
            return session.bind(args["slot"], args["descriptor"], request.get("_fds", []))
        if op == "events":
            return session.bind_events(**args)
        if op == "call":
            return session.call(**args)
        if op in ("warm", "c_ms", "signals_before", "signals_after", "harness", "noop", "collect", "probe"):
            return getattr(session, op)(**args)
        return {"error": {"outcome": "crash", "message": f"unknown request {op!r}", "poisoned": False}}
    except Refusal as refusal:
        return {"error": {"outcome": refusal.outcome, "message": refusal.message, "poisoned": False,
                          "extra": refusal.extra}}
    except BaseException as exc:  # noqa: BLE001 - SystemExit from candidate code is a verdict too
        return {"error": failure(exc, request.get("stage") or STAGES.get(op, "correctness"))}


def serve(fd: int, device: str, root: Path, memory_limit_gb: float | None, role: str = "candidate") -> None:
    from kernel_gym.sandbox import limits, mount_ns

    # first, while root and single-threaded (a fresh interpreter, or a child of the fork server): what the runner's
    # uid must reach after the drop at its confinement, in a mount namespace of its own (sandbox/mount_ns.py)
    early = mount_ns.prepare(role)
    early += mount_ns.job_space(limits.jobs_folder(root), device)  # where its jobs write, of bounded size
    from kernel_gym.sandbox.channel import Channel

    applied = early + limits.apply(device, memory_limit_gb, role=role)
    (root / "pid").write_text(str(os.getpid()))  # lets a later pool sweep this folder if the runner dies
    _redirect_output(root)
    t0 = time.perf_counter()
    in_flight: dict[str, Any] = {}

    def ask_for_build(request: dict[str, Any]) -> dict[str, Any]:
        """The judge's build service, in the middle of the request in flight (harness/cuda.py, judge/builds.py)."""
        channel.send({"id": in_flight.get("id"), "build": request})
        answer = channel.receive(deadline=None)
        if answer.get("id") != in_flight.get("id") or not isinstance(answer.get("built"), dict):
            raise RuntimeError("the judge answered a build request with something else")
        return answer["built"]

    def tell_phase(phase: str) -> None:
        """A compile segment starts ("compile") or ends ("run": the judge answers once the job may use the GPU
        again), in the middle of the request in flight (harness/phases.py)."""
        channel.send({"id": in_flight.get("id"), "phase": phase})
        if phase == "run":
            answer = channel.receive(deadline=None)
            if answer.get("id") != in_flight.get("id") or answer.get("resume") is not True:
                raise RuntimeError("the judge answered the end of a compile segment with something else")

    from kernel_gym.harness import cuda, phases

    cuda.BUILD_SERVICE = ask_for_build  # before the snapshot: a solution that swaps it is harness tampering
    phases.TELL = tell_phase
    snapshot = _initialize(device, root)
    from kernel_gym.runner.session import Session

    channel = Channel.from_fd(fd)
    channel.send({"ready": True, "pid": os.getpid(), "limits": applied, "init_s": round(time.perf_counter() - t0, 3)})
    _answer_requests(channel, Session(device, root, snapshot), root, device, role, applied, in_flight)


def _answer_requests(channel: Any, session: Any, root: Path, device: str, role: str, applied: list[str],
                     in_flight: dict[str, Any]) -> None:
    """The runner's loop: one request at a time until "stop" or the judge hangs up; confined at the first "begin"."""
    from kernel_gym.sandbox import limits
    from kernel_gym.sandbox.channel import ChannelClosed

    home = Path.cwd()
    confined: list[str] | None = None
    while True:
        try:
            request = channel.receive(deadline=None)
        except ChannelClosed:
            return
        if request.get("op") == "stop":
            return
        if confined is None and request.get("op") == "begin":
            # confined before the first job's code exists, after what it keeps open (the channel, the log, CUDA,
            # the judge's interprocess events: the "events" request comes first)
            confined = limits.confine(root, device, role, workdir=limits.jobs_folder(root))
            if role == "candidate":
                from kernel_gym.sandbox import shared

                shared.refuse_views()
        os.chdir(session.workdir or home)
        in_flight["id"] = request.get("id")
        try:
            reply = handle(session, request)
        except Exception:  # a bug of ours, not the candidate's doing
            reply = {"internal_error": traceback.format_exc()}
        finally:
            os.chdir(home)
        reply["id"] = request.get("id")
        if request.get("op") == "begin":
            reply["limits"] = applied + (confined or [])
        try:
            channel.send(reply)
        except (TypeError, ValueError):  # evidence that does not serialize is a bug of ours or forged
            channel.send({"id": request.get("id"), "internal_error": "unserializable reply"})
        if request.get("op") == "end":
            limits.kill_descendants(os.getpid())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fd", type=int, required=True)
    parser.add_argument("--device", choices=("cpu", "cuda"), required=True)
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--memory-limit-gb", type=float, default=None)
    parser.add_argument("--role", choices=("candidate", "reference"), default="candidate")
    args = parser.parse_args(argv)
    serve(args.fd, args.device, args.root, args.memory_limit_gb, args.role)


if __name__ == "__main__":
    main()
