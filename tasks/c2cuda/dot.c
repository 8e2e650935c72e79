/* kernel-gym
description = "Dot product of two float vectors (accumulated in double), written to a 1-element output."
level = 2
baseline = "torch.dot(x, y).reshape(1)"

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
y = { shape = ["n"] }
out = { shape = ["1"] }
*/
void dot(int n, const float *x, const float *y, float *out) {
    double acc = 0.0;
    for (int i = 0; i < n; ++i) {
        acc += (double)x[i] * (double)y[i];
    }
    out[0] = (float)acc;
}
