"""backend="cute_dsl" as the static rules see it (AST only: CuTe DSL need not be installed): the bodies of
@cute.kernel functions are the solution's own kernel; @cute.jit functions and forward are host code, read as PyTorch.
Where nvidia-cutlass-dsl is installed, every solution here also compiles for sm_90a on the CPU (traced, lowered and
built to a cubin; never run)."""

from __future__ import annotations

import pathlib
import textwrap

import pytest
from cute_solutions import compile_solution  # (tests/cute_solutions.py)

from kernel_gym.actions import detect_backend, parse_action
from kernel_gym.checks import run_static_checks
from kernel_gym.tasks import load_task

CUTE = pathlib.Path(__file__).resolve().parents[1] / "cute_dsl"
GENUINE = {"level1/relu": ("level1_relu.py", "float32"), "level1/sum_reduce": ("level1_sum_reduce.py", "float32"),
           "level1/matmul": ("level1_matmul_bf16.py", "bfloat16")}


def lint(code: str, task: str = "level1/relu", preset: str = "strict", backend: str = "cute_dsl",
         dtype: str = "float32") -> set[str]:
    t = load_task(task)
    found = run_static_checks(textwrap.dedent(code), preset, backend=backend, task_source=t.source, task_dtype=dtype)
    return {v.rule for v in found}


def messages(code: str, task: str, preset: str) -> str:
    t = load_task(task)
    return "\n".join(v.message for v in run_static_checks(code, preset, backend="cute_dsl", task_source=t.source))


@pytest.mark.parametrize("preset", ["strict", "kevin-strict", "standard", "permissive"])
@pytest.mark.parametrize("task", sorted(GENUINE))
def test_genuine_cute_dsl_solutions_pass_every_preset(task, preset):
    name, dtype = GENUINE[task]
    assert lint((CUTE / "solutions" / name).read_text(), task, preset, dtype=dtype) == set()


def test_the_prompts_example_is_a_genuine_solution():
    from kernel_gym.feedback.render import render_prompt

    text = render_prompt(load_task("level1/relu"), backend="cute_dsl", checks="strict", device="cuda", scoring="",
                         atol=1e-4, rtol=1e-4)
    example = text.split("```python\n")[-1].split("```")[0]  # (the task's source is the first block)
    assert "@cute.kernel" in example and ".launch(" in example and "cute.compile(" in example
    assert lint(example, "level1/relu", "strict") == set()
    assert "no BFloat16/Float16/TFloat32" in text  # an fp32 task
    cpu = render_prompt(load_task("level1/relu"), backend="cute_dsl", checks="strict", device="cpu", scoring="",
                        atol=1e-4, rtol=1e-4)
    assert "`unsupported`" in cpu


def test_hidden_library_gemm_behind_a_copy_kernel_is_a_library_op():
    code = (CUTE / "attacks" / "library_gemm_behind_copy.py").read_text()
    for preset in ("strict", "kevin-strict", "standard"):
        assert lint(code, "level1/matmul", preset) == {"library_op"}
    assert "@cute.kernel" in messages(code, "level1/matmul", "strict")  # the feedback says where own code goes
    assert lint(code, "level1/matmul", "permissive") == set()  # (the profiler's share catches it: tests/gpu)


def test_decoy_beside_torch_in_forward_is_a_library_op():
    code = (CUTE / "attacks" / "decoy_scratch_kernel.py").read_text()
    assert lint(code, "level1/relu", "strict") == {"library_op"}
    assert lint(code, "level1/relu", "permissive") == set()  # (the ablation trial catches it: tests/gpu)


PREFIX = """
import cutlass
import cutlass.cute as cute
import torch
import torch.nn as nn
from cutlass.cute.runtime import from_dlpack


@cute.kernel
def k(x: cute.Tensor, y: cute.Tensor):
    tid, _, _ = cute.arch.thread_idx()
    y[tid] = x[tid]
"""


def test_torch_in_the_jit_host_function_is_a_library_op_by_line():
    code = PREFIX + """

@cute.jit
def host(x: cute.Tensor, y: cute.Tensor, t: torch.Tensor):
    t.copy_(torch.exp(t))
    k(x, y).launch(grid=(1, 1, 1), block=(32, 1, 1))


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        host(from_dlpack(x), from_dlpack(y), x)
        return y
"""
    t = load_task("level1/relu")
    found = run_static_checks(code, "strict", backend="cute_dsl", task_source=t.source)
    assert [(v.rule, v.line) for v in found] == [("library_op", 17)]
    assert "torch.exp" in found[0].message


def test_a_kernel_never_launched_launches_nothing():
    code = PREFIX + """

@cute.jit
def host(x: cute.Tensor, y: cute.Tensor):
    pass


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        host(from_dlpack(x), from_dlpack(y))
        return y
"""
    assert lint(code, preset="permissive") == {"no_kernel"}
    assert "@cute.kernel function(s) k are not launched" in messages(code, "level1/relu", "permissive")


def test_class_held_kernels_and_a_compiled_function_in_an_attribute():
    code = PREFIX.replace("@cute.kernel\ndef k(", "class Relu:\n    @cute.kernel\n    def k(self, ").replace(
        "\n    tid,", "\n        tid,").replace("\n    y[tid]", "\n        y[tid]") + """
    @cute.jit
    def __call__(self, x: cute.Tensor, y: cute.Tensor):
        self.k(x, y).launch(grid=(1, 1, 1), block=(32, 1, 1))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.op = Relu()
        self.cache = {}

    def forward(self, x):
        y = torch.empty_like(x)
        args = (from_dlpack(x), from_dlpack(y))
        if x.shape not in self.cache:
            self.cache[x.shape] = cute.compile(self.op, *args)
        self.cache[x.shape](*args)
        return y
"""
    assert lint(code) == set()


def test_cute_dsl_code_asked_for_as_another_backend():
    code = (CUTE / "solutions" / "level1_relu.py").read_text()
    assert lint(code, backend="triton") == {"no_kernel"}
    parsed = parse_action(f"```python\n{code}```", backend="triton")
    assert not parsed.ok and "expects a triton solution, but the code is cute_dsl" in parsed.error


def test_auto_detects_cute_dsl():
    assert detect_backend("import cutlass.cute as cute\nclass ModelNew: pass") == "cute_dsl"
    assert detect_backend("from cutlass import cute\n") == "cute_dsl"
    assert detect_backend("import cutlass_cppgen\nimport triton\n") == "triton"  # the C++ package is not the DSL
    code = (CUTE / "solutions" / "level1_matmul_bf16.py").read_text()
    assert parse_action(f"```python\n{code}```", backend="auto").backend == "cute_dsl"


def test_bf16_mma_on_an_fp32_task_is_a_precision_violation():
    code = (CUTE / "solutions" / "level1_matmul_bf16.py").read_text()
    assert lint(code, "level1/matmul", "strict", dtype="float32") == {"precision"}


@pytest.mark.parametrize("name", ["level1_relu.py", "level1_sum_reduce.py", "level1_matmul_bf16.py",
                                  "../attacks/library_gemm_behind_copy.py"])
def test_the_solutions_compile_for_sm90_on_the_cpu(name, monkeypatch, tmp_path):
    """CuTe DSL traces, lowers and builds a cubin without a GPU when told the architecture (never run here)."""
    pytest.importorskip("cutlass.cute")
    monkeypatch.setenv("CUTE_DSL_ARCH", "sm_90a")
    monkeypatch.setenv("CUTE_DSL_CACHE_DIR", str(tmp_path))
    compiled = compile_solution(CUTE / "solutions" / name)
    names = list(compiled.kernel_info)  # the GPU kernel names the profiler's own-kernel share matches
    assert len(names) == 1 and names[0].startswith("kernel_cutlass_")
