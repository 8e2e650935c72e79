"""A candidate's load_inline flags fit the torch the judge builds against (judge/build_flags.py), and a source
written against torch C++ APIs that are gone gets a hint that names the fix (feedback/hints_torch_api.py)."""

from __future__ import annotations

import glob
from pathlib import Path

import pytest

from kernel_gym.eval.result import EvalResult, Outcome
from kernel_gym.feedback.hints import HintContext, hints_for
from kernel_gym.judge import build_flags

RELU = (Path(__file__).resolve().parents[1] / "solutions" / "cuda" / "level1_relu.py").read_text()
RELU_CU = RELU.split('r"""')[1].split('"""')[0]


def test_an_older_standard_is_raised_to_torchs_and_nothing_else_changes(monkeypatch):
    monkeypatch.setattr(build_flags, "required_standard", lambda: 20)
    params = {"extra_cuda_cflags": ["-O3", "-std=c++17", "--use_fast_math"], "extra_cflags": "-std=gnu++14",
              "functions": ["f"]}
    fitted, changed = build_flags.fit_standard(params)
    assert fitted["extra_cuda_cflags"] == ["-O3", "-std=c++20", "--use_fast_math"]
    assert fitted["extra_cflags"] == ["-std=gnu++20"] and fitted["functions"] == ["f"]
    assert sorted(changed) == ["-std=c++17", "-std=gnu++14"]
    assert params["extra_cuda_cflags"][1] == "-std=c++17"  # the caller's arguments are untouched
    for newer in ("-std=c++20", "-std=c++23", "-std=gnu++2b"):
        assert build_flags.fit_standard({"extra_cflags": [newer]}) == ({"extra_cflags": [newer]}, [])
    monkeypatch.setattr(build_flags, "required_standard", lambda: None)
    assert build_flags.fit_standard(params) == (params, [])


def test_the_required_standard_is_read_from_torchs_headers():
    import torch

    header = Path(torch.__file__).parent / "include" / "ATen" / "ATen.h"
    if not header.exists():
        pytest.skip("this torch has no C++ headers")
    need = build_flags.required_standard()
    assert need is None or (f"C++{need} or later" in header.read_text())


@pytest.mark.slow
def test_a_cpp17_solution_builds_through_the_judges_builder(tmp_path, monkeypatch, build_cache):
    """A solution that asks for -std=c++17 (common in solutions written for an older torch) builds: torch 2.10+'s
    headers stop a C++17 compile with #error, which would be the toolchain's fault, not the solution's."""
    import torch.utils.cpp_extension as ext

    from kernel_gym.judge import builder

    roots = sorted(glob.glob("/usr/local/cuda*/bin/nvcc"))
    if not roots:
        pytest.skip("needs a CUDA toolkit under /usr/local/cuda*")
    if build_flags.required_standard() in (None, 17):
        pytest.skip("this torch's headers accept C++17")
    monkeypatch.setattr(ext, "CUDA_HOME", str(Path(roots[-1]).parents[1]))
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "9.0")
    # (the builder, a process of its own in the judge, skips load_inline's import by replacing it: put it back after)
    monkeypatch.setattr(ext, "_import_module_from_library", ext._import_module_from_library)
    params = {"cpp_sources": "torch::Tensor relu_forward(torch::Tensor x);", "cuda_sources": RELU_CU,
              "functions": ["relu_forward"], "extra_cuda_cflags": ["-O3", "-std=c++17"]}
    name = builder.build("kg_std17", params, tmp_path)
    assert list((tmp_path / name).glob("*.so")), name


def _compile_error(message: str) -> EvalResult:
    return EvalResult(outcome=Outcome.COMPILE_ERROR, message=message)


def test_a_removed_dispatch_argument_gets_its_fix():
    code = 'AT_DISPATCH_FLOATING_TYPES(x.type(), "f", [&] { });'
    said = ('cuda.cu(6): error: no suitable conversion function from "const at::DeprecatedTypeProperties" to '
            '"c10::ScalarType" exists')  # (nvcc 13 on torch 2.14's headers, verbatim)
    hints = hints_for(_compile_error(said), HintContext(code=code))
    assert any("x.scalar_type()" in h for h in hints), hints
    assert not any("scalar_type()" in h for h in hints_for(_compile_error("error: expected a \";\""),
                                                           HintContext(code=code)))
    clean = code.replace("x.type()", "x.scalar_type()")
    assert not any("scalar_type()" in h for h in hints_for(_compile_error(said), HintContext(code=clean)))


def test_thc_gets_its_fix():
    code = "#include <THC/THC.h>\nTHCudaCheck(cudaGetLastError());"
    said = "cuda.cu:2:10: fatal error: THC/THC.h: No such file or directory"
    assert any("C10_CUDA_CHECK" in h for h in hints_for(_compile_error(said), HintContext(code=code)))
