"""precision, kevin_text and side_stream."""

import textwrap

import pytest

from kernel_gym.checks import run_static_checks

HEAD = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl
'''
KERNEL = '''
@triton.jit
def _k(x_ptr, y_ptr, n, OUT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    KBODY
    tl.store(y_ptr + offs, x, mask=mask)
'''


def solution(forward: str = "", kbody: str = "x = x * 2.0", module: str = "", out: str = "tl.float32") -> str:
    fwd = textwrap.indent(textwrap.dedent(forward), " " * 8)
    return (HEAD + textwrap.dedent(module) + KERNEL.replace("KBODY", kbody)
            + "\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        y = torch.empty_like(x)\n"
            + fwd + f"\n        _k[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), OUT={out}, BLOCK=1024)\n"
            "        return y\n")


def fired(code, preset="strict", **kw):
    return {v.rule for v in run_static_checks(code, preset, **kw)}


CUDA_HALF = '''
src = """
#include <cuda_fp16.h>
__global__ void k(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { __half h = __float2half(x[i]); y[i] = __half2float(__hmul(h, h)); }
}
"""
'''
PRECISION_ATTACKS = [
    solution("x = x.half()"),
    solution("x = x.bfloat16()"),
    solution("x = x.to(torch.float16)"),
    solution("y = torch.empty_like(x, dtype=torch.bfloat16)"),
    solution(kbody="x = x.to(tl.float16)"),
    solution(kbody="x = tl.dot(x, x, input_precision='tf32')"),
    solution(kbody="x = tl.dot(x, x, allow_tf32=True)"),
    solution(out="tl.bfloat16"),
    solution(module="torch.set_float32_matmul_precision('high')\n"),
    solution(module="torch.backends.cudnn.allow_tf32 = True\n"),
    solution("with torch.autocast('cuda'):\n    y = y.view(-1).view(x.shape)"),
    solution("prec = 'tf32x3'"),
    solution("if x.dtype != torch.float16:\n    x = x.to(torch.float16)"),
    solution(module=CUDA_HALF),
    solution(module='src = "__global__ void k(half2* p) {}"\n'),
    solution(module='src = "cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH); __global__ void k(){}"\n'),
    solution(kbody="x = x.to(tl.float8e4nv)"),
    solution(module='src = r"""__global__ void m(float* d) { asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 '
                    '{%0}, {%1};" : "=f"(d[0]) : "f"(d[1])); }"""\n'),
    solution("x = x.half() if torch.float16 != torch.float32 else x"),
    solution("x = x.to(torch.float16) if torch.float16 == torch.float16 else x"),
    solution("if x.dtype == torch.float16 or x.numel() > 0:\n    x = x.to(torch.float16)"),
    solution("if x.dtype != torch.float16 and x.numel() > 0:\n    y = y\nelse:\n    x = x.to(torch.float16)"),
    solution("ok = (x.to(torch.float16) > 0)\nx = x.to(torch.bfloat16) if ok.all() else x"),
]


@pytest.mark.parametrize("i", range(len(PRECISION_ATTACKS)))
@pytest.mark.parametrize("preset", ["strict", "standard", "permissive"])
def test_precision_attack_flagged(i, preset):
    assert "precision" in fired(PRECISION_ATTACKS[i], preset)


@pytest.mark.parametrize("i", range(len(PRECISION_ATTACKS)))
def test_precision_off_for_half_tasks_or_when_allowed(i):
    assert "precision" not in fired(PRECISION_ATTACKS[i], task_dtype="float16")
    assert "precision" not in fired(PRECISION_ATTACKS[i], allow_precision=True)


PRECISION_GENUINE = [
    solution("assert x.dtype != torch.half and x.dtype not in (torch.float16, torch.bfloat16)"),
    solution(module="TL = {torch.float16: tl.float16, torch.bfloat16: tl.bfloat16, torch.float32: tl.float32}\n",
             out="TL[x.dtype]"),
    solution(module="def tl_dtype(t):\n    if t == torch.float16:\n        return tl.float16\n"
                    "    elif t == torch.bfloat16:\n        return tl.bfloat16\n    return tl.float32\n",
             out="tl_dtype(x.dtype)"),
    solution("o = tl.float16 if x.dtype == torch.float16 else tl.float32"),
    solution(kbody="x = tl.dot(x, x, input_precision='ieee')"),
    solution(kbody="x = x.to(tl.float32) + x.to(y_ptr.dtype.element_ty)"),
    solution(module="torch.set_float32_matmul_precision('highest')\n"),
    solution(module="SUPPORTED = (torch.float32, torch.float16)\n"),
    solution(module='src = "__global__ void k(float* x, int n) { for (int half = n / 2; half > 0; half >>= 1) '
                    '{ x[0] += x[half]; } }"\n'),
    solution("o = tl.float32 if x.dtype == torch.float32 else tl.float16"),
    solution("if x.dtype != torch.float32:\n    x = x.half()"),
    solution("if x.dtype == torch.float32:\n    o = tl.float32\nelif x.dtype == torch.bfloat16:\n    o = tl.bfloat16\n"
             "else:\n    o = tl.float16"),
    solution(module='src = "__global__ void k(float* p) {} // no __half here\\n'
                    'AT_DISPATCH_FLOATING_TYPES_AND_HALF(t, \\"k\\", [&]{});"\n'),
]


@pytest.mark.parametrize("i", range(len(PRECISION_GENUINE)))
def test_precision_genuine_passes(i):
    assert run_static_checks(PRECISION_GENUINE[i], "strict") == []


KEVIN = [
    solution(module="def unused():\n    pass\n"),
    solution("try:\n    n = int(x.numel())\nexcept Exception:\n    raise"),
    solution(module="import torch.nn.functional as F\n"),
    solution(module="from torch.nn.functional import relu  # noqa\n"),
    solution(module="def unused(t):\n    return torch.nn.functional.relu(t)\n"),
]


@pytest.mark.parametrize("i", range(len(KEVIN)))
def test_kevin_text_only_in_kevin_strict(i):
    assert "kevin_text" in fired(KEVIN[i], "kevin-strict")
    for preset in ("strict", "standard", "permissive"):
        assert "kevin_text" not in fired(KEVIN[i], preset)


def test_kevin_text_ignores_words_in_comments_and_strings():
    code = solution("note = 'pass the pointer; try it; torch.nn.functional is banned'  # pass, try, except")
    assert run_static_checks(code, "kevin-strict") == []


SIDE_STREAM = [
    solution("s = torch.cuda.Stream()\nwith torch.cuda.stream(s):\n    y.zero_()"),
    solution("torch.cuda.set_stream(torch.cuda.Stream())"),
    solution(module='src = "__global__ void k(){} void f(){ cudaStream_t s; cudaStreamCreate(&s); k<<<1,1,0,s>>>(); }"\n'),
    solution(module='src = "__global__ void k(){} void f(){ auto s = at::cuda::getStreamFromPool(); }"\n'),
    solution(module='src = "#include <thread>\\n__global__ void k(){} void f(){ std::thread t([]{}); t.detach(); }"\n'),
]


@pytest.mark.parametrize("i", range(len(SIDE_STREAM)))
@pytest.mark.parametrize("preset", ["strict", "standard", "permissive"])
def test_side_stream_flagged(i, preset):
    assert "side_stream" in fired(SIDE_STREAM[i], preset)


def test_current_stream_is_fine():
    code = solution("s = torch.cuda.current_stream()\nh = s.cuda_stream",
                    module='src = "__global__ void k(){} void f(){ k<<<1,1,0,at::cuda::getCurrentCUDAStream()>>>(); }"\n')
    assert run_static_checks(code, "strict") == []
