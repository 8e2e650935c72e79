"""CUDA (load_inline) solution for level1/matmul at precision="bf16": WMMA 16x16x16 bf16 tensor-core tiles with fp32
accumulators. A block of 4 warps computes a 64 x 64 tile of C (each warp 32 x 32: 2 x 2 fragments), staging 64 x 16
slices of A and 16 x 64 slices of B in shared memory, zero-padded at the edges so any M, N, K works; the result goes
through shared memory once and is rounded to bf16 at the store (a bench solution: benchmarks/bench_backends.py)."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_bf16.h>
#include <mma.h>
using namespace nvcuda;

constexpr int BM = 64, BN = 64, BK = 16;
constexpr int LDA = BK + 8, LDB = BN + 8, LDC = BN + 4;  // padded rows (WMMA wants multiples of 8 / 4 elements)

__global__ void gemm_bf16_wmma(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B,
                               __nv_bfloat16* __restrict__ C, int M, int N, int K) {
    __shared__ __align__(32) __nv_bfloat16 As[BM * LDA];
    __shared__ __align__(32) __nv_bfloat16 Bs[BK * LDB];
    __shared__ __align__(32) float Cs[BM * LDC];
    const int warp = threadIdx.x / 32;
    const int wm = (warp / 2) * 32, wn = (warp % 2) * 32;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const __nv_bfloat16 zero = __float2bfloat16(0.0f);
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int e = threadIdx.x; e < BM * BK; e += blockDim.x) {
            int r = e / BK, c = e % BK, gr = row0 + r, gc = k0 + c;
            As[r * LDA + c] = (gr < M && gc < K) ? A[(long)gr * K + gc] : zero;
        }
        for (int e = threadIdx.x; e < BK * BN; e += blockDim.x) {
            int r = e / BN, c = e % BN, gr = k0 + r, gc = col0 + c;
            Bs[r * LDB + c] = (gr < K && gc < N) ? B[(long)gr * N + gc] : zero;
        }
        __syncthreads();
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a[2];
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> b[2];
        for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(a[i], As + (wm + 16 * i) * LDA, LDA);
        for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(b[j], Bs + wn + 16 * j, LDB);
        for (int i = 0; i < 2; ++i)
            for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
        __syncthreads();
    }
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j)
            wmma::store_matrix_sync(Cs + (wm + 16 * i) * LDC + wn + 16 * j, acc[i][j], LDC, wmma::mem_row_major);
    __syncthreads();
    for (int e = threadIdx.x; e < BM * BN; e += blockDim.x) {
        int r = e / BN, c = e % BN, gr = row0 + r, gc = col0 + c;
        if (gr < M && gc < N) C[(long)gr * N + gc] = __float2bfloat16(Cs[r * LDC + c]);
    }
}

torch::Tensor gemm_bf16(torch::Tensor A, torch::Tensor B) {
    TORCH_CHECK(A.scalar_type() == torch::kBFloat16 && B.scalar_type() == torch::kBFloat16, "bf16 inputs expected");
    auto a = A.contiguous();
    auto b = B.contiguous();
    int M = a.size(0), K = a.size(1), N = b.size(1);
    auto c = torch::empty({M, N}, a.options());
    if (M == 0 || N == 0) return c;
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
    gemm_bf16_wmma<<<grid, 128, 0, c10::cuda::getCurrentCUDAStream()>>>(
        reinterpret_cast<const __nv_bfloat16*>(a.data_ptr<at::BFloat16>()),
        reinterpret_cast<const __nv_bfloat16*>(b.data_ptr<at::BFloat16>()),
        reinterpret_cast<__nv_bfloat16*>(c.data_ptr<at::BFloat16>()), M, N, K);
    return c;
}
"""

gemm_ext = load_inline(
    name="gemm_bf16_wmma_ext",
    cpp_sources="torch::Tensor gemm_bf16(torch::Tensor A, torch::Tensor B);",
    cuda_sources=cuda_source,
    functions=["gemm_bf16"],
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return gemm_ext.gemm_bf16(A, B)
