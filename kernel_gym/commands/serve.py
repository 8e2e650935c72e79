"""`kernel-gym serve`: evaluation over HTTP (FastAPI + uvicorn) for trainers outside Ray.

    kernel-gym serve                                          127.0.0.1:8000, local pool, one worker
    kernel-gym serve --workers 8 --device cuda                a local pool of 8 workers (GPUs round-robin)
    kernel-gym serve --evaluator ray:auto                     one Ray actor per GPU of a running cluster
    KERNEL_GYM_TOKEN=... kernel-gym serve --host 0.0.0.0      beyond localhost a token is required
    kernel-gym serve --protocol openenv --env-kwargs '{"task": "suite:level1", "max_turns": 4}'
                                                              whole episodes over OpenEnv's protocol

Clients: `kernel_gym.service.client.ServiceEvaluator(url, token=...)`, or
`gym.make(..., evaluator=evaluator_from_spec("http://host:8000"))`. Endpoints: POST /v1/evaluate, GET /health,
GET /metrics (see docs/distributed.md).

With --protocol openenv the server speaks OpenEnv's environment protocol instead (openenv-core's server: /ws
sessions, POST /reset, POST /step, GET /state, /schema, /health): each session is one KernelRefine episode built
from --preset and --env-kwargs, evaluated by the same evaluator. Client:
`kernel_gym.integrations.openenv.KernelGymClient(base_url="http://127.0.0.1:8000")` (see docs/trainers.md).
"""

from __future__ import annotations

import argparse
import os
import sys


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("serve", help="serve evaluation over HTTP", description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--token", default=None,
                        help="bearer token clients must send (default $KERNEL_GYM_TOKEN); required beyond localhost")
    parser.add_argument("--evaluator", default="local", help="'local' (a worker pool here) or 'ray[:address]'")
    parser.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    parser.add_argument("--workers", type=int, default=1, help="sandbox workers of the local pool")
    parser.add_argument("--max-request-mb", type=float, default=16.0, help="largest request body accepted")
    parser.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"))
    parser.add_argument("--protocol", default="kernel-gym", choices=("kernel-gym", "openenv"),
                        help="'kernel-gym' (evaluation jobs, /v1/evaluate) or 'openenv' (whole episodes, OpenEnv's "
                             "environment protocol)")
    parser.add_argument("--env-kwargs", default="{}",
                        help="openenv: JSON object of gym.make keywords for every session (task, max_turns, ...)")
    parser.add_argument("--preset", default=None, help="openenv: an env preset (envs/NAME.toml), e.g. kevin")
    parser.add_argument("--max-sessions", type=int, default=64, help="openenv: concurrent episodes (WebSocket sessions)")
    parser.set_defaults(func=run)


def _evaluator(args: argparse.Namespace):
    spec = args.evaluator.strip()
    if spec == "local":
        from kernel_gym.device import local_device
        from kernel_gym.judge.local import LocalEvaluator

        device = local_device(args.device)  # "cuda" without a GPU: one line, exit 2
        gpus = None
        if device == "cuda":
            import torch

            gpus = list(range(torch.cuda.device_count()))
        evaluator = LocalEvaluator(device, workers=args.workers, gpus=gpus)
        evaluator.start()
        return evaluator
    if spec == "ray" or spec.startswith("ray:"):
        from kernel_gym.integrations.ray import RayEvaluator

        address = spec if spec.startswith("ray://") else (spec[4:] if spec.startswith("ray:") else None)
        return RayEvaluator(address=address or None, device=args.device)
    raise ValueError(f"--evaluator must be 'local' or 'ray[:address]', not {spec!r}")


def run(args: argparse.Namespace) -> int:
    from kernel_gym.errors import KernelGymError
    from kernel_gym.service.app import check_bind, create_app

    token = args.token or os.environ.get("KERNEL_GYM_TOKEN") or None
    try:
        check_bind(args.host, token)
        import uvicorn

        evaluator = _evaluator(args)
    except (KernelGymError, ValueError, ImportError) as e:
        print(f"kernel-gym serve: {e}", file=sys.stderr)
        return 2
    if args.protocol == "openenv":
        try:
            app = _openenv_app(args, evaluator, token)
        except (KernelGymError, ValueError, ImportError) as e:
            evaluator.close()
            print(f"kernel-gym serve: {e}", file=sys.stderr)
            return 2
    else:
        app = create_app(evaluator, token=token, max_request_bytes=int(args.max_request_mb * 2**20),
                         close_evaluator=True)
    where = f"http://{args.host}:{args.port}"
    print(f"kernel-gym serve ({args.protocol}): {type(evaluator).__name__} on {getattr(evaluator, 'device', '?')} at {where} "
          f"({'token required' if token else 'no token: localhost only'})", flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level)
    return 0


def _openenv_app(args: argparse.Namespace, evaluator, token: str | None):
    import json

    from kernel_gym.env import KernelRefineEnv
    from kernel_gym.integrations.openenv import create_openenv_app

    env_kwargs = json.loads(args.env_kwargs or "{}")
    if not isinstance(env_kwargs, dict):
        raise ValueError(f"--env-kwargs must be a JSON object, not {args.env_kwargs!r}")
    if args.preset:
        env_kwargs.setdefault("preset", args.preset)
    env_kwargs.setdefault("device", getattr(evaluator, "device", None) or args.device)
    KernelRefineEnv(evaluator=evaluator, **env_kwargs).close()  # a bad task or keyword fails now, in one line
    app = create_openenv_app(env_kwargs=env_kwargs, evaluator=evaluator, max_concurrent_envs=args.max_sessions,
                             token=token)
    app.router.on_shutdown.append(evaluator.close)
    return app
