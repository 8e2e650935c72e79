"""Hints for `load_inline` sources written against torch C++ APIs that current torch no longer has (the usual
reason a solution that built years ago, or in another harness, fails to build here: the failure is the solution's,
and the fix is one line). Registered in `kernel_gym.feedback.hints.HINTS`."""

from __future__ import annotations

import re

from kernel_gym.eval.result import EvalResult, Outcome
from kernel_gym.feedback.hints import HintContext, hint

# (what the code uses, what the compiler says about it, the fix)
REMOVED = (
    (re.compile(r"AT_DISPATCH_\w+\s*\(\s*[\w.\->()]*\.type\(\)"), re.compile(r"DeprecatedTypeProperties|type\(\)|"
                                                                              r"scalar_type|no suitable conversion"),
     "`AT_DISPATCH_...(x.type(), ...)` needs a ScalarType now: write `AT_DISPATCH_...(x.scalar_type(), ...)`."),
    (re.compile(r"THC/|THCudaCheck|THCState|THCudaTensor"), re.compile(r"THC"),
     "THC (`THC/THC.h`, `THCudaCheck`, `THCState`) was removed from torch: use `C10_CUDA_CHECK(...)` and "
     "`C10_CUDA_KERNEL_LAUNCH_CHECK()` from `<c10/cuda/CUDAException.h>`, and `at::cuda::getCurrentCUDAStream()`."),
)


@hint("removed_torch_api")
def _removed_torch_api(result: EvalResult, ctx: HintContext) -> str | None:
    if result.outcome is not Outcome.COMPILE_ERROR or not ctx.code:
        return None
    message = result.message or ""
    fixes = [fix for used, said, fix in REMOVED if used.search(ctx.code) and said.search(message)]
    if not fixes:
        return None
    return "This source uses torch C++ APIs that current torch no longer has. " + " ".join(fixes)
