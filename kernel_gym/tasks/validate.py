"""Is a candidate reference program a usable task? The checks every generated task (sampled or LLM) passes.

1. format: KernelBench shape (`Model`, `get_inputs`, `get_init_inputs`) and a `KERNEL_GYM` dict with "cpu" and
   "alt" sizes that name size globals of the file;
2. runs on the CPU at the "cpu" and "alt" sizes, every output a floating tensor with more than one element;
3. deterministic: the same seed gives bit-identical outputs twice, and so does a second forward of the same
   model on the same inputs (no dropout or other randomness in `forward`);
4. finite and non-constant outputs;
5. uses its inputs: replacing any one input tensor by fresh random values changes the output;
6. expensive enough: the roofline estimate at full size (or, with `measure=True` and a GPU, the measured time) is
   at least `min_ms`, and the inputs stay under `max_input_bytes`.

`validate_source` runs the program in this process (for trusted, template-made programs);
`validate_isolated` runs it in a child process (`python -m kernel_gym.tasks.validate FILE`), for model-written code.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from kernel_gym.errors import TaskFormatError
from kernel_gym.tasks.loading import load_reference
from kernel_gym.tasks.roofline import build, trace_source
from kernel_gym.tasks.task import parse_task

MIN_MS = 0.1
MAX_INPUT_BYTES = 1 << 30
REASONS = ("format", "error", "nondeterministic", "non_finite", "constant", "ignores_input", "too_fast", "too_large",
           "duplicate")


@dataclass(frozen=True)
class Verdict:
    """The outcome of validating one program; `reason` (one of REASONS) names the first failed check."""

    ok: bool
    reason: str | None = None
    detail: str = ""
    signature: tuple[str, ...] = ()
    estimate_ms: float | None = None
    measured_ms: float | None = None
    input_bytes: int = 0
    metadata: dict[str, Any] = field(default_factory=dict)


class _Reject(Exception):
    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason, self.detail = reason, detail


def _outputs(out: Any) -> list[torch.Tensor]:
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    for o in outs:
        if not isinstance(o, torch.Tensor) or not o.is_floating_point():
            raise _Reject("format", f"forward must return floating tensors, got {type(o).__name__}")
    return outs


def _run(source: str, sizes: dict[str, Any], seed: int, replace: int | None = None) -> tuple[list, list, Any]:
    """Build under `seed`, run; with `replace=i`, input i is drawn again from another seed first."""
    module = load_reference(source, sizes)
    model, inputs = build(module, seed)
    if replace is not None:
        torch.manual_seed(seed + 7919 * (replace + 1))
        inputs[replace] = module.get_inputs()[replace]
    with torch.no_grad():
        return inputs, _outputs(model(*inputs)), model


def _check_outputs(outs: list[torch.Tensor], which: str) -> None:
    for i, o in enumerate(outs):
        if o.numel() < 2:
            raise _Reject("constant", f"{which}: output {i} has {o.numel()} element(s)")
        if not torch.isfinite(o).all():
            raise _Reject("non_finite", f"{which}: output {i} has NaN or inf")
        spread = float(o.max() - o.min())
        if spread <= 1e-6 * max(1.0, float(o.abs().max())):
            raise _Reject("constant", f"{which}: output {i} is constant ({float(o.flatten()[0]):.6g})")


def _check_runs(source: str, sizes: dict[str, Any], which: str, seed: int) -> None:
    inputs, outs, model = _run(source, sizes, seed)
    _check_outputs(outs, which)
    _, again, _ = _run(source, sizes, seed)
    if any(not torch.equal(a, b) for a, b in zip(outs, again)):
        raise _Reject("nondeterministic", f"{which}: two runs under seed {seed} differ")
    with torch.no_grad():  # the same model and inputs again, the RNG now elsewhere: no randomness in forward
        if any(not torch.equal(a, b) for a, b in zip(outs, _outputs(model(*inputs)))):
            raise _Reject("nondeterministic", f"{which}: a second forward on the same inputs differs")
    for i, x in enumerate(inputs):
        if isinstance(x, torch.Tensor) and x.is_floating_point():
            _, other, _ = _run(source, sizes, seed, replace=i)
            if all(torch.equal(a, b) for a, b in zip(outs, other)):
                raise _Reject("ignores_input", f"{which}: the output does not change when input {i} changes")


def _checks(source: str, seed: int, min_ms: float, max_input_bytes: int, measure: bool) -> Verdict:
    try:
        task = parse_task("candidate", source)
    except TaskFormatError as e:
        raise _Reject("format", str(e)) from None
    meta = task.metadata
    for key in ("cpu", "alt"):
        if not isinstance(meta.get(key), dict) or not meta[key]:
            raise _Reject("format", f'KERNEL_GYM needs a non-empty "{key}" dict of size globals')
        unknown = set(meta[key]) - set(task.size_globals)
        if unknown:
            raise _Reject("format", f'KERNEL_GYM["{key}"] names {sorted(unknown)}, which are not size globals')
    for which in ("cpu", "alt"):
        _check_runs(source, meta[which], which, seed)
    full = trace_source(source)
    if full.input_bytes > max_input_bytes:
        raise _Reject("too_large", f"inputs take {full.input_bytes / 2**20:.0f} MiB at full size")
    measured = None
    if measure and torch.cuda.is_available():
        from kernel_gym.tasks.measure import time_reference

        measured = time_reference(source)
    took = measured if measured is not None else full.estimate_ms
    if took < min_ms:
        how = "measured" if measured is not None else "estimated"
        raise _Reject("too_fast", f"{how} {took:.4f} ms at full size, under {min_ms} ms")
    return Verdict(True, signature=full.signature, estimate_ms=full.estimate_ms, measured_ms=measured,
                   input_bytes=full.input_bytes, metadata=meta)


def validate_source(source: str, *, seed: int = 0, min_ms: float = MIN_MS, max_input_bytes: int = MAX_INPUT_BYTES,
                    measure: bool = False) -> Verdict:
    """Run every check on `source` in this process; never raises for a bad program."""
    try:
        return _checks(source, seed, min_ms, max_input_bytes, measure)
    except _Reject as r:
        return Verdict(False, r.reason, r.detail)
    except Exception as e:  # noqa: BLE001 - any failure of the candidate program is a verdict
        return Verdict(False, "error", f"{type(e).__name__}: {e}"[:500])


def validate_isolated(source: str, *, timeout: float = 300, **kwargs: Any) -> Verdict:
    """`validate_source` in a child Python process (a hang, crash or stray side effect stays there)."""
    with tempfile.TemporaryDirectory(prefix="kg_validate_") as tmp:
        path = Path(tmp) / "candidate.py"
        path.write_text(source)
        cmd = [sys.executable, "-m", "kernel_gym.tasks.validate", str(path)]
        for key, value in kwargs.items():
            flag = f"--{key.replace('_', '-')}"
            if isinstance(value, bool):
                cmd += [flag] if value else []
            else:
                cmd += [flag, str(value)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=tmp)
        except subprocess.TimeoutExpired:
            return Verdict(False, "error", f"validation took over {timeout:.0f} s")
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        return Verdict(False, "error", f"validator exited {proc.returncode}: {proc.stderr.strip()[-500:]}")
    data = json.loads(lines[-1])
    data["signature"] = tuple(data["signature"])
    return Verdict(**data)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kernel_gym.tasks.validate", description=__doc__.split("\n")[0])
    parser.add_argument("file")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--min-ms", type=float, default=MIN_MS)
    parser.add_argument("--max-input-bytes", type=int, default=MAX_INPUT_BYTES)
    parser.add_argument("--measure", action="store_true")
    args = parser.parse_args(argv)
    verdict = validate_source(Path(args.file).read_text(), seed=args.seed, min_ms=args.min_ms,
                              max_input_bytes=args.max_input_bytes, measure=args.measure)
    print(json.dumps(asdict(verdict)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
