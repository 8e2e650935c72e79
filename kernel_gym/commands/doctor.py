"""`kernel-gym doctor`: what this machine can run, on one screen, before anything starts: the GPU, the toolchains,
the isolation runners get, and which trainer stacks are installed. Nothing is started or downloaded (the Hub check
only opens a connection, unless HF_HUB_OFFLINE is set).

    kernel-gym doctor            # a line per item: ok / no, what it is, what it is needed for
    kernel-gym doctor --json     # the same as one JSON object
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from importlib import metadata


@dataclass
class Item:
    name: str
    ok: bool
    detail: str
    needed_for: str


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _package(name: str, dist: str, needed_for: str) -> Item:
    found = importlib.util.find_spec(name) is not None
    return Item(name, found, f"{dist} {_version(dist)}" if found else f"{dist} not installed", needed_for)


def _dsl(name: str, module: str, dist: str, needed_for: str) -> Item:
    """A kernel DSL's package, under the backend's name (CuTe DSL's module is `cutlass`)."""
    item = _package(module, dist, needed_for)
    return Item(name, item.ok, item.detail, item.needed_for)


def _gpu() -> Item:
    import torch

    if not torch.cuda.is_available():
        return Item("gpu", False, f"no CUDA GPU visible (torch {torch.__version__})",
                    "device='cuda' (the CPU backend runs everything else)")
    names = sorted({torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())})
    return Item("gpu", True, f"{torch.cuda.device_count()} x {', '.join(names)} (torch {torch.__version__}, CUDA "
                f"{torch.version.cuda})", "device='cuda': timing, the profiler check, CUDA kernels")


def _tool(name: str, command: list[str], needed_for: str) -> Item:
    path = shutil.which(command[0])
    if path is None:
        return Item(name, False, f"{command[0]} not on PATH", needed_for)
    try:
        out = subprocess.run([path, *command[1:]], capture_output=True, text=True, timeout=20).stdout.strip()
    except (OSError, subprocess.TimeoutExpired) as e:
        return Item(name, False, f"{path}: {e}", needed_for)
    lines = out.splitlines() or [""]
    line = next((ln for ln in lines if "release" in ln), lines[0])  # nvcc's version line, else a compiler's first
    return Item(name, True, f"{path}: {line[:80]}", needed_for)


def _isolation() -> Item:
    from kernel_gym.sandbox import isolation

    seen = isolation.preflight()
    uid = seen.get("uid")
    pieces = ", ".join(seen.get("pieces") or []) or "none"
    if seen.get("weak"):
        return Item("isolation", False, f"runners would run with: {seen['weak']} (in force: {pieces})",
                    "least privilege for candidate code (docs/sandbox.md)")
    return Item("isolation", True, f"runners as uid {uid}, no capabilities; in force: {pieces}",
                "least privilege for candidate code (docs/sandbox.md)")


def _cutlass() -> Item:
    from kernel_gym.harness import cutlass

    ok = bool(cutlass.include_dirs())
    detail = f"nvidia-cutlass {cutlass.version()}" if ok else "nvidia-cutlass not installed (kernel-gym[cutlass])"
    return Item("cutlass", ok, detail, "CUDA sources that include CUTLASS/CuTe headers")


def _hub() -> Item:
    if os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE"):
        return Item("hub", False, "offline (HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE is set)",
                    "downloading models by name (local paths work offline)")
    try:
        socket.create_connection(("huggingface.co", 443), timeout=3).close()
    except OSError as e:
        return Item("hub", False, f"huggingface.co:443 not reachable ({e})",
                    "downloading models by name (local paths work offline)")
    return Item("hub", True, "huggingface.co:443 reachable", "downloading models by name")


CHECKS: dict[str, Callable[[], Item]] = {
    "gpu": _gpu,
    "triton": lambda: _package("triton", "triton", "Triton kernels (the CPU backend runs them under its interpreter)"),
    "nvcc": lambda: _tool("nvcc", ["nvcc", "--version"], "load_inline (CUDA) builds; the CPU backend's compile check"),
    "c++": lambda: _tool("c++", ["c++", "--version"], "load_inline builds (C++ bindings)"),
    "cutlass": _cutlass,
    "helion": lambda: _package("helion", "helion", 'backend="helion" (kernel-gym[helion]; the CPU backend runs its kernels '
                               "under Triton's interpreter)"),
    "cute_dsl": lambda: _dsl("cute_dsl", "cutlass", "nvidia-cutlass-dsl",
                             'backend="cute_dsl" (kernel-gym[cute_dsl]; its kernels run on a GPU only)'),
    "tilelang": lambda: _dsl("tilelang", "tilelang", "tilelang",
                             'backend="tilelang" (kernel-gym[tilelang]; its kernels run on a GPU only, built with nvcc)'),
    "isolation": _isolation,
    "ray": lambda: _package("ray", "ray", "RayEvaluator, the OpenRLHF and verl launchers"),
    "trl": lambda: _package("trl", "trl", "kernel_gym.integrations.trl (GRPOTrainer)"),
    "openrlhf": lambda: _package("openrlhf", "openrlhf", "kernel_gym.integrations.openrlhf"),
    "vllm": lambda: _package("vllm", "vllm", "OpenRLHF and verl training (generation on GPUs)"),
    "verl": lambda: _package("verl", "verl", "kernel_gym.integrations.verl"),
    "openenv": lambda: _package("openenv", "openenv-core", "kernel-gym serve --protocol openenv"),
    "verifiers": lambda: _package("verifiers", "verifiers", "kernel_gym.integrations.verifiers (kernel-gym[hubs])"),
    "nemo_gym": lambda: _package("nemo_gym", "nemo-gym", "kernel_gym.integrations.nemo_gym (scripts/install.sh)"),
    "skyrl_gym": lambda: _package("skyrl_gym", "skyrl-gym", "kernel_gym.integrations.skyrl (kernel-gym[hubs])"),
    "hub": _hub,
}


def diagnose(only: list[str] | None = None) -> list[Item]:
    """Every check (or `only` these), each one's failure an item that says why rather than an exception."""
    items = []
    for name in only or list(CHECKS):
        try:
            items.append(CHECKS[name]())
        except Exception as e:  # noqa: BLE001 - a check that fails says so; the others still run
            items.append(Item(name, False, f"the check failed: {type(e).__name__}: {e}"[:300], ""))
    return items


def require(names: list[str], purpose: str) -> None:
    """For a launcher: stop at once, in one line per missing item, unless every named check passes."""
    from kernel_gym.errors import ConfigError

    missing = [i for i in diagnose(names) if not i.ok]
    if missing:
        raise ConfigError(f"{purpose} needs: " + "; ".join(f"{i.name} ({i.detail})" for i in missing)
                          + " (kernel-gym doctor shows what this machine has)")


def run(args: argparse.Namespace) -> int:
    if args.require:  # a launcher's pre-flight: silent when all is there, one line and exit 2 otherwise
        from kernel_gym.errors import ConfigError

        try:
            require(args.require, args.purpose)
        except ConfigError as e:
            print(e, file=sys.stderr)
            return 2
        return 0
    items = diagnose(args.only)
    if args.json:
        print(json.dumps({i.name: asdict(i) for i in items}))
        return 0
    width = max(len(i.name) for i in items)
    for i in items:
        print(f"{'ok' if i.ok else 'no':2}  {i.name:{width}}  {i.detail}" + (f"  [{i.needed_for}]" if i.needed_for else ""))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("doctor", help="what this machine can run (GPU, toolchains, isolation, trainer stacks)",
                       description=__doc__.split("\n")[0])
    p.add_argument("--json", action="store_true", help="one JSON object: name -> {ok, detail, needed_for}")
    p.add_argument("--only", nargs="*", choices=list(CHECKS), default=None, help="these checks only")
    p.add_argument("--require", nargs="*", choices=list(CHECKS), default=None,
                   help="for launch scripts: exit 2 with one line naming what is missing (silent when all is there)")
    p.add_argument("--purpose", default="this run", help="with --require: what needs them (said in the line)")
    p.set_defaults(func=run)
