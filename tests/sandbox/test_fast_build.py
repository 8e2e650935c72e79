"""Fast load_inline builds (kernel_gym.judge.fast_build): the light header is chosen only when it suffices and
compiles with nvcc; the precompiled header is valid for torch's real main.cpp flags (g++ reports using it)."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest

from kernel_gym.harness.cuda import find_nvcc
from kernel_gym.judge import fast_build, torch_headers

RELU = (Path(__file__).resolve().parents[1] / "solutions" / "cuda" / "level1_relu.py").read_text()
RELU_CU = RELU.split('r"""')[1].split('"""')[0]
# What typical load_inline CUDA files use: checks, dispatch, streams, guards, device properties, accessors, factories.
KITCHEN_SINK = """#include <torch/extension.h>
#include <cuda_runtime.h>
#define CHECK_INPUT(x) TORCH_CHECK(x.is_cuda() && x.is_contiguous(), #x " must be a contiguous CUDA tensor")

template <typename scalar_t>
__global__ void scale_kernel(const torch::PackedTensorAccessor32<scalar_t, 2, torch::RestrictPtrTraits> x,
                             torch::PackedTensorAccessor32<scalar_t, 2, torch::RestrictPtrTraits> y, float s) {
    int i = blockIdx.x, j = threadIdx.x;
    if (i < x.size(0) && j < x.size(1)) y[i][j] = x[i][j] * static_cast<scalar_t>(s);
}

torch::Tensor scale(torch::Tensor x, double s) {
    CHECK_INPUT(x);
    const at::cuda::OptionalCUDAGuard guard(x.device());
    auto y = torch::zeros_like(x);
    auto z = torch::empty({x.size(0), x.size(1)}, x.options().dtype(torch::kFloat32));
    auto w = torch::full({1}, 2.0, torch::TensorOptions().device(x.device()));
    int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    AT_DISPATCH_FLOATING_TYPES_AND_HALF(x.scalar_type(), "scale", [&] {
        scale_kernel<scalar_t><<<x.size(0), x.size(1), 0, stream>>>(
            x.packed_accessor32<scalar_t, 2, torch::RestrictPtrTraits>(),
            y.packed_accessor32<scalar_t, 2, torch::RestrictPtrTraits>(), (float)s);
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return sms > 0 && w.numel() == 1 ? y : z;  // (tensor operators such as z + w need ATen/Functions.h: "types")
}
"""


@pytest.fixture(autouse=True)
def cache(build_cache):
    """The session's build cache (conftest.BUILD_CACHE), which test_builds.py's C++ builds share."""
    return build_cache


def test_header_choice_is_the_lightest_that_suffices():
    assert torch_headers.header_choice(RELU_CU) == "lite"
    matmul = RELU_CU.replace("auto y = torch::empty_like(xc);", "auto y = torch::matmul(xc, xc);")
    assert torch_headers.header_choice(matmul) == "types"
    assert torch_headers.header_choice(RELU_CU + "\nPYBIND11_MODULE(m, mod) {}") == "stock"
    assert torch_headers.header_choice(RELU_CU + "\nnamespace py = pybind11;") == "stock"
    assert torch_headers.header_choice(RELU_CU.replace("#include <torch/extension.h>", "#include <ATen/ATen.h>")) \
        == "stock"  # the source picks its own headers


def test_fast_params_swap_the_header_and_put_the_pch_first(monkeypatch):
    monkeypatch.setattr(fast_build, "pch_dir", lambda cflags, paths, header: Path(f"/pch/{header}"))
    params = {"cpp_sources": "torch::Tensor f(torch::Tensor x);", "cuda_sources": RELU_CU, "functions": ["f"],
              "extra_cflags": ["-O3"], "extra_cuda_cflags": ["-O3"], "use_pch": True}
    fast, changes = fast_build.fast_params(params)
    cuda = "\n".join(fast["cuda_sources"])
    assert "torch/extension.h" not in cuda and f"<{torch_headers.LITE_PREFIX}_" in cuda
    assert fast["extra_cuda_cflags"][0] == "-O3" and fast["extra_cuda_cflags"][1].startswith("-I")
    assert fast["extra_cflags"] == ["-I/pch/lite", "-O3"] and "use_pch" not in fast
    assert changes == {"cuda_header": "lite", "cpp_header": "lite", "pch": "lite"}
    assert params["cuda_sources"] == RELU_CU  # the caller's arguments are untouched (the stock fallback)
    main = fast["cpp_sources"]
    main.insert(0, "#include <torch/extension.h>")  # what load_inline does
    assert main[0] == f"#include <{torch_headers.BIND_HEADER}>"
    heavy = dict(params, cpp_sources="torch::Tensor f(torch::Tensor x) { return torch::matmul(x, x); }")
    fast, changes = fast_build.fast_params(heavy)
    assert "cpp_header" not in changes and fast["extra_cflags"][0] == "-I/pch/stock"


def test_light_header_includes_only_what_the_source_uses():
    plain = fast_build.lite_headers(RELU_CU)
    assert not any("CUDAGuard" in h or "CUDAContextLight" in h for h in plain)
    assert any(h.startswith("kernel_gym_ops_empty_like_") for h in plain) and "ATen/ops/empty_like.h" not in plain
    guarded = RELU_CU.replace("auto xc", "const at::cuda::OptionalCUDAGuard guard(x.device());\n    auto xc")
    assert "c10/cuda/CUDAGuard.h" in fast_build.lite_headers(guarded)
    props = RELU_CU.replace("auto xc", "int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;\n"
                                       "    auto xc")
    assert torch_headers.header_choice(props) == "lite"
    assert "ATen/cuda/CUDAContextLight.h" in fast_build.lite_headers(props)
    unknown = RELU_CU.replace("auto xc", "at::cuda::CUDAEvent ev;\n    auto xc")
    assert torch_headers.header_choice(unknown) == "types"  # a CUDA-namespace name the light header does not know
    assert torch_headers.header_choice("using namespace torch;\n" + RELU_CU) == "types"


def test_ops_header_is_torchs_own_wrappers_without_their_includes():
    import torch

    name = fast_build.ops_header("empty_like")
    text = (fast_build.lite_include_dir() / name).read_text()
    original = (Path(torch.__file__).parent / "include" / "ATen" / "ops" / "empty_like.h").read_text()
    assert "#include <ATen/Context.h>" in original and "ATen/Context.h" not in text
    assert "#include <ATen/ops/empty_like_ops.h>" in text
    wrappers = [line for line in original.splitlines() if line.startswith("inline ")]
    assert wrappers and all(line in text for line in wrappers)


@pytest.mark.slow
@pytest.mark.skipif(find_nvcc() is None, reason="needs nvcc")
def test_lite_header_compiles_a_typical_cuda_file(tmp_path):
    from torch.utils.cpp_extension import include_paths

    src = tmp_path / "cuda.cu"
    assert torch_headers.header_choice(KITCHEN_SINK) == "lite"
    header = fast_build.lite_header(fast_build.lite_headers(KITCHEN_SINK))
    src.write_text(torch_headers.EXTENSION_INCLUDE.sub(f"#include <{header}>", KITCHEN_SINK))
    nvidia_inc = [str(p) for p in Path(sysconfig.get_paths()["purelib"]).glob("nvidia/cu*/include")]
    from torch.utils.cpp_extension import COMMON_NVCC_FLAGS  # what load_inline passes (no half operators, ...)

    cmd = [find_nvcc(), "-c", "-std=c++20", "-O3", "-arch=sm_90", *COMMON_NVCC_FLAGS, "-Xcompiler", "-fPIC",
           f"-I{fast_build.lite_include_dir()}", f"-I{sysconfig.get_paths()['include']}",
           *[f"-I{p}" for p in include_paths(device_type="cuda")], *[x for p in nvidia_inc for x in ("-isystem", p)],
           str(src), "-o", str(tmp_path / "cuda.o")]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_pch_is_used_by_torchs_own_main_cpp_flags(tmp_path):
    from torch.utils.cpp_extension import load_inline

    fast, changes = fast_build.fast_params({"cpp_sources": "#include <torch/extension.h>\nint add1(int x) { return x + 1; }",
                                            "functions": ["add1"], "verbose": False})
    assert "pch" in changes
    module = load_inline("kg_pch_check", build_directory=str(tmp_path), **fast)
    assert module.add1(41) == 42
    ninja = (tmp_path / "build.ninja").read_text()
    cflags = re.search(r"^cflags = (.*)$", ninja, re.M).group(1)
    post = re.search(r"^post_cflags = (.*)$", ninja, re.M).group(1)
    run = subprocess.run(["g++", "-H", "-fsyntax-only", "-Winvalid-pch", str(tmp_path / "main.cpp"),
                          *shlex.split(cflags), *shlex.split(post)], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    gch = "extension.h.gch"
    assert "cpp_header" not in changes  # a C++-only extension does its work in main.cpp: the stock header, precompiled
    used = [line for line in run.stderr.splitlines() if line.startswith("!") and line.endswith(gch)]
    assert used, "g++ did not use the precompiled header:\n" + run.stderr[-2000:]


def test_lite_sources_decline_load_inlines_types_prefix():
    fast, _ = fast_build.fast_params({"cuda_sources": RELU_CU})
    sources = fast["cuda_sources"]
    for i, line in enumerate(("#include <torch/types.h>", "#include <cuda.h>", "#include <cuda_runtime.h>")):
        sources.insert(i, line)  # what load_inline does
    assert sources[:2] == ["#include <cuda.h>", "#include <cuda_runtime.h>"] and len(sources) == 3


@pytest.mark.slow
def test_fast_cuda_build_compiles_and_imports_without_a_gpu(tmp_path, monkeypatch):
    """The whole fast load_inline build of a typical CUDA action (nvcc + g++ + link + import; nothing runs)."""
    import glob

    import torch.utils.cpp_extension as ext

    roots = sorted(glob.glob("/usr/local/cuda*/bin/nvcc"))
    if not roots:
        pytest.skip("needs a CUDA toolkit under /usr/local/cuda*")
    monkeypatch.setattr(ext, "CUDA_HOME", str(Path(roots[-1]).parents[1]))
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "9.0")
    nvidia_inc = [str(p) for p in Path(sysconfig.get_paths()["purelib"]).glob("nvidia/cu*/include")]
    fast, changes = fast_build.fast_params({"cpp_sources": "torch::Tensor relu_forward(torch::Tensor x);",
                                            "cuda_sources": RELU_CU, "functions": ["relu_forward"],
                                            "extra_cuda_cflags": ["-O3"], "extra_include_paths": nvidia_inc,
                                            "verbose": False})
    assert changes["cuda_header"] == "lite"
    module = ext.load_inline("kg_fast_relu", build_directory=str(tmp_path), **fast)
    assert callable(module.relu_forward)
    cu = (tmp_path / "cuda.cu").read_text()
    assert "torch/types.h" not in cu and cu.index("<cuda.h>") < cu.index(torch_headers.LITE_PREFIX)
    assert changes["cpp_header"] == "lite" and torch_headers.BIND_HEADER in (tmp_path / "main.cpp").read_text()


MISSING = 'cuda.cu(21): error: no operator "+" matches these operands'
SYNTAX = 'cuda.cu(21): error: expected a ";"'
PCH_GONE = "main.cpp:3:10: fatal error: /c/pch/KEY/torch/extension.h: No such file or directory"


@pytest.mark.parametrize("fails, error, expected", [("f", MISSING, ["f", "t"]), ("ft", MISSING, ["f", "t", "stock"]),
                                                    ("", MISSING, ["f"]), ("f", SYNTAX, ["f", "stock"])])
def test_failed_light_build_retries_with_types_then_stock(monkeypatch, tmp_path, fails, error, expected):
    """A light build that fails for a missing declaration (say, tensor operators in the wrapper) is retried with
    torch/types.h, then the stock way; one that fails otherwise (a syntax error) goes to the stock build at once,
    whose error, if any, is the candidate's (the build process: judge/builder.py)."""
    from kernel_gym.judge import builder

    calls = []

    def fake_build(unique, params, staging):
        cu = fast_build._text(params["cuda_sources"])
        kind = "f" if torch_headers.LITE_PREFIX in cu else "stock" if "torch/extension.h" in cu else "t"
        assert kind == "stock" or unique.endswith(kind)  # fast builds get their own names
        calls.append(kind)
        if kind in fails:
            raise RuntimeError(f"Error building extension '{unique}': {error}")

    monkeypatch.setattr(builder, "_load_inline", fake_build)
    monkeypatch.setattr(fast_build, "pch_dir", lambda cflags, paths, header: None)
    built = builder.build("relu", {"cpp_sources": "torch::Tensor relu_forward(torch::Tensor x);",
                                   "cuda_sources": RELU_CU, "functions": ["relu_forward"]}, tmp_path)
    assert calls == expected and built == "relu" + {"f": "f", "t": "t", "stock": ""}[expected[-1]]


@pytest.mark.parametrize("error, expected", [(PCH_GONE, ["pch", "stock"]), (SYNTAX, ["pch"])])
def test_a_build_failing_on_the_precompiled_header_is_built_the_stock_way(monkeypatch, tmp_path, error, expected):
    """A C++ source that keeps the stock header gets only the precompiled one: when the error is about that
    header's folder the stock build decides; a plain compile error is the candidate's at once."""
    from kernel_gym.judge import builder

    calls = []

    def fake_build(unique, params, staging):
        calls.append("pch" if any("/pch/" in f for f in params.get("extra_cflags", [])) else "stock")
        raise RuntimeError(error.replace("KEY", "k123"))

    monkeypatch.setattr(builder, "_load_inline", fake_build)
    monkeypatch.setattr(fast_build, "pch_dir", lambda cflags, paths, header: Path("/c/pch/k123"))
    with pytest.raises(RuntimeError):
        builder.build("ext", {"cpp_sources": "#include <torch/extension.h>\nint f() { return torch::nn::Linear(1, 1)"
                              "->weight.numel(); }", "functions": ["f"]}, tmp_path)
    assert calls == expected


@pytest.mark.slow
def test_tensor_operators_in_the_wrapper_build_through_the_types_retry(tmp_path, monkeypatch):
    """Real builds (nvcc + g++ + link; nothing runs): a wrapper using `a + b` on tensors fails with the light header
    (no ATen/Functions.h) and builds with torch/types.h, without falling back to the stock build."""
    import glob

    import torch.utils.cpp_extension as ext

    from kernel_gym.judge import builder

    roots = sorted(glob.glob("/usr/local/cuda*/bin/nvcc"))
    if not roots:
        pytest.skip("needs a CUDA toolkit under /usr/local/cuda*")
    monkeypatch.setattr(ext, "CUDA_HOME", str(Path(roots[-1]).parents[1]))
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "9.0")
    built = []
    real_build = builder._load_inline
    monkeypatch.setattr(builder, "_load_inline", lambda unique, params, staging: built.append(unique) or real_build(
        unique, dict(params, extra_include_paths=[str(p) for p in Path(sysconfig.get_paths()["purelib"]).glob(
            "nvidia/cu*/include")]), staging))
    source = RELU_CU.replace("return y;", "return y + xc * 0;")
    assert torch_headers.header_choice(source) == "lite"  # operators are not names: the light header is tried first
    module = builder.build("relu_ops", {"cpp_sources": "torch::Tensor relu_forward(torch::Tensor x);",
                                        "cuda_sources": source, "functions": ["relu_forward"],
                                        "extra_cuda_cflags": ["-O3"]}, tmp_path)
    assert module == "relu_opst" and (tmp_path / module / f"{module}.so").exists()
    assert [u[-1] for u in built] == ["f", "t"]  # light failed, types built; no stock build


def test_header_caches_out_of_reach_mean_the_stock_build(monkeypatch, tmp_path):
    """A build process that cannot write the header caches (it dropped its uid where Landlock is missing) builds
    the stock way instead of failing a genuine solution."""
    from kernel_gym.judge import builder

    def no_cache(params, cuda_header=None):
        raise PermissionError(13, "Permission denied", "/root/.cache/kernel_gym/pch")

    calls = []
    monkeypatch.setattr(fast_build, "fast_params", no_cache)
    monkeypatch.setattr(builder, "_load_inline", lambda unique, params, staging: calls.append(unique))
    assert builder.build("relu", {"cuda_sources": RELU_CU}, tmp_path) == "relu" and calls == ["relu"]
