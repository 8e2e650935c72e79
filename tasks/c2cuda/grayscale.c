/* kernel-gym
description = "RGB (uint8, h x w x 3) to grayscale float: 0.299 r + 0.587 g + 0.114 b."
level = 1
baseline = "(0.299 * img[..., 0].float() + 0.587 * img[..., 1].float()) + 0.114 * img[..., 2].float()"

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
img = { shape = ["h", "w", "3"], init = "(torch.rand(shape) * 256).to(torch.uint8)" }
gray = { shape = ["h", "w"] }
*/
void grayscale(int h, int w, const unsigned char *img, float *gray) {
    for (long p = 0; p < (long)h * w; ++p) {
        gray[p] = (0.299f * img[3 * p] + 0.587f * img[3 * p + 1]) + 0.114f * img[3 * p + 2];
    }
}
