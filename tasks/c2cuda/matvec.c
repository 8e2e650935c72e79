/* kernel-gym
description = "Matrix-vector product y = A x of a rows x cols float matrix (rows accumulated in double)."
level = 2
baseline = "a @ x"

[sizes]
rows = 16384
cols = 8192
[full_alt]
rows = 12007
cols = 9001
[cpu]
rows = 64
cols = 256
[alt]
rows = 67
cols = 301

[args]
a = { shape = ["rows", "cols"] }
x = { shape = ["cols"] }
y = { shape = ["rows"] }
*/
void matvec(int rows, int cols, const float *a, const float *x, float *y) {
    for (int r = 0; r < rows; ++r) {
        double acc = 0.0;
        for (int c = 0; c < cols; ++c) {
            acc += (double)a[(long)r * cols + c] * (double)x[c];
        }
        y[r] = (float)acc;
    }
}
