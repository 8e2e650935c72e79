"""The launch hooks of CuTe DSL and TileLang (kernel_gym.harness.dsl_launches): every entry point they name exists in
the installed packages, and a hooked call is counted, named and skipped under ablation. (Their launches on a GPU:
tests/gpu/test_cute_dsl_gpu.py, tests/gpu/test_tilelang_gpu.py.)"""

from __future__ import annotations

import sys

import pytest

from kernel_gym.harness import dsl_launches
from kernel_gym.harness.launches import STATE


def test_nothing_is_hooked_before_a_job_imports_a_dsl():
    if "cutlass" in sys.modules or "tilelang" in sys.modules:
        pytest.skip("a DSL is already imported in this process")
    assert dsl_launches.install() == []


def test_every_cute_dsl_entry_point_exists():
    pytest.importorskip("cutlass.cute")
    pytest.importorskip("tvm_ffi")
    dsl_launches.install()
    from cutlass.base_dsl import jit_executor
    from cutlass.cutlass_dsl import cuda_jit_executor, tvm_ffi_provider

    for cls, method in ((jit_executor.JitExecutor, "run_compiled_program"), (jit_executor.JitCompiledFunction, "to"),
                        (cuda_jit_executor.CudaDialectJitCompiledFunction, "to"),
                        (tvm_ffi_provider.TVMFFIJitCompiledFunction, "__call__"),
                        (tvm_ffi_provider.TVMFFIJitCompiledFunctionWithKwargs, "__call__")):
        assert getattr(cls.__dict__[method], "__kernel_gym_hook__", False), f"{cls.__name__}.{method}"
    assert dsl_launches.install() == []  # once


def test_a_tilelang_kernel_call_is_counted_named_and_ablated():
    pytest.importorskip("tilelang")
    dsl_launches.install()
    from tilelang.jit.adapter.tvm_ffi import TVMFFIKernelAdapter
    from tilelang.jit.kernel import JITKernel

    assert getattr(TVMFFIKernelAdapter.__dict__["_get_executable"], "__kernel_gym_hook__", False)
    kernel = JITKernel.__new__(JITKernel)  # (a stand-in: no compile, no GPU)
    kernel.torch_function = lambda x: x + 1
    kernel.get_kernel_source = lambda: 'extern "C" __global__ void __launch_bounds__(256, 1) relu_main_kernel(float* X)'
    STATE.reset()
    try:
        assert kernel(1) == 2 and STATE.count == 1 and STATE.names == {"relu_main_kernel"}
        STATE.ablate = True
        assert kernel(1) is None and STATE.count == 2  # (no adapter of its own: the whole call is skipped)
    finally:
        STATE.reset()
