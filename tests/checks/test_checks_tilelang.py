"""backend="tilelang" as the static rules see it (AST only: TileLang need not be installed): the bodies of
@T.prim_func functions (and of eager @tilelang.jit kernels) are the solution's own kernel; a lazy @tilelang.jit
factory and forward are host code, read as PyTorch. Where tilelang is installed, every solution here also lowers to
CUDA C++ for sm_90a on the CPU (parsed, layouts inferred, code generated; never built or run)."""

from __future__ import annotations

import importlib.util
import pathlib
import re
import textwrap

import pytest

from kernel_gym.actions import detect_backend, parse_action
from kernel_gym.checks import run_static_checks
from kernel_gym.tasks import load_task

TL = pathlib.Path(__file__).resolve().parents[1] / "tilelang"
GENUINE = {"level1/relu": ("level1_relu.py", "float32"), "level1/sum_reduce": ("level1_sum_reduce.py", "float32"),
           "level1/matmul": ("level1_matmul_bf16.py", "bfloat16")}


def lint(code: str, task: str = "level1/relu", preset: str = "strict", backend: str = "tilelang",
         dtype: str = "float32") -> set[str]:
    t = load_task(task)
    found = run_static_checks(textwrap.dedent(code), preset, backend=backend, task_source=t.source, task_dtype=dtype)
    return {v.rule for v in found}


def messages(code: str, task: str, preset: str) -> str:
    t = load_task(task)
    return "\n".join(v.message for v in run_static_checks(code, preset, backend="tilelang", task_source=t.source))


@pytest.mark.parametrize("preset", ["strict", "kevin-strict", "standard", "permissive"])
@pytest.mark.parametrize("task", sorted(GENUINE))
def test_genuine_tilelang_solutions_pass_every_preset(task, preset):
    name, dtype = GENUINE[task]
    assert lint((TL / "solutions" / name).read_text(), task, preset, dtype=dtype) == set()


def test_the_prompts_example_is_a_genuine_solution():
    from kernel_gym.feedback.render import render_prompt

    text = render_prompt(load_task("level1/relu"), backend="tilelang", checks="strict", device="cuda", scoring="",
                         atol=1e-4, rtol=1e-4)
    example = text.split("```python\n")[-1].split("```")[0]  # (the task's source is the first block)
    assert "@T.prim_func" in example and "@tilelang.jit(out_idx=[-1])" in example
    assert lint(example, "level1/relu", "strict") == set()
    assert "TF32 tensor cores" in text  # an fp32 task


def test_hidden_library_gemm_behind_a_copy_kernel_is_a_library_op():
    code = (TL / "attacks" / "library_gemm_behind_copy.py").read_text()
    for preset in ("strict", "kevin-strict", "standard"):
        assert lint(code, "level1/matmul", preset) == {"library_op"}
    assert "@T.prim_func" in messages(code, "level1/matmul", "strict")
    assert lint(code, "level1/matmul", "permissive") == set()  # (the profiler's share catches it: tests/gpu)


def test_decoy_beside_torch_in_forward_is_a_library_op():
    code = (TL / "attacks" / "decoy_scratch_kernel.py").read_text()
    assert lint(code, "level1/relu", "strict") == {"library_op"}
    assert lint(code, "level1/relu", "permissive") == set()  # (the ablation trial catches it: tests/gpu)


PREFIX = """
import tilelang
import tilelang.language as T
import torch
import torch.nn as nn
"""
FACTORY = """

@tilelang.jit(out_idx=[-1])
def make(n: int):
    scale = torch.ones(1)  # host code: read as PyTorch (an allocation is fine)
    @T.prim_func
    def main(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, 256), threads=256) as bx:
            for i in T.Parallel(256):
                Y[bx * 256 + i] = T.max(X[bx * 256 + i], T.float32(0))
    return main
"""


def test_torch_compute_in_the_factory_is_a_library_op_by_line():
    code = PREFIX + FACTORY.replace("torch.ones(1)", "torch.exp(torch.ones(1))") + """

class ModelNew(nn.Module):
    def forward(self, x):
        return make(x.numel())(x.view(-1)).view_as(x)
"""
    t = load_task("level1/relu")
    found = run_static_checks(code, "strict", backend="tilelang", task_source=t.source)
    assert [(v.rule, v.line) for v in found] == [("library_op", 10)]


def test_kernel_held_in_self_and_launched_later():
    code = PREFIX + FACTORY + """

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.kernels = {}

    def forward(self, x):
        if x.numel() not in self.kernels:
            self.kernels[x.numel()] = make(x.numel())
        return self.kernels[x.numel()](x.view(-1)).view_as(x)
"""
    assert lint(code) == set()


def test_a_factory_never_called_and_launched_is_no_kernel():
    code = PREFIX + FACTORY + """

class ModelNew(nn.Module):
    def forward(self, x):
        self.k = make(x.numel())  # compiled, never launched
        return x.clamp(min=0)
"""
    assert lint(code, preset="permissive") == {"no_kernel"}
    assert "never compiled and called from forward" in messages(code, "level1/relu", "permissive")


def test_eager_jit_kernel_and_tilelang_compile():
    code = PREFIX + """
N = 4096


@T.prim_func
def relu_main(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
    with T.Kernel(T.ceildiv(N, 256), threads=256) as bx:
        for i in T.Parallel(256):
            Y[bx * 256 + i] = T.max(X[bx * 256 + i], T.float32(0))


KERNEL = tilelang.compile(relu_main, out_idx=[-1])


class ModelNew(nn.Module):
    def forward(self, x):
        return KERNEL(x.view(-1)).view_as(x)
"""
    assert lint(code) == set()
    eager = PREFIX + """

@tilelang.jit
def relu(X, Y):
    n = T.const("n")
    X: T.Tensor[[n], "float32"]
    Y: T.Tensor[[n], "float32"]
    with T.Kernel(T.ceildiv(n, 256), threads=256) as bx:
        for i in T.Parallel(256):
            Y[bx * 256 + i] = T.max(X[bx * 256 + i], T.float32(0))


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        relu(x.view(-1), y.view(-1))
        return y
"""
    assert lint(eager) == set()


def test_tilelang_code_asked_for_as_another_backend():
    code = (TL / "solutions" / "level1_relu.py").read_text()
    assert lint(code, backend="cute_dsl") == {"no_kernel"}
    parsed = parse_action(f"```python\n{code}```", backend="triton")
    assert not parsed.ok and "expects a triton solution, but the code is tilelang" in parsed.error


def test_auto_detects_tilelang():
    assert detect_backend("import tilelang\nimport tilelang.language as T\nclass ModelNew: pass") == "tilelang"
    assert detect_backend("from tilelang import language as T\n") == "tilelang"
    code = (TL / "solutions" / "level1_matmul_bf16.py").read_text()
    assert parse_action(f"```python\n{code}```", backend="auto").backend == "tilelang"


def test_bf16_buffers_on_an_fp32_task_are_a_precision_violation():
    code = (TL / "solutions" / "level1_matmul_bf16.py").read_text()
    assert lint(code, "level1/matmul", "strict", dtype="float32") == {"precision"}
    assert lint(code.replace('"bfloat16"', "T.bfloat16"), "level1/matmul", "strict", dtype="float32") == {"precision"}


@pytest.mark.parametrize("name, factory, args", [
    ("level1_relu.py", "relu", (1001, "float32")),
    ("level1_sum_reduce.py", "column_sum", (3, 77, 45, "float32")),
    ("level1_matmul_bf16.py", "matmul", (50, 45, 37)),
])
def test_the_solutions_lower_for_sm90_on_the_cpu(name, factory, args, monkeypatch, tmp_path):
    """TileLang parses, lays out and generates the CUDA C++ of a prim_func without a GPU (nvcc never runs here)."""
    pytest.importorskip("tilelang")
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path))
    import tilelang
    from tilelang import tvm

    spec = importlib.util.spec_from_file_location(f"tl_{name}", TL / "solutions" / name)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    target = tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
    with target:
        source = tilelang.lower(getattr(mod, factory).get_tir(*args), target=target).kernel_source
    # the GPU kernel names the profiler's own-kernel share matches: <prim_func>_kernel
    assert set(re.findall(r"__global__ void (?:__launch_bounds__\([^)]*\) )?(\w+)", source)) == {
        f"{factory}_main_kernel"}
    if "matmul" in name:
        assert "wgmma" in source  # Hopper tensor cores
