/* kernel-gym
description = "Softmax of each row of a rows x cols float matrix (max-subtracted, sum in double)."
level = 2
baseline = "torch.softmax(x, dim=1)"

[sizes]
rows = 8192
cols = 8192
[full_alt]
rows = 6007
cols = 9001
[cpu]
rows = 16
cols = 256
[alt]
rows = 23
cols = 301

[args]
x = { shape = ["rows", "cols"], init = "torch.randn(shape) * 4.0" }
out = { shape = ["rows", "cols"] }
*/
#include <math.h>

void softmax_rows(int rows, int cols, const float *x, float *out) {
    for (int r = 0; r < rows; ++r) {
        const float *row = x + (long)r * cols;
        float *dst = out + (long)r * cols;
        float mx = row[0];
        for (int c = 1; c < cols; ++c) {
            mx = row[c] > mx ? row[c] : mx;
        }
        double sum = 0.0;
        for (int c = 0; c < cols; ++c) {
            dst[c] = expf(row[c] - mx);
            sum += dst[c];
        }
        float inv = (float)(1.0 / sum);
        for (int c = 0; c < cols; ++c) {
            dst[c] *= inv;
        }
    }
}
