/* kernel-gym
description = "All-pairs squared Euclidean distances between m and n points of dimension d (sums in double)."
level = 2
baseline = "((a * a).sum(1)[:, None] + (b * b).sum(1)[None, :]) - 2.0 * (a @ b.t())"

[sizes]
m = 6144
n = 6144
d = 64
[full_alt]
m = 5003
n = 6007
[cpu]
m = 32
n = 48
d = 16
[alt]
m = 37
n = 29
d = 19

[args]
a = { shape = ["m", "d"] }
b = { shape = ["n", "d"] }
out = { shape = ["m", "n"] }
*/
void sq_distances(int m, int n, int d, const float *a, const float *b, float *out) {
    for (int i = 0; i < m; ++i) {
        for (int j = 0; j < n; ++j) {
            double acc = 0.0;
            for (int k = 0; k < d; ++k) {
                double diff = (double)a[(long)i * d + k] - (double)b[(long)j * d + k];
                acc += diff * diff;
            }
            out[(long)i * n + j] = (float)acc;
        }
    }
}
