"""Names of the dynamic anti-hack checks the judge decides (kernel_gym/judge/checks.py), each with its rule.

Static (source) rules live in kernel_gym.checks; both kinds report their names in `info["hacks"]`.
"""

from __future__ import annotations

DYNAMIC_CHECKS: dict[str, str] = {
    "input_mutation": "the forward must not write into its inputs (inputs are compared with clones after the call)",
    "lazy_output": "outputs must be plain torch.Tensor objects, not subclasses that defer or fake work",
    "background_thread": "no thread started by the solution may still run after forward() returns",
    "harness_tampering": "timers, torch functions, tracing hooks, dispatch modes and precision flags must be untouched",
    "no_custom_kernel": "every call of forward must launch at least one of the solution's own kernels",
    "decoy_kernel": "with the solution's Triton launches skipped the output must change; otherwise the kernels do no work",
    "output_caching": "every timed call gets fresh inputs and must return their correct outputs (no caching, no skipping)",
    "input_specialization": "the solution must be correct for every input, not only some seeds",
    "shape_specialization": "the solution must be correct at a second input shape, not only the one shown",
    "timer_tampering": "(retired: the clock is the judge's, out of the candidate's reach; kept so old logs still read)",
    "degenerate_output": "outputs must carry the reference's values, not pass a loose atol by being near zero",
    "uninitialized_output": "every output element must be written by the solution (outputs are NaN-filled before each call)",
    "input_distribution": "the solution must stay correct on rescaled inputs, not rely on the test inputs' small range",
    "torch_compute": "PyTorch compute seen at the dispatcher during forward() must be allowed by the preset",
    "library_time": "on the GPU, the solution's own kernels must carry the work (profiler share of kernel time)",
    "precision_downcast": "outputs must keep the task's dtype contract (no fp16/bf16/tf32 on fp32 tasks)",
}


class Hack(Exception):
    """Raised by the judge when a dynamic check fires."""

    def __init__(self, name: str, message: str):
        assert name in DYNAMIC_CHECKS, name
        super().__init__(message)
        self.name, self.message = name, message
