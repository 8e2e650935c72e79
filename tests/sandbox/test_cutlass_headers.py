"""CUTLASS/CuTe C++ headers for CUDA sources that include them: the installed nvidia-cutlass package's include
folders, added by the judge to load_inline builds and to the CPU backend's nvcc check (kernel_gym/harness/cutlass.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kernel_gym.harness import cutlass
from kernel_gym.harness.cuda import find_nvcc
from kernel_gym.judge.builds import normalize
from kernel_gym.judge.compile_check import nvcc_check

CUTE = (Path(__file__).resolve().parents[1] / "solutions" / "cuda" / "level1_relu_cute.py").read_text()
CUDA_SOURCE = CUTE.split('CUDA = r"""', 1)[1].split('"""', 1)[0]

needs_cutlass = pytest.mark.skipif(not cutlass.include_dirs(), reason="nvidia-cutlass is not installed "
                                   "(the README's install brings it: kernel-gym[cutlass])")


@needs_cutlass
def test_a_build_that_includes_cute_gets_the_packages_headers_and_flag():
    _, params = normalize("cute_relu", {"cpp_sources": "torch::Tensor relu(torch::Tensor x);",
                                        "cuda_sources": CUDA_SOURCE, "functions": ["relu"],
                                        "extra_cuda_cflags": ["-O3"]})
    assert set(cutlass.include_dirs()) <= set(params["extra_include_paths"])
    assert params["extra_cuda_cflags"] == ["-O3", "--expt-relaxed-constexpr"]
    assert any(Path(d, "cute", "tensor.hpp").is_file() for d in cutlass.include_dirs())
    _, plain = normalize("plain", {"cuda_sources": "__global__ void k() {}", "cpp_sources": ""})
    assert "extra_include_paths" not in plain  # other builds are as they were (and keep their cache keys)


@needs_cutlass
@pytest.mark.skipif(find_nvcc() is None, reason="no nvcc on this machine")
@pytest.mark.timeout(600)
def test_a_cute_kernel_compiles_with_the_headers_and_not_without(tmp_path, monkeypatch):
    ok, log = nvcc_check(CUDA_SOURCE, workdir=tmp_path)
    assert ok, log
    monkeypatch.setattr(cutlass, "include_dirs", lambda: ())
    ok, log = nvcc_check(CUDA_SOURCE, workdir=tmp_path)
    assert not ok and "cute/tensor.hpp" in log, log
