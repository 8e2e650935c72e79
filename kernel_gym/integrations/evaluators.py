"""Evaluators by a short spec string (flags and env vars carry it, e.g. KERNEL_GYM_EVALUATOR): the one place that
knows every backend, outside the core (which imports nothing from integrations/ or service/)."""

from __future__ import annotations

from kernel_gym.eval.evaluator import Evaluator
from kernel_gym.judge.local import LocalEvaluator


def evaluator_from_spec(spec: str | None = None, *, device: str = "cpu", workers: int = 1) -> Evaluator:
    """Build an evaluator from a short spec string (flags and env vars carry it, e.g. KERNEL_GYM_EVALUATOR).

    - None, "" or "local": a `LocalEvaluator` (worker pool on this machine);
    - "ray" or "ray://host:port" / "ray:auto": a `kernel_gym.integrations.ray.RayEvaluator` (connects to that cluster);
    - "http://host:port" or "https://...": a `kernel_gym.service.client.ServiceEvaluator` for `kernel-gym serve`.
    """
    spec = (spec or "").strip()
    if spec in ("", "local"):
        return LocalEvaluator(device, workers=workers)
    if spec == "ray" or spec.startswith("ray:"):
        from kernel_gym.integrations.ray import RayEvaluator

        address = spec[4:].lstrip("/") if spec.startswith("ray:") else None
        if spec.startswith("ray://"):
            address = spec
        return RayEvaluator(address=address or None)
    if spec.startswith(("http://", "https://")):
        from kernel_gym.service.client import ServiceEvaluator

        return ServiceEvaluator(spec)
    raise ValueError(f"unknown evaluator spec {spec!r}: use 'local', 'ray[:address]' or 'http(s)://host:port'")
