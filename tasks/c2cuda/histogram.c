/* kernel-gym
description = "Histogram: count how many of n int32 values in [0, 256) fall in each of 256 bins."
level = 2
baseline = """
counts = torch.zeros(bins, dtype=torch.int64, device=x.device)
counts.scatter_add_(0, x.long(), torch.ones_like(x, dtype=torch.int64))
return counts.to(torch.int32)
"""

[sizes]
n = 67_108_864
[full_alt]
n = 50_000_017
[cpu]
n = 4096
[alt]
n = 5003

[args]
bins = { param = 256 }
x = { shape = ["n"], init = "(torch.rand(shape) ** 2 * 256).to(torch.int32)" }
counts = { shape = ["bins"] }
*/
void histogram(int n, int bins, const int *x, int *counts) {
    for (int b = 0; b < bins; ++b) {
        counts[b] = 0;
    }
    for (int i = 0; i < n; ++i) {
        counts[x[i]] += 1;
    }
}
