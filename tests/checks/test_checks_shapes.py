"""Issue 22, static side: the regression set of genuine solution shapes (tests/anti_hacking/shapes) passes
`standard`, and the holes it closed stay closed (single-GEMM/conv tasks, epilogue reductions that are the work,
helper __init__ code, kernels and extension functions held in attributes and dicts)."""

import pathlib
import textwrap

import pytest

from kernel_gym.checks import run_static_checks
from kernel_gym.tasks import load_task

SHAPES = pathlib.Path(__file__).resolve().parents[1] / "anti_hacking" / "shapes"
ATTACKS = pathlib.Path(__file__).resolve().parents[1] / "anti_hacking" / "attacks"
# regression file -> its task (every file's docstring names it too)
SHAPE_TASKS = {
    "triton_kernel_on_self": "level1/relu",
    "triton_kernels_in_dict": "level1/leaky_relu",
    "triton_helper_object": "level1/hardtanh",
    "triton_module_init_params": "level2/gemm_relu",
    "triton_allocations": "level1/softmax",
    "triton_epilogue_reduction": "level1/mse_loss",
    "cuda_module_level_ext": "level1/relu",
    "cuda_fn_on_self": "level1/matmul",
    "cuda_fns_in_dict": "level1/gelu",
    "cuda_helper_object": "level1/leaky_relu",
    "cuda_zeros_wrapper": "level1/relu",
    "cuda_two_extensions": "level2/gemm_relu",
    "cuda_module_init_params": "level2/gemm_bias_gelu",
    "cuda_epilogue_mean": "level1/mse_loss",
}
EPILOGUE_SHAPES = {"triton_epilogue_reduction", "cuda_epilogue_mean"}


def rules(code: str, preset: str = "standard", task: str | None = None, **kw) -> list[str]:
    source = load_task(task).source if task else None
    return [v.rule for v in run_static_checks(code, preset, task_source=source, **kw)]


def test_every_shape_file_is_listed():
    assert {p.stem for p in SHAPES.glob("*.py")
            if not p.stem.startswith(("attack_", "mismatch_", "partial_"))} == set(SHAPE_TASKS)


@pytest.mark.parametrize("name", sorted(SHAPE_TASKS))
def test_shape_passes_standard_and_permissive(name):
    code, task = (SHAPES / f"{name}.py").read_text(), SHAPE_TASKS[name]
    backend = "cuda" if name.startswith("cuda_") else "triton"
    assert rules(code, "standard", task, backend=backend) == []
    assert rules(code, "permissive", task, backend=backend) == []
    # strict keeps Kevin's rule: only the epilogue reduction is PyTorch compute there
    assert rules(code, "strict", task, backend=backend) == (["library_op"] if name in EPILOGUE_SHAPES else [])


@pytest.mark.parametrize("file, task", [
    ("01_library_gemm_whole_task.py", "level1/matmul"),
    ("01_library_conv_whole_task.py", "level1/conv2d"),
])
def test_library_call_that_is_the_whole_task_is_rejected(file, task):
    code = (ATTACKS / file).read_text()
    assert rules(code, "standard", task) == ["library_op"]
    assert "nothing else" in run_static_checks(code, "standard", task_source=load_task(task).source)[0].message
    assert rules(code, "permissive", task) == []  # KernelBench-compatible: any torch op may stay


@pytest.mark.parametrize("file, task", [
    ("attack_cuda_matmul_token_kernel.py", "level1/matmul"),
    ("attack_cuda_conv_token_kernel.py", "level1/conv2d"),
])
def test_cpp_library_call_that_is_the_whole_task_is_rejected(file, task):
    code = (SHAPES / file).read_text()
    assert rules(code, "standard", task, backend="cuda") == ["library_op"]


def test_library_gemm_stays_allowed_beside_other_work():
    code = (ATTACKS / "01_library_op_matmul.py").read_text()  # torch.matmul + own epilogue on level2/gemm_relu
    assert rules(code, "standard", "level2/gemm_relu") == []
    assert rules(code, "strict", "level2/gemm_relu") == ["library_op"]


def test_library_gemm_on_a_task_without_gemm_is_rejected():
    """`x @ ones` sums rows through cuBLAS: on level1/sum_reduce there is no GEMM to keep."""
    code = (ATTACKS / "01_library_gemm_whole_task.py").read_text()
    assert rules(code, "standard", "level1/sum_reduce") == ["library_op"]


HEAD = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _sq(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, x * x, mask=mask)


def launch(x):
    y = torch.empty_like(x)
    _sq[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
    return y


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

'''


def model(forward: str, extra: str = "") -> str:
    return HEAD + "    def forward(self, x, y=None):\n" + textwrap.indent(textwrap.dedent(forward), " " * 8) + extra


@pytest.mark.parametrize("forward, task", [
    ("return launch(x).sum(dim=1)", "level1/relu"),  # the reference does not reduce: no epilogue to keep
    ("return launch(x).sum(dim=1)", "level1/sum_reduce"),  # the reduction is the whole task
    ("launch(x)\nreturn x.mean(dim=1)", "level1/mse_loss"),  # a reduction of forward's input is the work
    ("launch(x)\nreturn torch.sum(x, dim=1)", "level1/mse_loss"),  # the same, as a torch function
    ("return launch(x).sum(dim=1)", None),  # unknown task: as before the policy
    ("return torch.exp(launch(x)).sum(dim=1)", "level1/mse_loss"),  # other compute stays compute
])
def test_reduction_that_is_not_an_epilogue_is_flagged(forward, task):
    assert "library_op" in rules(model(forward), "standard", task)


def test_epilogue_reduction_needs_an_own_kernel():
    assert set(rules(model("return x.sum(dim=1)"), "standard", "level1/mse_loss")) == {"library_op", "no_kernel"}


def test_epilogue_reduction_of_the_kernel_result_passes_standard():
    for forward in ("return launch(x).sum(dim=1)", "p = launch(x)\nreturn torch.mean(p, dim=1)"):
        assert rules(model(forward), "standard", "level1/mse_loss") == []
        assert rules(model(forward), "strict", "level1/mse_loss") == ["library_op"]


def test_init_code_of_a_module_built_in_forward_is_on_the_forward_path():
    """nn.init in the __init__ of a module held in self runs at construction (not flagged); a module constructed
    inside forward runs its __init__ there."""
    extra = ("\n\nclass Scaled(nn.Module):\n    def __init__(self, t):\n        super().__init__()\n"
             "        self.w = torch.nn.init.normal_(t)\n\n    def forward(self, t):\n        return launch(t)\n")
    assert "library_op" in rules(model("return Scaled(x)(x)", extra), "standard", "level1/relu")


@pytest.mark.parametrize("init, call", [
    ("self.fn = torch.relu", "self.fn(x)"),
    ("self.ops = {'relu': torch.relu}", "self.ops['relu'](x)"),
])
def test_torch_callables_held_in_attributes_are_not_own_kernels(init, call):
    code = HEAD.replace("        super().__init__()\n", f"        super().__init__()\n        {init}\n") + \
        f"    def forward(self, x):\n        return {call}\n"
    assert "no_kernel" in rules(code, "standard", "level1/relu")
