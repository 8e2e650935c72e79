/* kernel-gym
description = "Scatter by a permutation: out[perm[i]] = x[i] (perm a random permutation of 0..n-1)."
level = 3
baseline = "torch.empty_like(x).index_copy_(0, perm.long(), x)"

[sizes]
n = 33_554_432
[full_alt]
n = 25_000_003
[cpu]
n = 4096
[alt]
n = 5003

[args]
x = { shape = ["n"] }
perm = { shape = ["n"], init = "torch.randperm(n, dtype=torch.int32)" }
out = { shape = ["n"] }
*/
void scatter_permute(int n, const float *x, const int *perm, float *out) {
    for (int i = 0; i < n; ++i) {
        out[perm[i]] = x[i];
    }
}
