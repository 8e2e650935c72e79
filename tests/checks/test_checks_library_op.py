"""library_op and no_kernel: attacks are flagged, genuine forward-path code is not; strict vs standard."""

import textwrap

import pytest

from kernel_gym.checks import run_static_checks

HEAD = '''
import math
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def _copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


def launch(x):
    y = torch.empty_like(x)
    _copy[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
    return y
'''


def solution(forward: str, init: str = "self.k = 1", extra: str = "") -> str:
    return (HEAD + textwrap.dedent(extra) + "\n\nclass ModelNew(nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n" + textwrap.indent(textwrap.dedent(init), " " * 8) + "\n\n"
            "    def forward(self, x, w=None):\n" + textwrap.indent(textwrap.dedent(forward), " " * 8) + "\n")


def rules(code, preset="strict", **kw):
    return [v.rule for v in run_static_checks(code, preset, **kw)]


ATTACKS = {  # name: (forward, init, extra), flagged by library_op under strict AND standard
    "torch_fn": ("return torch.relu(launch(x))", "self.k = 1", ""),
    "functional": ("return F.gelu(launch(x))", "self.k = 1", ""),
    "tensor_method": ("return launch(x).sum(dim=1)", "self.k = 1", ""),
    "decoy_kernel": ("launch(x)\nreturn torch.sigmoid(x)", "self.k = 1", ""),
    "act_module": ("return self.act(launch(x))", "self.act = nn.ReLU()", ""),
    "helper_fn": ("return helper(launch(x))", "self.k = 1", "def helper(t):\n    return t.exp()\n"),
    "value_ref": ("op = torch.tanh\nreturn op(launch(x))", "self.k = 1", ""),
    "compile": ("return self.fn(launch(x))", "self.fn = torch.compile(lambda t: t * 2)", ""),
    "getattr": ("return getattr(torch, 'relu')(launch(x))", "self.k = 1", ""),
    "sequential": ("for layer in self.net:\n    x = layer(x)\nreturn launch(x)",
                   "self.net = nn.Sequential(nn.Linear(4, 4), nn.ReLU())", ""),
    "aten": ("return torch.ops.aten.relu(launch(x))", "self.k = 1", ""),
    "numpy": ("return torch.from_numpy(launch(x).cpu().numpy())", "self.k = 1", ""),
    "own_block": ("return self.block(launch(x))", "self.block = Block()",
                  "class Block(nn.Module):\n    def forward(self, t):\n        return torch.relu(t)\n"),
    "autograd_fn": ("return Fn.apply(launch(x))", "self.k = 1",
                    "class Fn(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, t):\n"
                    "        return t.clamp(min=0)\n"),
    "method_helper": ("return self._post(launch(x))", "self.k = 1", ""),
    "third_party": ("return launch(x)", "self.k = 1", "import flash_attn  # noqa\n"),
    "inplace": ("y = launch(x)\ny.mul_(2.0)\nreturn y", "self.k = 1", ""),
    "modules_dict": ("return launch(self._modules['lin'](x))", "self.lin = nn.Linear(4, 4)", ""),
    "getattr_self": ("return launch(getattr(self, 'lin')(x))", "self.lin = nn.Linear(4, 4)", ""),
    "children": ("for m in self.children():\n    x = m(x)\nreturn launch(x)", "self.act = nn.ReLU()", ""),
    "alias_module": ("lin = self.lin\nreturn launch(lin(x))", "self.lin = nn.Sigmoid()", ""),
    "forward_alias": ("return launch(x)", "self.k = 1", ""),
}


@pytest.mark.parametrize("name", ATTACKS)
@pytest.mark.parametrize("preset", ["strict", "standard", "kevin-strict"])
def test_library_op_attack_flagged(name, preset):
    forward, init, extra = ATTACKS[name]
    code = solution(forward, init, extra)
    if name == "method_helper":
        code += "\n    def _post(self, t):\n        return torch.softmax(t, -1)\n"
    if name == "forward_alias":  # forward replaced by a class attribute
        code += "\n    forward = staticmethod(torch.relu)\n"
    assert "library_op" in rules(code, preset)


def test_library_op_off_in_permissive():
    for forward, init, extra in ATTACKS.values():
        assert "library_op" not in rules(solution(forward, init, extra), "permissive")


GEMMS = {  # heavy GEMM/conv: flagged in strict, allowed in standard when an own kernel runs
    "matmul": ("return launch(torch.matmul(x, w))", "self.k = 1"),
    "matmul_op": ("return launch(x @ w)", "self.k = 1"),
    "f_linear": ("return launch(F.linear(x, self.lin.weight, self.lin.bias))", "self.lin = nn.Linear(4, 4)"),
    "linear_module": ("return launch(self.lin(x))", "self.lin = nn.Linear(4, 4)"),
    "conv_module": ("return launch(self.conv(x))", "self.conv = nn.Conv2d(3, 8, 3)"),
    "conv_forward": ("return launch(self.conv.forward(x))", "self.conv = nn.Conv2d(3, 8, 3)"),
    "bmm_method": ("return launch(x.bmm(w))", "self.k = 1"),
    "addmm": ("return launch(torch.addmm(self.b, x, w))", "self.b = nn.Parameter(torch.zeros(4))"),
}


@pytest.mark.parametrize("name", GEMMS)
def test_gemm_with_own_epilogue_passes_standard_fails_strict(name):
    forward, init = GEMMS[name]
    code = solution(forward, init)
    assert rules(code, "standard") == []
    assert rules(code, "strict") == ["library_op"]


def test_gemm_without_own_kernel_fails_standard():
    code = solution("return torch.matmul(x, w)").replace("_copy[(", "_unused[(")
    got = run_static_checks(code, "standard")
    assert {v.rule for v in got} == {"library_op", "no_kernel"}
    assert any("no kernel of yours" in v.message for v in got)


def test_standard_still_flags_non_gemm_next_to_gemm():
    code = solution("return torch.relu(launch(x @ w))")
    assert rules(code, "standard") == ["library_op"]


def test_message_names_helper_and_forward():
    (v,) = run_static_checks(solution(*ATTACKS["helper_fn"]), "strict")
    assert "t.exp" in v.message and "helper (reached from ModelNew.forward)" in v.message


GENUINE_FORWARD = '''
assert x.is_contiguous(), "contiguous input expected"
assert x.dtype == torch.float32 and x.dim() >= 1
B = x.shape[0] * 2 + x.size(-1) // 4
n = max(1, int(math.ceil(x.numel() / 1024)))
shape = tuple(x.shape)
stream = torch.cuda.current_stream() if torch.cuda.is_available() else None
out = torch.empty(shape, dtype=x.dtype, device=x.device)
out.zero_()
tmp = x.new_empty(x.shape).view(-1).contiguous()
buf = torch.zeros(B, device=x.device).to(x.device)
parts = [getattr(self, "_cache", None), getattr(tl, str(x.dtype).split(".")[-1])]
parts.append(out.stride(0))
wt = self.lin.weight.t().contiguous().float()
grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)
_copy[grid](x.view(-1), tmp, x.numel(), BLOCK=1024)
_copy.run(x, tmp, n, BLOCK=1024, grid=(n,), warmup=False)
with torch.no_grad():
    res = launch(tmp.reshape(shape).unsqueeze(0).squeeze(0).permute(*range(x.dim())))
return res if len(parts) else buf[:0].expand(0) + wt[0, 0].item()
'''


@pytest.mark.parametrize("preset", ["strict", "standard", "permissive"])
def test_genuine_forward_idioms_pass(preset):
    assert rules(solution(GENUINE_FORWARD, "self.lin = nn.Linear(4, 4)"), preset) == []


def test_init_may_use_torch_freely():
    init = "self.lin = nn.Linear(4, 4)\nwith torch.no_grad():\n    self.w = nn.Parameter(torch.randn(4, 4).relu())"
    assert rules(solution("return launch(x)", init), "strict") == []


CUDA = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

src = """
#include <torch/extension.h>
__global__ void k(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i]; }
torch::Tensor run(torch::Tensor x, torch::Tensor w) {
    auto y = torch::empty_like(x);
    k<<<(x.numel() + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), x.numel());
    BODY
    return y;
}
"""
ext = load_inline(name="e", cpp_sources="torch::Tensor run(torch::Tensor x, torch::Tensor w);",
                  cuda_sources=src, functions=["run"])


class ModelNew(nn.Module):
    def forward(self, x, w):
        return ext.run(x, w)
'''


@pytest.mark.parametrize("body,strict,standard", [
    ("y = torch::matmul(y, w);", ["library_op"], []),
    ("cublasSgemm(handle, a, b);", ["library_op"], []),
    ("y = at::relu(y);", ["library_op"], ["library_op"]),
    ("y = y.sum(1);", ["library_op"], ["library_op"]),
    ("y = torch::zeros_like(y); // torch::matmul(y, w) in a comment is fine", [], []),
    ("using namespace torch;\n    y = matmul(y, w); float e = exp(1.0f);", ["library_op"], []),
    ("namespace G = torch::nn::functional;\n    y = G::relu(y);", ["library_op"], ["library_op"]),
    ("TORCH_CHECK(x.is_contiguous(), \"torch::relu(x) would be slower\");", [], []),
])
def test_cpp_library_calls(body, strict, standard):
    code = CUDA.replace("BODY", body)
    assert rules(code, "strict") == strict
    assert rules(code, "standard") == standard


def test_compute_on_extension_output_is_flagged():
    code = CUDA.replace("BODY", "").replace("return ext.run(x, w)", "return ext.run(x, w).sum(1)")
    assert rules(code, "strict") == ["library_op"]


def test_cpp_without_global_kernel_is_no_kernel():
    code = CUDA.replace("__global__ void k", "void k").replace("k<<<(x.numel() + 255) / 256, 256>>>", "k")
    assert rules(code.replace("BODY", "y = at::relu(x);"), "permissive") == ["no_kernel"]


NO_KERNEL = {
    "pure_torch": "import torch\nimport torch.nn as nn\nclass ModelNew(nn.Module):\n"
                  "    def forward(self, x):\n        return torch.relu(x)\n",
    "defined_not_launched": solution("return torch.relu(x)"),
    "launched_in_init_only": solution("return x", init="launch(torch.ones(4))"),
    "no_modelnew": HEAD,
}


@pytest.mark.parametrize("name", NO_KERNEL)
@pytest.mark.parametrize("preset", ["strict", "kevin-strict", "standard", "permissive"])
def test_no_kernel(name, preset):
    assert "no_kernel" in rules(NO_KERNEL[name], preset)


def test_no_kernel_message_mentions_unlaunched_kernel():
    msgs = [v.message for v in run_static_checks(NO_KERNEL["defined_not_launched"], "permissive")]
    assert msgs and "_copy" in msgs[0] and "never launched" in msgs[0]


def test_kernel_made_with_triton_jit_call_counts():
    code = '''
import torch, torch.nn as nn, triton, triton.language as tl

def _body(x_ptr, y_ptr, n, B: tl.constexpr):
    o = tl.program_id(0) * B + tl.arange(0, B)
    tl.store(y_ptr + o, tl.load(x_ptr + o, mask=o < n), mask=o < n)

kern = triton.autotune(configs=[triton.Config({"B": 256})], key=["n"])(triton.jit(_body))
KERNELS = {"copy": kern}

class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        KERNELS["copy"][lambda m: (triton.cdiv(x.numel(), m["B"]),)](x, y, x.numel())
        return y
'''
    assert run_static_checks(code, "strict") == []
