"""The CPU backend's nvcc compile check (judge/compile_check.py) compiles a load_inline CUDA source first with the
lightest torch header that suffices (judge/fast_build.py: seconds instead of ~40 s of parsing torch/extension.h on
two cores); a failure there is no verdict: the source as written decides, so its log is the one a stock build gives."""

from __future__ import annotations

import json
import shutil

import pytest

from kernel_gym.judge import compile_check

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")

SOURCE = r"""
#include <torch/extension.h>

__global__ void scale_kernel(const float* x, float* y, float a, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}

torch::Tensor scale(torch::Tensor x, double a) {
    auto y = torch::empty_like(x);
    long n = x.numel();
    scale_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), (float)a, n);
    return y;
}
"""


def _record(cache) -> dict:
    (path,) = (cache / "nvcc_checks").glob("*.json")
    return json.loads(path.read_text())


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNEL_GYM_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.mark.timeout(300)
def test_a_typical_source_is_checked_with_the_light_header(cache, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    assert compile_check.nvcc_check(SOURCE, workdir=work) == (True, "")
    assert _record(cache)["header"] == "lite"


@pytest.mark.timeout(300)
def test_a_light_compile_that_fails_is_no_verdict(cache, tmp_path, monkeypatch):
    """Were the light header to lack what a source needs, the source as written decides."""
    monkeypatch.setattr(compile_check, "lighter_source",
                        lambda source, folder: (source.replace("torch/extension.h", "no_such_header.h"), "lite"))
    work = tmp_path / "work"
    work.mkdir()
    assert compile_check.nvcc_check(SOURCE, workdir=work) == (True, "")
    assert _record(cache)["header"] == "stock"


@pytest.mark.timeout(300)
def test_a_genuine_error_is_reported_as_the_stock_compile_gives_it(cache, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    ok, log = compile_check.nvcc_check(SOURCE.replace("(float)a, n);", "(float)a, n)"), workdir=work)
    assert not ok and "cuda_sources(13)" in log and "expected a \";\"" in log, log
    assert _record(cache)["header"] == "stock"
