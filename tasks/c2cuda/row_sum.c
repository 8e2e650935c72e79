/* kernel-gym
description = "Sum of each row of a rows x cols float matrix (accumulated in double)."
level = 2
baseline = "x.sum(dim=1)"

[sizes]
rows = 16384
cols = 8192
[full_alt]
rows = 12007
cols = 9001
[cpu]
rows = 16
cols = 256
[alt]
rows = 23
cols = 301

[args]
x = { shape = ["rows", "cols"] }
out = { shape = ["rows"] }
*/
void row_sum(int rows, int cols, const float *x, float *out) {
    for (int r = 0; r < rows; ++r) {
        const float *row = x + (long)r * cols;
        double acc = 0.0;
        for (int c = 0; c < cols; ++c) {
            acc += row[c];
        }
        out[r] = (float)acc;
    }
}
