"""`kernel-gym serve`: evaluation over HTTP (FastAPI + uvicorn) for trainers outside Ray.

    kernel-gym serve                                          127.0.0.1:8000, local pool, one worker
    kernel-gym serve --workers 8 --device cuda                a local pool of 8 workers (GPUs round-robin)
    kernel-gym serve --evaluator ray:auto                     one Ray actor per GPU of a running cluster
    KERNEL_GYM_TOKEN=... kernel-gym serve --host 0.0.0.0      beyond localhost a token is required

Clients: `kernel_gym.service.client.ServiceEvaluator(url, token=...)`, or
`gym.make(..., evaluator=evaluator_from_spec("http://host:8000"))`. Endpoints: POST /v1/evaluate, GET /health,
GET /metrics (see docs/distributed.md).
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
    parser.set_defaults(func=run)


def _evaluator(args: argparse.Namespace):
    spec = args.evaluator.strip()
    if spec == "local":
        from kernel_gym.device import local_device
        from kernel_gym.eval.evaluator import LocalEvaluator

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
    app = create_app(evaluator, token=token, max_request_bytes=int(args.max_request_mb * 2**20), close_evaluator=True)
    where = f"http://{args.host}:{args.port}"
    print(f"kernel-gym serve: {type(evaluator).__name__} on {getattr(evaluator, 'device', '?')} at {where} "
          f"({'token required' if token else 'no token: localhost only'})", flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level)
    return 0
