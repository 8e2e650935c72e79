"""try_except, reference_reuse, monkeypatch, introspection: attacks flagged by name, genuine code passes."""

import textwrap

import pytest

from kernel_gym.checks import run_static_checks

HEAD = '''
import os
import sys
import time
import contextlib
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)
'''


def solution(forward: str = "", module: str = "", bases: str = "nn.Module") -> str:
    fwd = textwrap.indent(textwrap.dedent(forward), " " * 8)
    return (HEAD + textwrap.dedent(module) + f"\n\nclass ModelNew({bases}):\n    def forward(self, x):\n"
            "        y = torch.empty_like(x)\n" + fwd + "\n"
            "        _copy[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)\n        return y\n")


def fired(code, preset="strict", **kw):
    return {v.rule for v in run_static_checks(code, preset, **kw)}


LAUNCH = "_copy[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)"

ATTACKS = {
    "try_except": [
        solution(f"try:\n    {LAUNCH}\nexcept Exception:\n    return torch.relu(x)"),
        solution(f"try:\n    {LAUNCH}\nexcept Exception:\n    return x * x + 1.0"),
        solution(f"try:\n    {LAUNCH}\nexcept RuntimeError as e:\n    print(e)"),
        solution(module="try:\n    from torch.utils.cpp_extension import load_inline\n"
                        "    ext = load_inline(name='e', cpp_sources='', cuda_sources='__global__ void k(){}')\n"
                        "except Exception:\n    ext = None\n"),
        solution(f"with contextlib.suppress(Exception):\n    {LAUNCH}"),
    ],
    "reference_reuse": [
        solution(bases="Model", module="from reference import Model\n"),
        solution("return super().forward(x)", module="class Model(nn.Module):\n    def forward(self, x):\n"
                                                    "        return x\n", bases="Model"),
        solution("ref = Model()\nreturn ref(x)"),
        solution("xs = get_inputs()"),
        solution(module="import __main__\n"),
        solution(module="from task import get_inputs\n"),
        solution(module="class Base(Model):\n    x = 1\n", bases="Base"),
        solution("return self.reference(x)"),
        solution("return Model.forward(self, y)"),
    ],
    "monkeypatch": [
        solution(module="torch.cuda.Event.elapsed_time = lambda self, end: 1e-3\n"),
        solution(module="time.perf_counter = lambda: 0.0\n"),
        solution(module="setattr(torch, 'allclose', lambda *a, **k: True)\n"),
        solution(module="import kernel_gym\n"),
        solution(module="from kernel_gym.harness import timing\n"),
        solution(module="torch.backends.cudnn.benchmark = True\n"),
        solution(module="sys.modules['torch.testing'] = None\n"),
        solution("torch.manual_seed(0)"),
        solution(module="E = torch.cuda.Event\nE.record = lambda self, s=None: None\n"),
        solution(module="class Lazy(torch.Tensor):\n    x = 1\n"),
        solution(module="class Spy:\n    @classmethod\n    def __torch_function__(cls, f, t, a=(), k=None):\n"
                        "        return f(*a)\n"),
        solution(module="lib = torch.library.Library('aten', 'IMPL')\n"),
        solution(module="from unittest import mock\n"),
        solution(module="__builtins__['print'] = None\n"),
        solution(module="del triton.cdiv\n"),
        solution("type(torch.cuda.Event()).elapsed_time = lambda s, e: 1e-3"),
        solution(module="from torch.overrides import TorchFunctionMode\n\n\nclass Lazy(TorchFunctionMode):\n"
                        "    x = 1\n"),
        solution(module="class Box:\n    x = 1\n\n\nBox.__torch_function__ = classmethod(lambda *a: None)\n"),
    ],
    "introspection": [
        solution(module="import gc\n"),
        solution(module="import inspect\n"),
        solution("f = sys._getframe(1)"),
        solution("mods = sys.modules"),
        solution("seed = os.environ.get('SEED')"),
        solution("seed = os.getenv('SEED')"),
        solution("data = open('/tmp/expected.pt', 'rb').read()"),
        solution("m = __import__('gc')"),
        solution("eval('1 + 1')"),
        solution("exec('y = x')"),
        solution("c = compile('1', 'f', 'eval')"),
        solution(module="import threading\n"),
        solution(module="import subprocess\n"),
        solution(module="from multiprocessing import Process\n"),
        solution("os._exit(0)"),
        solution("sys.exit(0)"),
        solution(module="import ctypes\n"),
        solution(module="import signal\n"),
        solution("g = launch.__globals__", module="def launch():\n    return 1\n"),
        solution("g = getattr(x, '__globals__', None)"),
        solution("g = globals()"),
        solution("sys.stdout.write('speedup: 100x')"),
        solution(module="src = '#include <torch/extension.h>\\nconst char* s = getenv(\"SEED\");'\n"),
        solution(module="src = '__global__ void k() {} void f() { exit(0); }'\n"),
        solution(module="src = '#include <dlfcn.h>\\nvoid* p = dlsym(RTLD_NEXT, \"cudaEventElapsedTime\");'\n"),
        solution("raise SystemExit(0)"),
        solution("g = ().__class__.__base__.__subclasses__()"),
    ],
}
CASES = [(rule, i) for rule, codes in ATTACKS.items() for i in range(len(codes))]


@pytest.mark.parametrize("rule,i", CASES, ids=[f"{r}-{i}" for r, i in CASES])
@pytest.mark.parametrize("preset", ["strict", "standard", "permissive"])
def test_attack_flagged(rule, i, preset):
    assert rule in fired(ATTACKS[rule][i], preset)


GENUINE = [
    solution(f"try:\n    {LAUNCH}\nexcept Exception as e:\n    raise RuntimeError('kernel failed') from e"),
    solution(f"try:\n    {LAUNCH}\nexcept Exception:\n    print('kernel failed')\n    raise"),
    solution(f"try:\n    {LAUNCH}\nexcept triton.runtime.errors.OutOfResources:\n"
             "    _copy[(x.numel(),)](x, y, x.numel(), BLOCK=1)"),
    solution(module="try:\n    import triton.language.extra.libdevice as libdevice\nexcept ImportError:\n"
                    "    libdevice = None\n"),
    solution("n = x.shape[0]\ntry:\n    n = int(n)\nexcept (TypeError, ValueError):\n    n = 0"),
    solution("d = os.path.join(os.getcwd(), 'build')\nk = os.cpu_count()\nv = sys.version_info"),
    solution(module="class Helper(nn.Module):\n    def forward(self, t):\n        return t\n\n\n"
                    "class Model(nn.Module):  # a pasted copy of the reference, never used\n"
                    "    def forward(self, t):\n        return t\n\n\ndef get_inputs():\n    return []\n"),
    solution("self.cache = {}\nself.cache['n'] = x.numel()\nsetattr(self, 'last', x.numel())"),
    solution("stream = torch.cuda.current_stream()\ntorch.cuda.synchronize()\nt = time.time()"),
    solution("name = type(self).__name__\nkeys = list(self.__dict__)"),
    solution("y.view(-1)[: x.numel()] = 0.0\nself.calls = getattr(self, 'calls', 0) + 1"),
    solution("if x.numel() == 0:\n    raise ValueError('empty input')"),
]


@pytest.mark.parametrize("i", range(len(GENUINE)))
@pytest.mark.parametrize("preset", ["strict", "standard", "permissive"])
def test_genuine_passes(i, preset):
    assert run_static_checks(GENUINE[i], preset) == []


def test_try_except_message_points_at_handler_and_try():
    (v,) = run_static_checks(ATTACKS["try_except"][0], "permissive")
    assert v.rule == "try_except" and "falls back" in v.message and f"line {v.line - 2}" in v.message


def test_introspection_message_says_which():
    msgs = " ".join(v.message for v in run_static_checks(ATTACKS["introspection"][4], "strict"))
    assert "os.environ" in msgs


def test_backend_flags_also_precision():
    code = solution(module="torch.backends.cuda.matmul.allow_tf32 = True\n")
    assert fired(code) == {"monkeypatch", "precision"}
