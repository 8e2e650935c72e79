"""The runners' fork server: one process per judge and device that has imported what every runner needs (torch,
triton, the harness; ~6 s of CPU on a small machine) and forks each new runner from that state in milliseconds.

    python -m kernel_gym.runner.forkserver --fd N --device cpu|cuda

It is the judge's code only: it never loads a task or a candidate, holds no seed, reference or secret, and has no
CUDA context (CUDA cannot be forked; each runner starts its own after the fork). Its one channel, to the judge,
carries JSON requests `{"op": "spawn", "id", "root", "role", "memory_limit_gb", "env", "nfds": 1}` with the runner's
end of its channel as the descriptor; the reply is `{"id", "pid"}` (or `{"id", "error"}`), and every runner that
ends is reported as `{"exit": pid, "rc": rc}` (rc as `subprocess.Popen.returncode`: -N for signal N), since the fork
server, not the judge, is its parent. A runner forked here starts its own session, takes the environment the judge
gives it, and then runs exactly what a runner started by `python -m kernel_gym.runner` runs (runner/serve.py).
The fork server dies with the judge (parent-death signal), and its runners with it.
"""

from __future__ import annotations

import argparse
import os
import select
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any


def threads() -> int:
    return len(os.listdir("/proc/self/task"))


def thread_names() -> list[str]:
    """The kernel's names of this process's threads (what started a thread shows in its name)."""
    names = []
    for tid in sorted(os.listdir("/proc/self/task")):
        try:
            names.append(Path(f"/proc/self/task/{tid}/comm").read_text().strip())
        except OSError:
            pass
    return names


def _child(request: dict[str, Any], fd: int, device: str, server: Any) -> None:
    """In the forked runner: its own session, folder and environment, then the runner's program. Never returns."""
    code = 1
    try:
        server.close()  # the fork server's channel to the judge: not the runner's
        os.setsid()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        null = os.open(os.devnull, os.O_RDWR)
        for target in (0, 1, 2):
            os.dup2(null, target)
        os.close(null)
        os.environ.clear()
        os.environ.update(request["env"])
        tempfile.tempdir = None  # computed again from TMPDIR (the runner's folder)
        root = Path(request["root"])
        os.chdir(root)
        from kernel_gym.runner.serve import serve

        serve(fd, device, root, request.get("memory_limit_gb"), request.get("role", "candidate"))
        code = 0
    except BaseException:  # noqa: BLE001 - a runner that fails to start reports it in its log and exits
        try:
            with open(Path(request["root"]) / "output.log", "a") as log:
                log.write(traceback.format_exc())
        except OSError:
            pass
    finally:
        os._exit(code)


def _reap() -> list[tuple[int, int]]:
    ended = []
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return ended
        if pid == 0:
            return ended
        ended.append((pid, os.waitstatus_to_exitcode(status)))  # -N for signal N, as Popen.returncode


def serve(fd: int, device: str) -> None:
    from kernel_gym.runner.serve import preload
    from kernel_gym.sandbox import limits
    from kernel_gym.sandbox.channel import Channel, ChannelClosed, ChannelTimeout

    limits.die_with_parent()
    preload(fork_safe=True)
    channel = Channel.from_fd(fd)
    channel.send({"ready": True, "pid": os.getpid(), "threads": threads()})
    while True:
        for pid, rc in _reap():
            channel.send({"exit": pid, "rc": rc})
        if not select.select([channel.sock], [], [], 0.05)[0] and b"\n" not in channel.buffer:
            continue
        try:
            request = channel.receive(deadline=time.monotonic() + 5)  # (a message is sent whole: no real wait)
        except ChannelTimeout:
            continue
        except (ChannelClosed, ValueError):
            return
        fds = request.pop("_fds", [])
        if request.get("op") == "stop":
            return
        if request.get("op") != "spawn" or len(fds) != 1:
            for extra in fds:
                os.close(extra)
            channel.send({"id": request.get("id"), "error": f"unknown request {request.get('op')!r}"})
            continue
        if threads() != 1:  # forking a process with other threads can copy a lock mid-use: refuse, the judge spawns
            os.close(fds[0])
            channel.send({"id": request.get("id"),
                          "error": f"the fork server has {threads()} threads ({', '.join(thread_names())})"})
            continue
        pid = os.fork()
        if pid == 0:
            _child(request, fds[0], device, channel.sock)
        os.close(fds[0])
        channel.send({"id": request.get("id"), "pid": pid})


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fd", type=int, required=True)
    parser.add_argument("--device", choices=("cpu", "cuda"), required=True)
    args = parser.parse_args(argv)
    try:
        serve(args.fd, args.device)
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
