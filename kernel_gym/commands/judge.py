"""`kernel-gym judge start|stop|status`: the machine's judge for a device (one per GPU, shared by every client).

    kernel-gym judge start --device cuda --gpu 0 --slots 8     start it now (clients also start it on first use)
    kernel-gym judge status [--device cuda] [--gpu 0]          queue depth, running jobs, waits, clients (JSON)
    kernel-gym judge stop [--device cuda] [--gpu 0]
"""

from __future__ import annotations

import argparse
import json
import sys


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("judge", help="start, stop or inspect the machine's judge for a device",
                            description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=("start", "stop", "status"))
    parser.add_argument("--device", default="cuda", choices=("cpu", "cuda"), help="default cuda")
    parser.add_argument("--gpu", type=int, default=None,
                        help="device index among CUDA_VISIBLE_DEVICES (default 0)")
    parser.add_argument("--slots", type=int, default=8, help="jobs at once (start only; default 8)")
    parser.add_argument("--idle-exit-s", type=float, default=None,
                        help="exit after this long without clients (start only; default $KERNEL_GYM_JUDGE_IDLE_EXIT_S, "
                        "else 600)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from kernel_gym.errors import SandboxError
    from kernel_gym.judge.client import JudgeClient, ensure_judge, socket_path, stop_judge

    path = socket_path(args.device, args.gpu)
    if args.action == "stop":
        stopped = stop_judge(path)
        print(f"stopped the judge at {path}" if stopped else f"no judge runs at {path}")
        return 0
    if args.action == "start":
        try:
            path = ensure_judge(args.device, args.gpu, args.slots, idle_exit_s=args.idle_exit_s)
        except SandboxError as e:
            print(f"kernel-gym judge: {e}", file=sys.stderr)
            return 1
    client = JudgeClient(path, args.device)
    try:
        status = client.status() if (args.action == "start" or path.exists()) else {}
    except SandboxError:
        status = {}
    finally:
        client.close()
    if not status:
        print(json.dumps({"running": False, "socket": str(path)}))
        return 0 if args.action == "status" else 1
    print(json.dumps({"running": True, **status}, indent=1))
    weak = (status.get("isolation") or {}).get("weak")
    if weak:  # least privilege not in force (docs/sandbox.md): said on stderr too, where it is seen
        print(f"kernel-gym judge: WARNING: runners are not isolated as they should be: {'; '.join(weak)}",
              file=sys.stderr)
    return 0
