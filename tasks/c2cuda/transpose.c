/* kernel-gym
description = "Matrix transpose: out[c][r] = x[r][c] for a rows x cols float matrix."
level = 2
baseline = "x.t().contiguous()"

[sizes]
rows = 8192
cols = 8192
[full_alt]
rows = 6007
cols = 9001
[cpu]
rows = 48
cols = 64
[alt]
rows = 37
cols = 71

[args]
x = { shape = ["rows", "cols"] }
out = { shape = ["cols", "rows"] }
*/
void transpose(int rows, int cols, const float *x, float *out) {
    for (int r = 0; r < rows; ++r) {
        for (int c = 0; c < cols; ++c) {
            out[(long)c * rows + r] = x[(long)r * cols + c];
        }
    }
}
