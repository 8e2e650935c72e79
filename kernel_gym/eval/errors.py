"""Turn an exception raised by candidate code into an outcome and a message the agent can act on."""

from __future__ import annotations

import traceback

from kernel_gym.eval.result import Outcome

_POISON_MARKERS = ("illegal memory access", "device-side assert", "misaligned address", "unspecified launch failure",
                   "an illegal instruction", "CUDA error", "CUDA_ERROR", "cudaError", "AcceleratorError")
MAX_MESSAGE_CHARS = 3000


def candidate_traceback(exc: BaseException, marker: str = "candidate_") -> str:
    """The exception with only the frames inside the candidate's file (plus the last frame), trimmed."""
    frames = traceback.extract_tb(exc.__traceback__)
    keep = [f for f in frames if marker in f.filename]
    if frames and (not keep or keep[-1] is not frames[-1]):
        keep.append(frames[-1])
    lines = []
    for f in keep[-6:]:
        where = "solution.py" if marker in f.filename else f.filename.rsplit("site-packages/", 1)[-1]
        lines.append(f'  {where}, line {f.lineno}, in {f.name}' + (f"\n    {f.line}" if f.line else ""))
    head = f"{type(exc).__name__}: {exc}".strip()
    text = ("\n".join(lines) + "\n" + head) if lines else head
    return trim(text)


def trim(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return text[:half] + f"\n... [{len(text) - limit} characters cut] ...\n" + text[-half:]


def classify(exc: BaseException, stage: str) -> tuple[Outcome, bool]:
    """(outcome, worker_poisoned). A CUDA fault poisons the context: the worker must be replaced."""
    import torch

    name = type(exc).__name__
    text = f"{name}: {exc}"
    lowered = text.lower()
    if isinstance(exc, (torch.OutOfMemoryError, MemoryError)) or any(
            m in lowered for m in ("out of memory", "can't allocate memory", "cannot allocate memory")):
        return Outcome.OOM, False
    if any(m in text for m in _POISON_MARKERS):
        return Outcome.CRASH, True
    from kernel_gym import cuda_raw

    if isinstance(exc, cuda_raw.NoCudaDevice):  # raw kernels compiled where there is no GPU
        return Outcome.UNSUPPORTED, False
    if stage == "compile" or _is_compile_failure(exc):
        return Outcome.COMPILE_ERROR, False
    return Outcome.RUNTIME_ERROR, False


def _is_compile_failure(exc: BaseException) -> bool:
    """Triton JIT errors (CompilationError on GPU, InterpreterError under the CPU interpreter) and build failures."""
    name = type(exc).__name__
    from kernel_gym import cuda_raw

    if isinstance(exc, cuda_raw.CompileError):  # NVRTC
        return True
    return (name in ("CompilationError", "CompileTimeAssertionFailure", "InterpreterError", "CalledProcessError")
            or type(exc).__module__.split(".")[0] == "triton")
