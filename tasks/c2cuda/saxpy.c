/* kernel-gym
description = "SAXPY: y <- a*x + y on n floats."
level = 1
baseline = "a * x + y"

[sizes]
n = 33_554_432
[full_alt]
n = 25_000_003
[cpu]
n = 4096
[alt]
n = 5003

[args]
a = { param = 2.5 }
x = { shape = ["n"] }
y = { shape = ["n"], role = "inout" }
*/
void saxpy(int n, float a, const float *x, float *y) {
    for (int i = 0; i < n; ++i) {
        y[i] = a * x[i] + y[i];
    }
}
