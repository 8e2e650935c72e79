/* kernel-gym
description = "One leapfrog step of an n-body system: all-pairs softened gravity (G = 1, eps^2 = 0.01), then v += dt a, p += dt v."
level = 3
baseline = """
p, m = pos[:, :3], pos[:, 3]
d = p[None, :, :] - p[:, None, :]
r2 = (d * d).sum(-1) + 0.01
inv = torch.rsqrt(r2)
acc = (d * (m[None, :] * inv * inv * inv)[..., None]).sum(1)
v2 = vel + dt * acc
return p + dt * v2, v2
"""

[sizes]
n = 8192
[full_alt]
n = 6007
[cpu]
n = 128
[alt]
n = 101

[args]
dt = { param = 0.001 }
pos = { shape = ["n", "4"], init = "torch.cat([torch.randn(n, 3), torch.rand(n, 1) + 0.5], dim=1)" }
vel = { shape = ["n", "3"] }
new_pos = { shape = ["n", "3"] }
new_vel = { shape = ["n", "3"] }
*/
#include <math.h>

/* pos[i] = (x, y, z, mass); a body's own term contributes zero (d = 0). */
void nbody_step(int n, float dt, const float *pos, const float *vel, float *new_pos, float *new_vel) {
    for (int i = 0; i < n; ++i) {
        double ax = 0.0, ay = 0.0, az = 0.0;
        for (int j = 0; j < n; ++j) {
            float dx = pos[4 * j] - pos[4 * i];
            float dy = pos[4 * j + 1] - pos[4 * i + 1];
            float dz = pos[4 * j + 2] - pos[4 * i + 2];
            double r2 = (double)dx * dx + (double)dy * dy + (double)dz * dz + 0.01;
            double s = pos[4 * j + 3] / (r2 * sqrt(r2));
            ax += dx * s;
            ay += dy * s;
            az += dz * s;
        }
        float acc[3] = {(float)ax, (float)ay, (float)az};
        for (int c = 0; c < 3; ++c) {
            new_vel[3 * i + c] = vel[3 * i + c] + dt * acc[c];
            new_pos[3 * i + c] = pos[4 * i + c] + dt * new_vel[3 * i + c];
        }
    }
}
