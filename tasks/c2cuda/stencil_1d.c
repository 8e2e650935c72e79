/* kernel-gym
description = "Three-point stencil out[i] = 0.25 x[i-1] + 0.5 x[i] + 0.25 x[i+1] inside, end points copied."
level = 2
baseline = """
out = x.clone()
out[1:-1] = 0.25 * x[:-2] + 0.5 * x[1:-1] + 0.25 * x[2:]
return out
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
x = { shape = ["n"] }
out = { shape = ["n"] }
*/
void stencil_1d(int n, const float *x, float *out) {
    out[0] = x[0];
    out[n - 1] = x[n - 1];
    for (int i = 1; i < n - 1; ++i) {
        out[i] = 0.25f * x[i - 1] + 0.5f * x[i] + 0.25f * x[i + 1];
    }
}
