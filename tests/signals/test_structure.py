"""Structural signals fire on hand-written examples and stay silent on their counter-examples."""

import pytest

from kernel_gym.signals.structure import cuda_source_strings, structure_signals
from kernel_gym.signals.structure_cuda import cuda_structure

PLAIN = r"""
__global__ void relu(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaxf(x[i], 0.f);
}
"""

# ---- CUDA: one example and one counter-example per feature ------------------------------------------------------
FEATURES = {
    "struct_shared_memory": (
        "__global__ void k(float* y) { __shared__ float tile[256]; tile[threadIdx.x] = 1; y[threadIdx.x] = tile[0]; }",
        "__global__ void k(float* y) { float local[4]; y[threadIdx.x] = local[0]; }  // no __shared__ here"),
    "struct_vectorized": (
        "__global__ void k(const float* x, float* y) { int i = threadIdx.x;"
        " float4 v = reinterpret_cast<const float4*>(x)[i]; reinterpret_cast<float4*>(y)[i] = v; }",
        "__global__ void k(const float* x, float* y) { int i = threadIdx.x; y[i] = __ldg(&x[i]); }"),
    "struct_warp_primitives": (
        "__device__ float warp_sum(float v) { for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);"
        " return v; }",
        "__device__ float warp_sum(float v) { return v * 32.0f; }  /* __shfl_down_sync in a comment only */"),
    "struct_tensor_cores": (
        "#include <mma.h>\nusing namespace nvcuda;\n__global__ void k(half* a) { wmma::fragment<wmma::matrix_a, 16, 16,"
        " 16, half, wmma::row_major> f; wmma::load_matrix_sync(f, a, 16); }",
        "__global__ void k(float* a, float* b, float* c) { c[threadIdx.x] = a[threadIdx.x] * b[threadIdx.x]; }"),
    "struct_atomics": (
        "__global__ void k(const float* x, float* out) { atomicAdd(out, x[threadIdx.x]); }",
        "__global__ void k(const float* x, float* out) { out[threadIdx.x] = x[threadIdx.x]; }"),
}


@pytest.mark.parametrize("name", sorted(FEATURES))
def test_cuda_feature_fires_on_example_only(name):
    example, counter = FEATURES[name]
    assert cuda_structure(example)[name] == 1.0
    assert cuda_structure(counter)[name] == 0.0


REDUCE_IN_LOOP = r"""
__global__ void block_sum(const float* x, float* out, int n) {
    __shared__ float s[256];
    int tid = threadIdx.x;
    s[tid] = x[blockIdx.x * blockDim.x + tid];
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (tid < stride) { s[tid] += s[tid + stride]; }
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = s[0];
}
"""
SYNC_IN_BRANCH = r"""
__global__ void bad(const float* x, float* out) {
    __shared__ float s[256];
    int tid = threadIdx.x;
    if (tid < 128) {
        s[tid] = x[tid];
        __syncthreads();
    }
    out[tid] = s[tid];
}
"""


def test_sync_placement():
    loop = cuda_structure(REDUCE_IN_LOOP)
    assert loop["struct_sync_in_loop"] == 1.0 and loop["struct_sync_in_branch"] == 0.0
    branch = cuda_structure(SYNC_IN_BRANCH)
    assert branch["struct_sync_in_branch"] == 1.0 and branch["struct_sync_in_loop"] == 0.0
    assert cuda_structure(PLAIN)["struct_sync_in_loop"] == 0.0


# ---- CUDA coalescing -------------------------------------------------------------------------------------------
ROW_PER_THREAD = r"""
__global__ void row_sum(const float* x, float* out, int rows, int cols) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;   // one thread a row: neighbours are `cols` apart
    float s = 0.f;
    for (int j = 0; j < cols; ++j) s += x[row * cols + j];
    out[row] = s;
}
"""
TRANSPOSED_READ = r"""
__global__ void transpose_naive(const float* in, float* out, int n) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    out[row * n + col] = in[col * n + row];
}
"""
GRID_STRIDE = r"""
__global__ void scale(const float* __restrict__ x, float* __restrict__ y, float a, int n) {
    int idx = threadIdx.x + blockIdx.x * blockDim.x;
    for (int i = idx; i < n; i += blockDim.x * gridDim.x) {
        y[i] = a * x[i];
    }
}
"""
STRIDED_BY_TWO = r"""
__global__ void evens(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = x[2 * i];
}
"""


def test_coalesced_kernels():
    for src in (PLAIN, GRID_STRIDE):
        s = cuda_structure(src)
        assert s["struct_coalesced"] == 1.0 and s["struct_uncoalesced"] == 0.0, src


def test_uncoalesced_kernels():
    s = cuda_structure(ROW_PER_THREAD)
    assert s["struct_uncoalesced"] == 1.0 and s["struct_coalesced"] == 0.5  # x[row*cols+j] strided, out[row] fine
    t = cuda_structure(TRANSPOSED_READ)
    assert t["struct_uncoalesced"] == 1.0 and t["struct_coalesced"] == 0.5  # in[col*n+row] strided, out[...] fine
    e = cuda_structure(STRIDED_BY_TWO)
    assert e["struct_uncoalesced"] == 1.0 and e["struct_coalesced"] == 0.5


def test_shared_arrays_and_gathers_are_not_judged():
    s = cuda_structure(REDUCE_IN_LOOP)  # s[tid] is shared memory; only x[...] is a global access
    assert s["struct_uncoalesced"] == 0.0 and s["struct_coalesced"] == 1.0
    gather = "__global__ void g(const float* x, const int* idx, float* y) { int i = threadIdx.x; y[i] = x[idx[i]]; }"
    assert cuda_structure(gather)["struct_coalesced"] == 1.0  # y[i] and idx[i]; x[idx[i]] is unknown, not counted


def test_cuda_strings_are_found_inside_a_python_solution():
    code = f'import torch\nfrom torch.utils.cpp_extension import load_inline\nsrc = r"""{ROW_PER_THREAD}"""\n' \
           'cpp = "torch::Tensor f(torch::Tensor x);"\nmod = load_inline("m", cpp, cuda_sources=src)\n'
    assert "row_sum" in cuda_source_strings(code) and "import torch" not in cuda_source_strings(code)
    assert structure_signals(code, "cuda")["struct_uncoalesced"] == 1.0


# ---- Triton ------------------------------------------------------------------------------------------------------
TRITON_HEAD = "import triton\nimport triton.language as tl\n\n"
ELEMENTWISE = TRITON_HEAD + """
@triton.jit
def k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)
"""
STRIDED = TRITON_HEAD + """
@triton.jit
def k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs * 4)
    tl.store(y_ptr + offs, x)
"""
MATMUL = TRITON_HEAD + """
@triton.autotune(configs=[triton.Config({"BM": 64}, num_warps=4)], key=["M"])
@triton.jit
def mm(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, BM: tl.constexpr,
       BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = tl.load(a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak)
    b = tl.load(b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn)
    acc = tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)
"""
ROW_SOFTMAX = TRITON_HEAD + """
@triton.jit
def softmax(x_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * stride + cols, e / tl.sum(e, axis=0), mask=cols < n_cols)

def not_a_kernel(x):
    return x.sum()
"""


def test_triton_elementwise():
    s = structure_signals(ELEMENTWISE, "triton")
    assert s["struct_coalesced"] == 1.0 and s["struct_uncoalesced"] == 0.0 and s["struct_vectorized"] == 1.0
    assert s["struct_shared_memory"] == s["struct_tensor_cores"] == s["struct_warp_primitives"] == 0.0


def test_triton_strided_load():
    s = structure_signals(STRIDED, "triton")
    assert s["struct_uncoalesced"] == 1.0 and s["struct_coalesced"] == 0.5


def test_triton_matmul():
    s = structure_signals(MATMUL, "triton")
    assert s["struct_tensor_cores"] == 1.0 and s["struct_shared_memory"] == 1.0
    # a and b are indexed by stride arguments (unknown until run time); c's last axis is contiguous
    assert s["struct_coalesced"] == 1.0 and s["struct_uncoalesced"] == 0.0


def test_triton_reductions():
    s = structure_signals(ROW_SOFTMAX, "triton")
    assert s["struct_warp_primitives"] == 1.0 and s["struct_shared_memory"] == 1.0
    assert s["struct_tensor_cores"] == 0.0 and s["struct_coalesced"] == 1.0


def test_no_kernels_no_signals():
    assert structure_signals("import torch\nx = 1\n", "triton") == {}
    assert structure_signals("not python at all (", "triton") == {}
    assert structure_signals("import torch\n", "cuda") == {}
