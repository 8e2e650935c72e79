"""Block sizes and dynamic shared memory read from CUDA launch sites."""

from kernel_gym.signals.launch_config import evaluate, launch_configs

SOURCE = r"""
#define BLOCK 256
#define TILE 16  // a tile side
__global__ void __launch_bounds__(512) bounded(float* x) {}
__global__ void plain(float* x) {}
template <typename T> __global__ void templated(T* x) {}
torch::Tensor host(torch::Tensor x, int n_threads) {
    const int threads = 128;
    constexpr int smem = 2 * threads * sizeof(float);
    dim3 block(TILE, TILE);
    bounded<<<10, 256>>>(ptr);
    plain<<<(n + BLOCK - 1) / BLOCK, BLOCK, BLOCK * sizeof(float)>>>(ptr);
    templated<float><<<grid, block, 0, stream>>>(ptr);
    by_name<<<g, threads, smem>>>(ptr);
    from_python<<<g, n_threads>>>(ptr);
    computed<<<g, std::min(1024, n)>>>(ptr);
}
"""


def test_launch_sites_and_bounds():
    configs = launch_configs(SOURCE)
    assert configs["bounded"] == (512, 0)  # __launch_bounds__ wins over the launch site
    assert configs["plain"] == (256, 1024)
    assert configs["templated"] == (256, 0)  # dim3(16, 16)
    assert configs["by_name"] == (128, 1024)
    assert configs["from_python"] == (None, 0)  # a runtime value: unknown
    assert configs["computed"] == (None, 0)


def test_evaluate():
    defs = {"A": "4", "B": "A * 8", "C": None}
    assert evaluate("(A + B) << 1", defs) == 72
    assert evaluate("dim3(A, B, 2)", defs) == 256
    assert evaluate("256u", defs) == 256
    assert evaluate("C", defs) is None and evaluate("x.size(0)", defs) is None
    assert evaluate("max(A, 7) / 2", defs) == 3


def test_a_name_defined_twice_differently_is_unknown():
    src = "void f() { int threads = 256; k<<<1, threads>>>(p); }\nvoid g() { int threads = 512; }"
    assert launch_configs(src)["k"] == (None, 0)
