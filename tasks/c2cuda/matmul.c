/* kernel-gym
description = "Matrix product C = A B of an m x k and a k x n float matrix (fp32, no TF32)."
level = 2
baseline = "a @ b"

[sizes]
m = 2048
k = 1024
n = 2048
[full_alt]
m = 1999
k = 1201
n = 2003
[cpu]
m = 32
k = 48
n = 64
[alt]
m = 33
k = 37
n = 61

[args]
a = { shape = ["m", "k"] }
b = { shape = ["k", "n"] }
c = { shape = ["m", "n"] }
*/
void matmul(int m, int n, int k, const float *a, const float *b, float *c) {
    for (int i = 0; i < m; ++i) {
        float *row = c + (long)i * n;
        for (int j = 0; j < n; ++j) {
            row[j] = 0.0f;
        }
        for (int p = 0; p < k; ++p) {
            float aip = a[(long)i * k + p];
            const float *brow = b + (long)p * n;
            for (int j = 0; j < n; ++j) {
                row[j] += aip * brow[j];
            }
        }
    }
}
