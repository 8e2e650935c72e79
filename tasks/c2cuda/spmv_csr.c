/* kernel-gym
description = "Sparse matrix-vector product y = A x, A an n x n CSR matrix with nnz non-zeros spread unevenly over its rows."
level = 3
baseline = """
rows = torch.searchsorted(row_ptr, torch.arange(nnz, dtype=torch.int32, device=x.device), right=True) - 1
return torch.zeros(n, dtype=x.dtype, device=x.device).index_add_(0, rows, vals * x[col_idx.long()])
"""

[sizes]
n = 2_097_152
nnz = 33_554_432
[full_alt]
n = 1_500_007
nnz = 25_000_017
[cpu]
n = 256
nnz = 4096
[alt]
n = 301
nnz = 5003

[args]
row_ptr = { shape = ["n + 1"], init = "torch.cat([torch.zeros(1, dtype=torch.int64), torch.randint(0, nnz + 1, (n - 1,)).sort().values, torch.full((1,), nnz)]).to(torch.int32)" }
col_idx = { shape = ["nnz"], init = "torch.randint(0, n, shape, dtype=torch.int32)" }
vals = { shape = ["nnz"] }
x = { shape = ["n"] }
y = { shape = ["n"] }
*/
void spmv_csr(int n, const int *row_ptr, const int *col_idx, const float *vals, const float *x, float *y) {
    for (int r = 0; r < n; ++r) {
        double acc = 0.0;
        for (int p = row_ptr[r]; p < row_ptr[r + 1]; ++p) {
            acc += (double)vals[p] * (double)x[col_idx[p]];
        }
        y[r] = (float)acc;
    }
}
