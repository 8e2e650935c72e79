"""A bf16 GEMM C = A @ B on tensor cores in CuTe DSL (our own, for level1/matmul at precision="bf16").

Each CTA computes a 64 x 64 tile of C with 4 warps (2 x 2), each warp 32 x 32 of SM80 `mma.sync` m16n8k16
bf16 -> fp32 instructions. Tiles of A (64 x 32) and of B (32 x 64, stored transposed so both operands are K-major,
as the MMA wants) are staged in shared memory with bounds checks (zero outside the matrices), so any M, N, K work;
the fp32 accumulators are rounded to bf16 once, at the store.
"""
import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import torch
import torch.nn as nn
from cutlass.cute.runtime import from_dlpack

BM, BN, BK = 64, 64, 32
THREADS = 128


@cute.kernel
def gemm_kernel(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, m: cutlass.Int32, n: cutlass.Int32,
                k: cutlass.Int32):
    tid, _, _ = cute.arch.thread_idx()
    bx, by, _ = cute.arch.block_idx()
    m0 = by * BM
    n0 = bx * BN
    smem = cutlass.memory.SmemAllocator()
    s_a = smem.allocate_tensor(cutlass.BFloat16, cute.make_layout((BM, BK), stride=(BK, 1)), 16)
    s_b = smem.allocate_tensor(cutlass.BFloat16, cute.make_layout((BN, BK), stride=(BK, 1)), 16)
    mma = cute.make_tiled_mma(cute.nvgpu.warp.MmaF16BF16Op(cutlass.BFloat16, cutlass.Float32, (16, 8, 16)),
                              (2, 2, 1))
    thr = mma.get_slice(tid)
    t_sa = thr.partition_A(s_a)
    t_sb = thr.partition_B(s_b)
    r_a = mma.make_fragment_A(t_sa)
    r_b = mma.make_fragment_B(t_sb)
    coords = thr.partition_C(cute.make_identity_tensor((BM, BN)))
    acc = mma.make_fragment_C(thr.partition_shape_C((BM, BN)))
    acc.fill(0.0)
    for k0 in range(0, k, BK):
        for i in cutlass.range_constexpr(BM * BK // THREADS):  # A tile: consecutive threads read along K
            idx = tid + i * THREADS
            row = idx // BK
            col = idx % BK
            v = cutlass.BFloat16(0.0)
            if m0 + row < m:
                if k0 + col < k:
                    v = a[m0 + row, k0 + col]
            s_a[row, col] = v
        for i in cutlass.range_constexpr(BN * BK // THREADS):  # B tile: consecutive threads read along N
            idx = tid + i * THREADS
            col = idx % BN
            row = idx // BN
            v = cutlass.BFloat16(0.0)
            if k0 + row < k:
                if n0 + col < n:
                    v = b[k0 + row, n0 + col]
            s_b[col, row] = v
        cute.arch.sync_threads()
        cute.basic_copy(t_sa, r_a)
        cute.basic_copy(t_sb, r_b)
        cute.gemm(mma, acc, r_a, r_b, acc)
        cute.arch.sync_threads()
    for i in cutlass.range_constexpr(cute.size(acc)):
        row, col = coords[i]
        if m0 + row < m:
            if n0 + col < n:
                c[m0 + row, n0 + col] = acc[i].to(cutlass.BFloat16)


@cute.jit
def gemm(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, m: cutlass.Int32, n: cutlass.Int32, k: cutlass.Int32,
         stream: cuda.CUstream):
    gemm_kernel(a, b, c, m, n, k).launch(grid=((n + BN - 1) // BN, (m + BM - 1) // BM, 1), block=(THREADS, 1, 1),
                                         stream=stream)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._compiled = {}

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        A, B = A.contiguous(), B.contiguous()
        (m, k), n = A.shape, B.shape[1]
        C = torch.empty(m, n, dtype=A.dtype, device=A.device)
        stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
        args = (from_dlpack(A), from_dlpack(B), from_dlpack(C), m, n, k, stream)
        key = (m, n, k)
        if key not in self._compiled:
            self._compiled[key] = cute.compile(gemm, *args)
        self._compiled[key](*args)
        return C
