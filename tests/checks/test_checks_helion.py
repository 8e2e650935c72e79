"""backend="helion" as the static rules see it (AST only: Helion need not be installed): the torch ops inside a
Helion kernel's hl.tile loop are the solution's own kernel, those outside it are library ops."""

from __future__ import annotations

import pathlib
import textwrap

import pytest

from kernel_gym.actions import detect_backend, parse_action
from kernel_gym.checks import run_static_checks
from kernel_gym.tasks import load_task

HELION = pathlib.Path(__file__).resolve().parents[1] / "helion"
GENUINE = {"level1/relu": "level1_relu.py", "level1/sum_reduce": "level1_sum_reduce.py",
           "level1/matmul": "level1_matmul.py", "level1/softmax": "level1_softmax.py"}


def lint(code: str, task: str = "level1/relu", preset: str = "strict", backend: str = "helion") -> set[str]:
    t = load_task(task)
    found = run_static_checks(textwrap.dedent(code), preset, backend=backend, task_source=t.source)
    return {v.rule for v in found}


def messages(code: str, task: str, preset: str) -> str:
    t = load_task(task)
    return "\n".join(v.message for v in run_static_checks(code, preset, backend="helion", task_source=t.source))


@pytest.mark.parametrize("preset", ["strict", "kevin-strict", "standard", "permissive"])
@pytest.mark.parametrize("task", sorted(GENUINE))
def test_genuine_helion_solutions_pass_every_preset(task, preset):
    code = (HELION / "solutions" / GENUINE[task]).read_text()
    assert lint(code, task, preset) == set()


def test_the_prompts_example_is_a_genuine_solution():
    from kernel_gym.feedback.render import render_prompt

    text = render_prompt(load_task("level1/relu"), backend="helion", checks="strict", device="cpu", scoring="",
                         atol=1e-4, rtol=1e-4)
    example = text.split("```python\n")[-1].split("```")[0]  # (the task's source is the first block)
    assert "@helion.kernel(config=helion.Config(" in example and "hl.tile" in example
    assert lint(example, "level1/relu", "strict") == set()
    assert "dot_precision=\"ieee\"" in text  # an fp32 task


def test_library_call_in_a_helion_kernels_host_code_is_a_library_op():
    code = (HELION / "attacks" / "library_in_host_code.py").read_text()
    for preset in ("strict", "standard"):
        assert "library_op" in lint(code, "level1/matmul", preset)
    assert "hl.tile" in messages(code, "level1/matmul", "strict")  # the feedback says where own code goes
    assert lint(code, "level1/matmul", "permissive") == set()  # (the ablation trial catches it: tests/helion)


def test_helion_kernel_without_device_loop_launches_nothing():
    code = (HELION / "attacks" / "no_device_loop.py").read_text()
    assert lint(code, "level1/matmul", "permissive") == {"no_kernel"}
    assert {"no_kernel", "library_op"} <= lint(code, "level1/matmul", "standard")
    assert "no `for tile in hl.tile(...)`" in messages(code, "level1/matmul", "permissive")


def test_decoy_helion_kernel_beside_torch_in_forward():
    code = (HELION / "attacks" / "decoy_scratch_kernel.py").read_text()
    assert lint(code, "level1/relu", "strict") == {"library_op"}


PREFIX = """
import helion
import helion.language as hl
import torch
import torch.nn as nn
"""


def test_helion_kernel_held_in_self_and_called_through_a_helper():
    code = PREFIX + """
def _body(x):
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        out[tile] = torch.relu(x[tile])
    return out

relu_k = helion.kernel(_body, config=helion.Config(block_sizes=[64]))

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.k = relu_k

    def forward(self, x):
        return self.k(x.reshape(-1)).view_as(x)
"""
    assert lint(code) == set()


def test_torch_compute_beside_the_loop_inside_the_kernel_is_flagged_by_line():
    code = PREFIX + """
@helion.kernel(config=helion.Config(block_sizes=[64]))
def k(x):
    out = torch.empty_like(x)
    y = torch.exp(x)
    for tile in hl.tile(x.size(0)):
        out[tile] = torch.relu(y[tile])
    return out

class ModelNew(nn.Module):
    def forward(self, x):
        return k(x)
"""
    t = load_task("level1/relu")
    found = run_static_checks(code, "strict", backend="helion", task_source=t.source)
    assert [(v.rule, v.line) for v in found] == [("library_op", 10)]
    assert "torch.exp" in found[0].message


def test_helion_code_asked_for_as_another_backend():
    code = (HELION / "solutions" / "level1_relu.py").read_text()
    assert lint(code, backend="triton") == {"no_kernel"}
    parsed = parse_action(f"```python\n{code}```", backend="triton")
    assert not parsed.ok and "expects a triton solution, but the code is helion" in parsed.error


def test_auto_detects_helion_before_triton():
    assert detect_backend("import helion\nimport triton\nclass ModelNew: pass") == "helion"
    assert detect_backend("from helion import language as hl\n") == "helion"
    assert detect_backend("import triton\n# helion is not used\n") == "triton"
    code = (HELION / "solutions" / "level1_matmul.py").read_text()
    assert parse_action(f"```python\n{code}```", backend="auto").backend == "helion"


def test_tf32_dot_precision_is_a_precision_violation():
    code = (HELION / "solutions" / "level1_matmul.py").read_text().replace('dot_precision="ieee"',
                                                                            'dot_precision="tf32"')
    assert lint(code, "level1/matmul", "strict") == {"precision"}
