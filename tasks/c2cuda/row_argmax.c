/* kernel-gym
description = "Maximum of each row of a rows x cols float matrix and its column index (int32, first on ties)."
level = 2
baseline = """
mx, idx = x.max(dim=1)
return mx, idx.to(torch.int32)
"""

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
mx = { shape = ["rows"] }
idx = { shape = ["rows"] }
*/
void row_argmax(int rows, int cols, const float *x, float *mx, int *idx) {
    for (int r = 0; r < rows; ++r) {
        const float *row = x + (long)r * cols;
        int best = 0;
        for (int c = 1; c < cols; ++c) {
            if (row[c] > row[best]) {
                best = c;
            }
        }
        mx[r] = row[best];
        idx[r] = best;
    }
}
