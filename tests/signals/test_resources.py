"""Registers, shared memory and spills from ptxas and cuobjdump: parsers on fixed logs, then real sm_90 compiles
of small CUDA kernels (nvcc, ~1 s; skipped without it) whose resource use is predictable."""

import subprocess

import pytest

from kernel_gym.signals.collect import _with_launch_config, cpu_cuda_kernels, resource_signals
from kernel_gym.signals.occupancy import occupancy
from kernel_gym.signals.resources import (
    KernelResources,
    binary_resources,
    find_tool,
    mangled_matches,
    parse_cuobjdump,
    parse_ptxas_log,
    vector_share,
)

PTXAS_LOG = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z5smem2PKfPfi' for 'sm_90'
ptxas info    : Function properties for _Z5smem2PKfPfi
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 18 registers, used 1 barriers, 4080 bytes smem
ptxas info    : Compile time = 2.1 ms
ptxas info    : Compiling entry function '_Z12spill_kernelPKfPfi' for 'sm_90'
ptxas info    : Function properties for _Z12spill_kernelPKfPfi
    392 bytes stack frame, 460 bytes spill stores, 480 bytes spill loads
ptxas info    : Used 32 registers, used 0 barriers, 392 bytes cumulative stack size
"""

CUOBJDUMP = """
Resource usage:
 Common:
  GLOBAL:0
 Function _Z3dynPKfPfi:
  REG:12 STACK:0 SHARED:1024 LOCAL:0 CONSTANT[0]:548 TEXTURE:0 SURFACE:0 SAMPLER:0
 Function _Z5smem2PKfPfi:
  REG:18 STACK:0 SHARED:5104 LOCAL:0 CONSTANT[0]:548 TEXTURE:0 SURFACE:0 SAMPLER:0
 Function _Z11copy_kernelPKfPfi:
  REG:10 STACK:0 SHARED:0 LOCAL:0 CONSTANT[0]:548 TEXTURE:0 SURFACE:0 SAMPLER:0
"""


def test_parse_ptxas_log():
    found = {k.name: k for k in parse_ptxas_log(PTXAS_LOG)}
    assert found["_Z5smem2PKfPfi"] == KernelResources("_Z5smem2PKfPfi", 18, 4080, 0)
    assert found["_Z12spill_kernelPKfPfi"] == KernelResources("_Z12spill_kernelPKfPfi", 32, 0, 460)


def test_parse_cuobjdump_subtracts_the_reserved_kilobyte():
    found = {k.name: k for k in parse_cuobjdump(CUOBJDUMP)}
    assert found["_Z5smem2PKfPfi"].smem == 4080 and found["_Z5smem2PKfPfi"].regs == 18
    assert found["_Z3dynPKfPfi"].smem == 0 and found["_Z11copy_kernelPKfPfi"].smem == 0


def test_mangled_names():
    assert mangled_matches("_Z11copy_kernelPKfPfi", "copy_kernel")
    assert mangled_matches("_Z11tmpl_kernelIfEvPKT_PS0_i", "tmpl_kernel")
    assert mangled_matches("_ZN2ns6kernelEPf", "kernel")
    assert mangled_matches("relu", "relu")  # extern "C"
    assert not mangled_matches("_Z11copy_kernelPKfPfi", "copy")


def test_vector_share_of_ptx():
    ptx = "ld.global.v4.b32 {%r1,%r2,%r3,%r4}, [%rd1];\nld.global.b32 %r5, [%rd2];\nst.global.v4.b32 [%rd3], {..};"
    assert vector_share(ptx) == pytest.approx(2 / 3)
    assert vector_share("add.f32 %f1, %f2, %f3;") is None


KERNELS = r"""
__global__ void copy_kernel(const float* __restrict__ x, float* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i];
}
__global__ void smem_kernel(const float* x, float* y, int n) {
    __shared__ float tile[1024];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x] = i < n ? x[i] : 0.f;
    __syncthreads();
    if (i < n) y[i] = tile[1023 - threadIdx.x];
}
__global__ void __launch_bounds__(1024, 2) spill_kernel(const float* x, float* y, int n) {
    float acc[64];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    #pragma unroll
    for (int k = 0; k < 64; ++k) acc[k] = x[(i + k * 977) % n];
    float s = 0.f;
    #pragma unroll
    for (int k = 0; k < 64; ++k) s += acc[k] * acc[(k * 7) % 64];
    y[i % n] = s;
}
void launch(const float* x, float* y, int n) {
    const int threads = 256;
    copy_kernel<<<(n + threads - 1) / threads, threads>>>(x, y, n);
    smem_kernel<<<(n + 1023) / 1024, 1024>>>(x, y, n);
    spill_kernel<<<n / 1024, 1024>>>(x, y, n);
}
"""


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """KERNELS compiled for sm_90 with nvcc: (cubin path, ptxas -v log)."""
    nvcc = find_tool("nvcc")
    if nvcc is None:
        pytest.skip("nvcc not found")
    tmp = tmp_path_factory.mktemp("cu")
    (tmp / "k.cu").write_text(KERNELS)
    run = subprocess.run([nvcc, "-cubin", "-arch=sm_90", "-Xptxas", "-v", "-o", str(tmp / "check.cubin"),
                          str(tmp / "k.cu")], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return tmp / "check.cubin", run.stderr + run.stdout


def test_compiled_kernels_use_predictable_resources(compiled):
    found = {k.name: k for k in parse_ptxas_log(compiled[1])}
    copy, smem, spill = (next(v for n, v in found.items() if mangled_matches(n, name))
                         for name in ("copy_kernel", "smem_kernel", "spill_kernel"))
    assert 6 <= copy.regs <= 16 and copy.smem == 0 and copy.spill_bytes == 0
    assert smem.smem == 4096 and smem.regs <= 24
    assert spill.regs <= 32 and spill.spill_bytes > 0  # __launch_bounds__(1024, 2) caps it at 32 registers
    # and the occupancy of each at its launch size, from the pure function
    assert occupancy(copy.regs, 256, 0).occupancy == 1.0  # <= 32 registers: full
    assert occupancy(spill.regs, 1024, 0).occupancy == 1.0
    assert occupancy(smem.regs, 1024, 4096).occupancy == 1.0


def test_cuobjdump_agrees_with_ptxas(compiled):
    if find_tool("cuobjdump") is None:
        pytest.skip("cuobjdump not found")
    ptxas = {k.name: k for k in parse_ptxas_log(compiled[1])}
    for k in binary_resources(compiled[0]):
        assert k.regs == ptxas[k.name].regs
        assert k.smem == ptxas[k.name].smem
        assert (k.spill_bytes > 0) == (ptxas[k.name].spill_bytes > 0)


def test_cpu_cuda_path_reads_the_check_cubin_then_its_cache(compiled, tmp_path, monkeypatch):
    if find_tool("cuobjdump") is None:
        pytest.skip("cuobjdump not found")
    monkeypatch.setenv("KERNEL_GYM_CACHE", str(tmp_path / "cache"))
    workdir = tmp_path / "job"
    workdir.mkdir()
    (workdir / "check.cubin").write_bytes(compiled[0].read_bytes())
    first = _with_launch_config(cpu_cuda_kernels(KERNELS, workdir), KERNELS)
    (workdir / "check.cubin").unlink()  # a cache hit of the nvcc check leaves no cubin
    again = _with_launch_config(cpu_cuda_kernels(KERNELS, workdir), KERNELS)
    assert first == again and {k.name for k in first} == {"copy_kernel", "smem_kernel", "spill_kernel"}
    threads = {k.name: k.threads for k in first}
    assert threads == {"copy_kernel": 256, "smem_kernel": 1024, "spill_kernel": 1024}
    signals = resource_signals(first)
    assert signals["occupancy"] == 1.0 and signals["smem_max_bytes"] == 4096
    assert signals["spill_bytes_max"] > 0 and signals["kernels_profiled"] == 3 and signals["target_sm"] == 90


def test_resource_signals_pick_the_least_occupied_kernel():
    kernels = [KernelResources("a", 32, threads=256), KernelResources("b", 128, 1024, threads=256),
               KernelResources("c", 200)]  # c: block size unknown, no occupancy
    s = resource_signals(kernels)
    assert (s["regs_max"], s["smem_max_bytes"], s["occupancy"], s["occupancy_block_threads"]) == (200, 1024, 0.25, 256)
    assert resource_signals([]) == {}


def test_gpu_cuda_path_reads_the_extension_library(tmp_path):
    """On a GPU the figures come from the built extension `.so`, found through the candidate's globals."""
    import types

    from kernel_gym.signals.collect import _gpu_kernels, extension_files

    nvcc = find_tool("nvcc")
    if nvcc is None or find_tool("cuobjdump") is None:
        pytest.skip("needs nvcc and cuobjdump")
    (tmp_path / "k.cu").write_text(KERNELS)
    so = tmp_path / "relu_ext_0123.so"
    run = subprocess.run([nvcc, "-shared", "-Xcompiler", "-fPIC", "-arch=sm_90", "-o", str(so), str(tmp_path / "k.cu")],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    ext = types.ModuleType("relu_ext_0123")
    ext.__file__ = str(so)
    module = types.ModuleType("candidate")
    module.relu_ext, module.torch = ext, types  # a package module (not a .so) is ignored
    assert extension_files(module, object()) == [so]
    code = f'import torch\nsrc = r"""{KERNELS}"""\n'
    kernels = {k.name: k for k in _gpu_kernels("cuda", code, {}, (module,), (9, 0))}
    assert set(kernels) == {"copy_kernel", "smem_kernel", "spill_kernel"}
    assert kernels["copy_kernel"].threads == 256 and kernels["smem_kernel"].smem == 4096
