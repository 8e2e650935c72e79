"""Structural and hardware-aware signals (CudaPerf): registers, occupancy, memory behaviour, roofline.

One job a module, all of them feeding `EvalResult.signals` (a flat dict of named floats, `info["signals"]`):

- `hardware`     GPU specs: SM limits by compute capability, peak bandwidth and FLOP rates (H200, H100).
- `occupancy`    theoretical occupancy from registers, block size and shared memory (a pure function).
- `resources`    registers / shared memory / spills per kernel from `ptxas -v` and `cuobjdump`.
- `launch_config` block size and dynamic shared memory of CUDA kernels, read from their launch sites.
- `triton_resources` the same for Triton kernels: their JIT cache on the GPU, an sm_90 compile on the CPU.
- `dsl_resources` the same for CuTe DSL and TileLang kernels: the cubins their compilers made.
- `structure`    struct_* signals read from the code (`structure_cuda`, `structure_triton`).
- `roofline`     task bytes and FLOPs, achieved bandwidth and FLOP/s, roofline utilisation and violation flag.
- `collect`      what the worker calls; `summary` the profile line of the feedback.

Definitions, sources and limits of every signal: docs/signals.md. Importing this package is light (no torch,
no triton); `collect` and `triton_resources` import them.
"""

from kernel_gym.signals.occupancy import Occupancy, occupancy
from kernel_gym.signals.structure import structure_signals
from kernel_gym.signals.summary import profile_text

__all__ = ["Occupancy", "occupancy", "profile_text", "structure_signals"]
