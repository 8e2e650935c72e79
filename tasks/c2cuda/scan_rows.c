/* kernel-gym
description = "Inclusive prefix sum along each row of a rows x cols float matrix (running sum in double)."
level = 2
baseline = "torch.cumsum(x, dim=1)"

[sizes]
rows = 16384
cols = 4096
[full_alt]
rows = 12007
cols = 5003
[cpu]
rows = 8
cols = 512
[alt]
rows = 13
cols = 301

[args]
x = { shape = ["rows", "cols"] }
out = { shape = ["rows", "cols"] }
*/
void scan_rows(int rows, int cols, const float *x, float *out) {
    for (int r = 0; r < rows; ++r) {
        double acc = 0.0;
        for (int c = 0; c < cols; ++c) {
            acc += x[(long)r * cols + c];
            out[(long)r * cols + c] = (float)acc;
        }
    }
}
