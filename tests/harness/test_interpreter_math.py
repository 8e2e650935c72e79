"""libdevice math under Triton's CPU interpreter (kernel_gym/harness/interpreter_math.py): the stubs return None
there, so CPU runners replace them; a GPU process must keep them (its compiler resolves them)."""

from __future__ import annotations

import textwrap

import pytest

TANH = textwrap.dedent('''
    """Triton solution for level1/tanh through libdevice.tanh."""
    import torch
    import torch.nn as nn
    import triton
    import triton.language as tl
    from triton.language.extra import libdevice


    @triton.jit
    def _tanh_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask, other=0.0)
        tl.store(y_ptr + offs, libdevice.tanh(x), mask=mask)


    class ModelNew(nn.Module):
        def forward(self, x):
            x = x.contiguous()
            y = torch.empty_like(x)
            _tanh_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
            return y
''')


def test_nothing_is_replaced_outside_the_interpreter(monkeypatch):
    from kernel_gym.harness import interpreter_math

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    assert interpreter_math.install() == []


def test_every_replacement_names_a_libdevice_stub():
    import triton.language.extra.libdevice as libdevice

    from kernel_gym.harness import interpreter_math

    names = set(interpreter_math.UNARY) | set(interpreter_math.BINARY)
    assert {"exp", "tanh", "erf", "rsqrt", "pow", "atan2"} <= {n for n in names if hasattr(libdevice, n)}


@pytest.mark.timeout(120)
def test_triton_kernel_calling_libdevice_is_correct_on_the_cpu_backend():
    from kernel_gym.eval.job import EvalJob
    from kernel_gym.judge.local import LocalEvaluator

    ev = LocalEvaluator("cpu", workers=1)
    ev.start()
    try:
        result = ev.evaluate(EvalJob(task_id="level1/tanh", code=TANH, backend="triton"))
    finally:
        ev.close()
    assert result.correct and not result.hacks, result.message
