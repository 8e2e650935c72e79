/* kernel-gym
description = "Black-Scholes prices of European call and put options (polynomial normal CDF), r = 0.02, sigma = 0.30."
level = 1
baseline = """
def cnd(d):
    kk = 1.0 / (1.0 + 0.2316419 * d.abs())
    poly = kk * (0.31938153 + kk * (-0.356563782 + kk * (1.781477937 + kk * (-1.821255978 + kk * 1.330274429))))
    c = 0.3989422804014327 * torch.exp(-0.5 * d * d) * poly
    return torch.where(d > 0, 1.0 - c, c)
sqrt_t = torch.sqrt(t)
d1 = (torch.log(s / x) + (r + 0.5 * v * v) * t) / (v * sqrt_t)
d2 = d1 - v * sqrt_t
disc = torch.exp(-r * t)
call = s * cnd(d1) - x * disc * cnd(d2)
put = x * disc * (1.0 - cnd(d2)) - s * (1.0 - cnd(d1))
return call, put
"""

[sizes]
n = 16_777_216
[full_alt]
n = 12_000_017
[cpu]
n = 4096
[alt]
n = 5003

[args]
r = { param = 0.02 }
v = { param = 0.3 }
s = { shape = ["n"], init = "torch.rand(shape) * 25.0 + 5.0" }
x = { shape = ["n"], init = "torch.rand(shape) * 99.0 + 1.0" }
t = { shape = ["n"], init = "torch.rand(shape) * 9.75 + 0.25" }
call = { shape = ["n"] }
put = { shape = ["n"] }
*/
#include <math.h>

static float cnd(float d) {
    const float a1 = 0.31938153f, a2 = -0.356563782f, a3 = 1.781477937f, a4 = -1.821255978f, a5 = 1.330274429f;
    float k = 1.0f / (1.0f + 0.2316419f * fabsf(d));
    float c = 0.3989422804014327f * expf(-0.5f * d * d) * (k * (a1 + k * (a2 + k * (a3 + k * (a4 + k * a5)))));
    return d > 0 ? 1.0f - c : c;
}

void black_scholes(int n, float r, float v, const float *s, const float *x, const float *t, float *call, float *put) {
    for (int i = 0; i < n; ++i) {
        float sqrt_t = sqrtf(t[i]);
        float d1 = (logf(s[i] / x[i]) + (r + 0.5f * v * v) * t[i]) / (v * sqrt_t);
        float d2 = d1 - v * sqrt_t;
        float disc = expf(-r * t[i]);
        float c1 = cnd(d1), c2 = cnd(d2);
        call[i] = s[i] * c1 - x[i] * disc * c2;
        put[i] = x[i] * disc * (1.0f - c2) - s[i] * (1.0f - c1);
    }
}
