"""The outputs' structure as the reference's runner reports it (trusted), the candidate's against it, and the
outputs reassembled in the order the model returned them."""

from __future__ import annotations

from typing import Any

import torch

from kernel_gym.eval.result import Mismatch
from kernel_gym.sandbox.shared import Spec

_LOW = ("float16", "bfloat16")
_HIGH = ("float32", "float64")


def learn(evidence: dict[str, Any]) -> tuple[list[Spec], list[Any]]:
    """The tensor outputs' specs (the shape of every buffer the judge shares from now on) and the plain values."""
    specs, values = [], []
    for item in evidence.get("structure", []):
        if "shape" in item:
            specs.append(Spec(tuple(item["shape"]), item["dtype"]))
        else:
            values.append(item.get("value"))
    return specs, values


def structure_mismatch(expected: tuple[list[Spec], list[Any]], evidence: dict[str, Any], device: torch.device,
                       allow_precision: bool) -> Mismatch | None:
    """A difference in the outputs' number, shapes, dtypes or devices (the candidate's as its runner reports it
    against the reference's structure). fp16/bf16 where the task's output is fp32/fp64 is kind "downcast" (the
    `precision_downcast` check's), unless the job allows lower precision."""
    specs, values = expected
    got = evidence.get("structure") or []
    n_expected = len(specs) + len(values)
    if len(got) != n_expected:
        return Mismatch(where=f"returned {len(got)} outputs, expected {n_expected}", kind="structure")
    tensors = [g for g in got if "shape" in g]
    if len(tensors) != len(specs):
        return Mismatch(where="an output is not a tensor where the reference returns one", kind="structure")
    for i, (g, e) in enumerate(zip(tensors, specs)):
        if tuple(g["shape"]) != e.shape:
            return Mismatch(where=f"output {i} has shape {tuple(g['shape'])}, expected {e.shape}", kind="structure")
        if g["dtype"] != e.dtype:
            if g["dtype"] in _LOW and e.dtype in _HIGH and not allow_precision:
                return Mismatch(where=f"output {i} is {g['dtype']} where the task's is {e.dtype}", kind="downcast")
            return Mismatch(where=f"output {i} has dtype torch.{g['dtype']}, expected torch.{e.dtype}",
                            kind="structure")
        if g.get("device") != device.type:
            return Mismatch(where=f"output {i} is on {g.get('device')}, expected {device.type}", kind="structure")
    if not evidence.get("copied"):
        return Mismatch(where="the outputs could not be handed over", kind="structure")
    return None


def assemble(tensors: list[torch.Tensor], evidence: dict[str, Any]) -> list[Any]:
    """Outputs in the order the model returned them: snapshotted tensors, reported plain values."""
    out, k = [], 0
    for item in evidence.get("structure", []):
        if "shape" in item and k < len(tensors):
            out.append(tensors[k])
            k += 1
        else:
            out.append(item.get("value"))
    return out
