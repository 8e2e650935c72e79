/* kernel-gym
description = "One compare-exchange stage (k = 1024, j = 256) of a bitonic sorting network over n floats."
level = 2
baseline = """
idx = torch.arange(n, device=x.device)
partner = idx ^ j
other = x[partner]
keep_min = ((idx & k) == 0) == (idx < partner)
return torch.where(keep_min, torch.minimum(x, other), torch.maximum(x, other))
"""

[sizes]
n = 33_554_432
[full_alt]
n = 25_165_824
[cpu]
n = 4096
[alt]
n = 6144

[args]
k = { param = 1024 }
j = { param = 256 }
x = { shape = ["n"] }
out = { shape = ["n"] }
*/
/* Element i pairs with i ^ j; the pair is put in ascending order when (i & k) == 0, descending otherwise.
   n is a multiple of 2 * j. */
void bitonic_step(int n, int k, int j, const float *x, float *out) {
    for (int i = 0; i < n; ++i) {
        int l = i ^ j;
        float a = x[i], b = x[l];
        float lo = a < b ? a : b, hi = a < b ? b : a;
        int ascending = (i & k) == 0;
        int first = i < l;
        out[i] = (ascending == first) ? lo : hi;
    }
}
