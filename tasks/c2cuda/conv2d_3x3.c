/* kernel-gym
description = "2-D valid cross-correlation of a single-channel h x w image with a 3x3 filter."
level = 2
baseline = "torch.nn.functional.conv2d(img[None, None], k[None, None])[0, 0]"

[sizes]
h = 8192
w = 8192
[full_alt]
h = 6007
w = 9001
[cpu]
h = 48
w = 64
[alt]
h = 37
w = 71

[args]
img = { shape = ["h", "w"] }
k = { shape = ["3", "3"] }
out = { shape = ["h - 2", "w - 2"] }
*/
void conv2d_3x3(int h, int w, const float *img, const float *k, float *out) {
    for (int i = 0; i + 2 < h; ++i) {
        for (int j = 0; j + 2 < w; ++j) {
            double acc = 0.0;
            for (int di = 0; di < 3; ++di) {
                for (int dj = 0; dj < 3; ++dj) {
                    acc += (double)img[(long)(i + di) * w + (j + dj)] * (double)k[di * 3 + dj];
                }
            }
            out[(long)i * (w - 2) + j] = (float)acc;
        }
    }
}
