"""The job's inputs, made in the judge (never in a runner) from its secret seeds (judge/seeds.py)."""

from __future__ import annotations

import threading
from typing import Any

import torch

from kernel_gym.judge.seeds import seed_for

_RNG_LOCK = threading.Lock()  # torch's global generator: one input set at a time in this process


class SecretInputs:
    def __init__(self, module: Any, seed: int, key: bytes | int, device: torch.device, cast: str | None = None):
        self.module, self.base, self.key, self.device = module, seed, key, device
        self.cast = getattr(torch, cast) if cast else None  # the job's precision: floating tensors cast to it

    def _cast(self, values: list[Any]) -> list[Any]:
        if self.cast is None:
            return values
        return [v.to(self.cast) if isinstance(v, torch.Tensor) and v.is_floating_point() else v for v in values]

    def seed(self, stream: str, i: int = 0) -> int:
        return seed_for(self.base, self.key, stream, i)

    def make(self, seed: int, module: Any = None, scale: float | None = None) -> list[Any]:
        """The task's inputs for `seed` (the pristine copy of a call); floating ones times `scale` if given."""
        module = module or self.module
        devices = [torch.cuda.current_device()] if self.device.type == "cuda" else []
        with _RNG_LOCK, torch.random.fork_rng(devices=devices):
            torch.manual_seed(seed)
            with torch.device(self.device):
                values = [v.to(self.device) if isinstance(v, torch.Tensor) else v for v in module.get_inputs()]
        values = self._cast(values)
        if scale is not None:
            values = [v * scale if isinstance(v, torch.Tensor) and v.is_floating_point() else v for v in values]
        return values

    def init(self, module: Any = None) -> list[Any]:
        """The model's init inputs, under the job's public seed (both sides build from the same)."""
        with _RNG_LOCK, torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.base)
            return self._cast(list((module or self.module).get_init_inputs()))
