"""Resource signals of CuTe DSL and TileLang kernels (kernel_gym.signals.dsl_resources): the parsers on fixed text,
then the genuine solutions (relu, sum_reduce, the bf16 tensor-core GEMM) compiled for sm_90a on the CPU — CuTe DSL
by its own compiler, TileLang by its nvcc step — read from their cubins. Nothing runs; skipped without the package,
cuobjdump or (TileLang) nvcc."""

from __future__ import annotations

import importlib.util
import os
import pathlib

import pytest
from cute_solutions import compile_solution  # (tests/cute_solutions.py)

from kernel_gym.harness import dsl_launches
from kernel_gym.signals import collect
from kernel_gym.signals.dsl_resources import (
    _with_launch,
    dsl_kernels,
    launch_dynamic_smem,
    parse_block_sizes,
)
from kernel_gym.signals.resources import KernelResources, find_tool

TESTS = pathlib.Path(__file__).resolve().parents[1]

ELF_DUMP = """
.nv.info.kernel_cutlass_relu_kernel_0
\t<0x7>
\tAttribute:\tEIATTR_EXIT_INSTR_OFFSETS
\tFormat:\tEIFMT_SVAL
\tValue:\t0x60 0xf0
\t<0x8>
\tAttribute:\tEIATTR_REQNTID
\tFormat:\tEIFMT_SVAL
\tValue:\t0x100 0x1 0x1

.nv.info.matmul_main_kernel
\tAttribute:\tEIATTR_MAX_THREADS
\tFormat:\tEIFMT_SVAL
\tValue:\t0x20 0x4 0x1

.nv.info.no_bounds_kernel
\tAttribute:\tEIATTR_CBANK_PARAM_SIZE
\tFormat:\tEIFMT_HVAL
\tValue:\t0x14
"""

CONFIG = "!llvm.struct<(array<3 x i32>, array<3 x i32>, i64, ptr, ptr, i32)>"
HOST = f"""llvm.func @cutlass_gemm(%arg0: i32) -> i32 {{
    %8 = llvm.mlir.constant(8192 : i64) : i64
    %28 = llvm.alloca %9 x {CONFIG} : (i32) -> !llvm.ptr
    %34 = llvm.getelementptr %28[0, 2] : (!llvm.ptr) -> !llvm.ptr, {CONFIG}
    llvm.store %8, %34 : i64, !llvm.ptr
    %50 = llvm.getelementptr %48[0, 2] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<(i32, array<4 x i8>, array<64 x i8>)>
    llvm.store %6, %50 : i32, !llvm.ptr
    %107 = llvm.mlir.addressof @kernels_kernel_cutlass_gemm_0 : !llvm.ptr
    %109 = llvm.call @_cudaLaunchKernelEx(%85, %108, %88) : (!llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
  }}"""


def test_block_sizes_from_the_cubin_info():
    assert parse_block_sizes(ELF_DUMP) == {"kernel_cutlass_relu_kernel_0": 256, "matmul_main_kernel": 128}


def test_dynamic_smem_from_the_launch_configuration():
    assert launch_dynamic_smem([HOST], ["kernel_cutlass_gemm_0"]) == {"kernel_cutlass_gemm_0": 8192}
    computed = HOST.replace("llvm.store %8, %34", "llvm.store %arg9, %34")  # not a constant: unknown
    assert launch_dynamic_smem([computed], ["kernel_cutlass_gemm_0"]) == {"kernel_cutlass_gemm_0": None}
    assert launch_dynamic_smem([HOST.replace("_cudaLaunchKernelEx", "other")], ["kernel_cutlass_gemm_0"]) == {}


def test_unknown_dynamic_smem_means_no_occupancy():
    found = [KernelResources("k", 40, 0, 0, threads=256)]
    known, unknown = _with_launch(found, {"k": 4096}), _with_launch(found, {})
    assert known[0].dynamic_smem == 4096 and known[0].threads == 256
    assert unknown[0].threads is None
    assert "occupancy" in collect.resource_signals(known) and "occupancy" not in collect.resource_signals(unknown)


def _load(path: pathlib.Path):
    spec = importlib.util.spec_from_file_location(f"dsl_sig_{path.parent.parent.name}_{path.stem}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _needs_cuobjdump():
    if find_tool("cuobjdump") is None:
        pytest.skip("cuobjdump not found")


# (solution, threads per block, dynamic shared memory the kernel takes)
CUTE = {"level1_relu.py": (256, 0), "level1_sum_reduce.py": (256, 0),
        "level1_matmul_bf16.py": (128, 2 * 64 * 32 * 2)}  # the A and B tiles, bf16


def _cute_compiled(name: str):
    return compile_solution(TESTS / "cute_dsl" / "solutions" / name)


@pytest.mark.parametrize("name", sorted(CUTE))
def test_cute_dsl_solutions_signals(name, monkeypatch, tmp_path):
    pytest.importorskip("cutlass.cute")
    _needs_cuobjdump()
    monkeypatch.setenv("CUTE_DSL_ARCH", "sm_90a")
    monkeypatch.setenv("CUTE_DSL_CACHE_DIR", str(tmp_path))
    compiled = _cute_compiled(name)
    (kernel,) = dsl_kernels([compiled])
    threads, dynamic = CUTE[name]
    assert kernel.name in compiled.kernel_info  # the name the profiler's own-kernel share matches
    assert 0 < kernel.regs <= 255 and kernel.spill_bytes == 0 and kernel.smem == 0  # CuTe's smem is dynamic
    assert (kernel.threads, kernel.dynamic_smem) == (threads, dynamic)
    signals = collect.resource_signals([kernel])
    assert signals["regs_max"] == kernel.regs and signals["smem_max_bytes"] == dynamic
    assert 0 < signals["occupancy"] <= 1 and signals["occupancy_block_threads"] == threads


def test_the_runner_reads_what_the_hooks_saw_launched(monkeypatch, tmp_path):
    """collect's GPU path for cute_dsl: the compiled functions in dsl_launches.LAUNCHED (the hook puts a compiled
    function there when it or an executor it made is called)."""
    pytest.importorskip("cutlass.cute")
    _needs_cuobjdump()
    monkeypatch.setenv("CUTE_DSL_ARCH", "sm_90a")
    monkeypatch.setenv("CUTE_DSL_CACHE_DIR", str(tmp_path))
    compiled = _cute_compiled("level1_relu.py")
    executor = type("Executor", (), {"_kernel_gym_compiled": compiled})()
    counted = dsl_launches._counting(lambda self: "ran", dsl_launches.executor_names, lambda _self: True)
    monkeypatch.setattr(dsl_launches, "LAUNCHED", {})
    assert counted(executor) == "ran" and counted(executor) == "ran"
    assert list(dsl_launches.LAUNCHED.values()) == [compiled]  # the function, once
    found = collect._gpu_kernels("cute_dsl", "", {}, (), (9, 0))
    assert [k.threads for k in found] == [256] and found[0].regs > 0


def _nvcc_for_tilelang():
    pytest.importorskip("tilelang")
    _needs_cuobjdump()
    from tilelang.contrib import nvcc

    try:
        found = os.path.isfile(nvcc.get_nvcc_compiler())
    except Exception:  # noqa: BLE001 - no CUDA toolkit
        found = False
    if not found:
        pytest.skip("nvcc not found (TileLang builds its CUDA with it)")


# (solution, factory, its arguments, threads per block, dynamic shared memory)
TILELANG = [("level1_relu.py", "relu", (1001, "float32"), 256, 0),
            ("level1_sum_reduce.py", "column_sum", (3, 77, 45, "float32"), 256, 0),
            ("level1_matmul_bf16.py", "matmul", (50, 45, 37), 128, 3 * (128 * 32 + 32 * 128) * 2)]  # 3 stages, bf16


@pytest.mark.parametrize("name, factory, args, threads, dynamic", TILELANG)
def test_tilelang_solutions_signals(name, factory, args, threads, dynamic, monkeypatch, tmp_path):
    _nvcc_for_tilelang()
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path))
    import tilelang

    func = getattr(_load(TESTS / "tilelang" / "solutions" / name), factory).get_tir(*args)
    kernel = tilelang.compile(func, out_idx=[-1], target={"kind": "cuda", "arch": "sm_90a"})
    (found,) = dsl_kernels([kernel])
    assert found.name == f"{factory}_main_kernel"  # the name the profiler's own-kernel share matches
    assert 0 < found.regs <= 255 and found.spill_bytes == 0 and found.smem == 0  # TileLang's smem is dynamic
    assert (found.threads, found.dynamic_smem) == (threads, dynamic)
    signals = collect.resource_signals([found])
    assert signals["regs_max"] == found.regs and signals["smem_max_bytes"] == dynamic
    assert 0 < signals["occupancy"] <= 1 and signals["occupancy_block_threads"] == threads
    if "matmul" in name:  # loaded again from TileLang's disk cache: its device module is gone, the cubin is not
        from tilelang.cache import _dispatch_map

        monkeypatch.setattr(_dispatch_map["tvm_ffi"], "_memory_cache", {})  # (else the same kernel object)
        again = tilelang.compile(func, out_idx=[-1], target={"kind": "cuda", "arch": "sm_90a"})
        assert again is not kernel and again.artifact is None
        (cached,) = dsl_kernels([again])
        assert cached.regs == found.regs and cached.threads is None  # dynamic smem unknown: no occupancy
