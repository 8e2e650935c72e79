"""Which precisions each built-in task runs at, measured: its reference at CPU sizes in fp16 and bf16 (inputs and
weights cast, as `precision=` does) against a float64 run of the same weights rounded the same way. A precision is
supported when every output stays finite where the float64 one is and its relative L2 error is within `MAX_REL_L2`
(a reference that overflows or loses its result at that precision cannot set an error budget).

    python -m kernel_gym.tasks.precisions            # every task: writes "precisions" and "precision_rel_l2" into
                                                     # tasks/manifest.json
"""

from __future__ import annotations

import argparse
import math
from typing import Any

import torch

from kernel_gym.tasks.precision import PRECISIONS

MAX_REL_L2 = {"fp16": 2e-2, "bf16": 1e-1}  # ~10x the rounding of a long reduction at that precision


def _floating(x: Any) -> bool:
    return isinstance(x, torch.Tensor) and x.is_floating_point()


def _outputs(out: Any) -> list[Any]:
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _run(module: Any, cast: torch.dtype, seed: int, exact: bool = False) -> list[Any]:
    """The reference's outputs at precision `cast`, as the judge runs it (init inputs, the model and the inputs
    cast); `exact`: its float64 oracle (the same values, rounded through `cast`, then cast to float64)."""
    def at(values: list[Any], dtype: torch.dtype) -> list[Any]:
        return [v.to(dtype) if _floating(v) else v for v in values]

    torch.manual_seed(seed)
    init = at(list(module.get_init_inputs()), cast)
    torch.manual_seed(seed)
    model = module.Model(*init).to(cast)
    torch.manual_seed(seed + 1)
    inputs = at(module.get_inputs(), cast)
    if exact:
        model, inputs = model.to(torch.float64), at(inputs, torch.float64)
    with torch.no_grad():
        return _outputs(model(*inputs))


def rel_l2(task: Any, precision: str, seed: int = 0) -> float:
    """The reference's worst relative L2 error at `precision` against float64 (inf where it is not finite)."""
    from kernel_gym.tasks.loading import load_reference

    dtype = getattr(torch, PRECISIONS[precision])
    module = load_reference(task.source, task.sizes_for("cpu"))
    low = _run(module, dtype, seed)
    exact = _run(module, dtype, seed, exact=True)
    worst = 0.0
    for y, o in zip(low, exact):
        if not _floating(y):
            continue
        y, o = y.double(), o.double()
        if not torch.equal(torch.isfinite(y), torch.isfinite(o)):
            return math.inf
        fin = torch.isfinite(o)
        err = float(torch.linalg.vector_norm((y - o)[fin])) / max(float(torch.linalg.vector_norm(o[fin])), 1e-30)
        worst = max(worst, err)
    return worst


def measure(task: Any) -> dict[str, Any]:
    """The manifest's fields for one task: "precisions" (fp32 first) and "precision_rel_l2"; a precision whose
    reference has no cpu kernel (e.g. avg_pool3d in half precision) is kept, unmeasured, and said in
    "precision_cpu_missing" (the GPU has those kernels; on the CPU backend such a job's reference fails, said so)."""
    from kernel_gym.tasks.precision import possible

    errors: dict[str, float | None] = {}
    missing: dict[str, str] = {}
    runs = ["fp32"]
    for p in ("fp16", "bf16"):
        if p not in possible(task):
            continue
        try:
            errors[p] = rel_l2(task, p)
        except (RuntimeError, NotImplementedError) as e:  # no half-precision kernel for an op on cpu
            errors[p], missing[p] = None, str(e).splitlines()[0][:200]
        if errors[p] is None or errors[p] <= MAX_REL_L2[p]:
            runs.append(p)
    out: dict[str, Any] = {"precisions": runs, "precision_rel_l2": {
        p: (round(e, 6) if e is not None and math.isfinite(e) else None) for p, e in errors.items()}}
    if missing:
        out["precision_cpu_missing"] = missing
    return out


def main(argv: list[str] | None = None) -> int:
    from kernel_gym.tasks import list_tasks, load_task
    from kernel_gym.tasks.manifest import default_path, read_manifest, write_manifest

    parser = argparse.ArgumentParser(prog="python -m kernel_gym.tasks.precisions", description=__doc__.split("\n")[0])
    parser.add_argument("--only", nargs="*", default=None, help="these task ids only")
    args = parser.parse_args(argv)
    data = read_manifest()
    for tid in args.only or list_tasks():
        entry = measure(load_task(tid))
        data["tasks"].setdefault(tid, {}).update(entry)
        print(tid, entry["precisions"], entry["precision_rel_l2"], flush=True)
    write_manifest(data, default_path())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
