/* kernel-gym
description = "1-D valid cross-correlation of a long signal with a 31-tap filter: out[i] = sum_t x[i+t] w[t]."
level = 2
baseline = "torch.nn.functional.conv1d(x.view(1, 1, -1), w.view(1, 1, -1)).view(-1)"

[sizes]
n = 41_943_040
taps = 31
[full_alt]
n = 33_554_467
[cpu]
n = 4096
[alt]
n = 5003

[args]
x = { shape = ["n"] }
w = { shape = ["taps"] }
out = { shape = ["n - taps + 1"] }
*/
void conv1d(int n, int taps, const float *x, const float *w, float *out) {
    for (int i = 0; i + taps <= n; ++i) {
        double acc = 0.0;
        for (int t = 0; t < taps; ++t) {
            acc += (double)x[i + t] * (double)w[t];
        }
        out[i] = (float)acc;
    }
}
