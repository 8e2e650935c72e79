/* kernel-gym
description = "Layer normalisation of each row (no affine): (x - mean) / sqrt(var + 1e-5), statistics in double."
level = 2
baseline = "torch.nn.functional.layer_norm(x, (cols,), eps=1e-5)"

[sizes]
rows = 16384
cols = 4096
[full_alt]
rows = 12007
cols = 5003
[cpu]
rows = 16
cols = 256
[alt]
rows = 23
cols = 301

[args]
x = { shape = ["rows", "cols"], init = "torch.randn(shape) * 3.0 + 1.0" }
out = { shape = ["rows", "cols"] }
*/
#include <math.h>

void layernorm_rows(int rows, int cols, const float *x, float *out) {
    for (int r = 0; r < rows; ++r) {
        const float *row = x + (long)r * cols;
        double mean = 0.0, var = 0.0;
        for (int c = 0; c < cols; ++c) {
            mean += row[c];
        }
        mean /= cols;
        for (int c = 0; c < cols; ++c) {
            double d = row[c] - mean;
            var += d * d;
        }
        var /= cols;
        double inv = 1.0 / sqrt(var + 1e-5);
        for (int c = 0; c < cols; ++c) {
            out[(long)r * cols + c] = (float)((row[c] - mean) * inv);
        }
    }
}
