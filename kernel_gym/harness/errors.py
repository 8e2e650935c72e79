"""Turn an exception raised by candidate code into an outcome and a message the agent can act on."""

from __future__ import annotations

import re
import traceback
from pathlib import Path

from kernel_gym.eval.result import Outcome

_POISON_MARKERS = ("illegal memory access", "device-side assert", "misaligned address", "unspecified launch failure",
                   "an illegal instruction", "CUDA error", "CUDA_ERROR", "cudaError", "AcceleratorError")
MAX_MESSAGE_CHARS = 3000


_PACKAGE_DIR = str(Path(__file__).resolve().parents[1])  # kernel_gym/: the harness, whose frames the policy never sees
_LIBRARY_PREFIX = re.compile(r"""[^\s'"()]*?/(?:site|dist)-packages/""")  # an install's absolute path, up to the package
_CANDIDATE_FILE = re.compile(r"""[^\s'"()]*candidate_[0-9a-f]+\.py""")


def _is_harness(filename: str) -> bool:
    return filename.startswith(_PACKAGE_DIR) or "/kernel_gym/" in filename


def _where(filename: str, marker: str) -> str:
    """How a frame's file is shown: the candidate's as solution.py, a library's from its package folder on."""
    if marker in filename:
        return "solution.py"
    short = _LIBRARY_PREFIX.sub("", filename)
    return short if short != filename else Path(filename).name


def _clean(text: str) -> str:
    """An exception message without absolute paths: the candidate's file is solution.py, libraries start at their
    package folder, and the harness's own folder is never named."""
    text = _CANDIDATE_FILE.sub("solution.py", text)
    text = text.replace(_PACKAGE_DIR + "/", "").replace(_PACKAGE_DIR, "kernel_gym")
    return _LIBRARY_PREFIX.sub("", text)


def candidate_traceback(exc: BaseException, marker: str = "candidate_") -> str:
    """The exception as the policy sees it: the frames of its own code (as solution.py) plus, when the error was
    raised inside a library (torch, triton), that innermost frame; never a frame of kernel_gym's harness, and no
    absolute path. A constructor call that does not fit ModelNew's signature gets a one-line hint."""
    frames = traceback.extract_tb(exc.__traceback__)
    keep = [f for f in frames if marker in f.filename]
    last = frames[-1] if frames else None
    if last is not None and marker not in last.filename and not _is_harness(last.filename):
        keep.append(last)  # where a library raised (e.g. triton's type check): the policy's call is just above
    cause = exc.__cause__
    if cause is not None and cause.__traceback__ is not None:  # e.g. Triton's InterpreterError from the kernel body
        keep += [f for f in traceback.extract_tb(cause.__traceback__) if marker in f.filename]
    lines = [f"  {_where(f.filename, marker)}, line {f.lineno}, in {f.name}" + (f"\n    {f.line}" if f.line else "")
             for f in keep[-6:]]
    head = _clean(f"{type(exc).__name__}: {exc}".strip())
    if constructor_failed(exc, marker) and not any(marker in f.filename for f in frames):
        head += ("\n(ModelNew(*get_init_inputs()) could not be called: ModelNew's constructor takes the same "
                 "arguments as Model's)")
    text = ("\n".join(lines) + "\n" + head) if lines else head
    return trim(text)


def constructor_failed(exc: BaseException, marker: str = "candidate_") -> bool:
    """Whether `exc` came out of constructing ModelNew (its __init__, or the call not fitting its signature)."""
    frames = traceback.extract_tb(exc.__traceback__)
    own = [f for f in frames if marker in f.filename]
    if own:
        return own[0].name == "__init__"
    if isinstance(exc, TypeError) and str(exc).startswith(("ModelNew.__init__()", "ModelNew()")):
        return True  # the call does not fit the signature: Python names the class
    return any(_is_harness(f.filename) and f.line and "ModelNew(" in f.line for f in frames[-1:])


STAGE_TEXT = {"compile": "importing the solution", "first_call": "the first call of forward()",
              "correctness": "the correctness stage", "timing": "the timing stage"}


def describe_failure(exc: BaseException, stage: str) -> str:
    """The feedback for candidate code that raised in `stage`: where (its constructor is named as such, not as
    the first call), then `candidate_traceback`."""
    where = STAGE_TEXT.get(stage, f"the {stage} stage")
    if stage == "first_call" and constructor_failed(exc):
        where = "constructing ModelNew(*get_init_inputs())"
    return f"{where} failed:\n{candidate_traceback(exc)}"


def trim(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return text[:half] + f"\n... [{len(text) - limit} characters cut] ...\n" + text[-half:]


# How running out of GPU memory reads: torch's allocator, a CUDA context that cannot be made, a library's workspace
# (cuBLAS, cuDNN). Host memory adds its own.
GPU_MEMORY_MARKERS = ("out of memory", "cublas_status_alloc_failed", "cudnn_status_alloc_failed",
                      "cudaerrormemoryallocation")
HOST_MEMORY_MARKERS = ("can't allocate memory", "cannot allocate memory")


def classify(exc: BaseException, stage: str) -> tuple[Outcome, bool]:
    """(outcome, worker_poisoned) for candidate code that raised `exc` in `stage` ("compile", "first_call",
    "correctness", "timing"), as docs/evaluation.md's Outcomes table says: OOM first, then a CUDA fault (`crash`, and
    the context is poisoned: the worker must be replaced), then any exception of the import and any Triton/NVRTC
    compilation error (`compile_error`), else `runtime_error`."""
    import torch

    name = type(exc).__name__
    text = f"{name}: {exc}"
    lowered = text.lower()
    if isinstance(exc, (torch.OutOfMemoryError, MemoryError)) or any(
            m in lowered for m in GPU_MEMORY_MARKERS + HOST_MEMORY_MARKERS):
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
    """Triton JIT errors (CompilationError on GPU, InterpreterError under the CPU interpreter), Helion's own errors
    (helion.exc: it compiles a kernel at its first call, so a bad config or an unsupported op raises there), the
    errors of CuTe DSL (`cutlass.base_dsl.common.DSL*Error`: a @cute.jit function traced and compiled at its first
    call; not `DSLCudaRuntimeError`, the CUDA runtime failing a launch) and of TileLang and its TVM (`tvm.error.*`,
    raised while a prim_func is parsed, lowered or built with nvcc), and build failures."""
    name = type(exc).__name__
    from kernel_gym import cuda_raw

    if isinstance(exc, cuda_raw.CompileError):  # NVRTC
        return True
    root = type(exc).__module__.split(".")[0]
    if root == "cutlass":
        return name != "DSLCudaRuntimeError"
    return (name in ("CompilationError", "CompileTimeAssertionFailure", "InterpreterError", "CalledProcessError")
            or root in ("triton", "helion", "tilelang", "tvm"))
