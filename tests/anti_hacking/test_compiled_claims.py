"""`compiled` (a reward input: TritonRL's syntax term) of a CUDA solution on the CPU backend is the judge's call:
the judge compiles the CUDA source itself (kernel_gym/judge/compile_check.py). A runner taken over by its solution
(no static rule at all: the job goes straight to the judge's pool) cannot say "compiled", nor get a source that
does not compile, or that its code does not carry, accepted as compiled. A genuine CUDA solution still compiles."""

from __future__ import annotations

import shutil

import pytest
from ah_helpers import make_job

from kernel_gym.eval.result import Outcome

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (the CPU backend's compile check)")

# The solution raises the runner's own refusal at import, reached through sys.modules (no name a static rule could
# flag is needed: the bypass runs no static rule anyway).
FORGE = '''
import sys
import torch.nn as nn

session = getattr(sys, "modules")["kernel_gym.runner.session"]
{body}

class ModelNew(nn.Module):
    def forward(self, x):
        return x
'''
BROKEN = 'BROKEN = "__global__ void relu_broken(float* x) {{ this does not compile }}"'
COMPILES = 'FINE = "__global__ void relu_fine(float* x) {{ x[threadIdx.x] = 0.0f; }}"'


def forged(body: str) -> str:
    return FORGE.format(body=body)


CLAIMS = {
    "says_compiled": forged('raise session.Refusal("unsupported", "the CUDA sources compile", compiled=True)'),
    "claims_a_broken_source": forged(BROKEN + '\nraise session.Refusal("unsupported", "ok", compile_check='
                                     '{"kind": "nvcc", "source": BROKEN})'),
    "claims_a_source_not_in_its_code": forged(
        'SRC = "__global__ void " + "ke" + "rnel_x(float* x) { x[threadIdx.x] = 0.0f; }"\n'
        'raise session.Refusal("unsupported", "ok", compile_check={"kind": "nvcc", "source": SRC})'),
    "claims_a_broken_nvrtc_source": forged(BROKEN + '\nraise session.Refusal("unsupported", "ok", compile_check='
                                           '{"kind": "nvrtc", "source": BROKEN, "options": []})'),
}


@needs_nvcc
@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", sorted(CLAIMS))
def test_a_runner_cannot_claim_compiled(name, fresh_evaluator):
    result = fresh_evaluator.pool.evaluate(make_job(CLAIMS[name], checks="none"))
    assert not result.compiled, (result.outcome, result.message)
    assert result.outcome in (Outcome.UNSUPPORTED, Outcome.COMPILE_ERROR)


@needs_nvcc
@pytest.mark.timeout(600)
def test_a_compiling_source_the_solution_carries_is_compiled(fresh_evaluator):
    """The documented limit: a taken-over runner can name another source, if it compiles and the code carries it."""
    code = forged(COMPILES + '\nraise session.Refusal("unsupported", "ok", compile_check='
                  '{"kind": "nvcc", "source": FINE})')
    result = fresh_evaluator.pool.evaluate(make_job(code, checks="none"))
    assert result.outcome is Outcome.UNSUPPORTED and result.compiled


@needs_nvcc
@pytest.mark.timeout(600)
@pytest.mark.parametrize("path", ["cuda/level1_relu.py", "cuda_raw/level1_relu.py"])
def test_a_genuine_cuda_solution_compiles_on_cpu(path, fresh_evaluator, repo_root):
    code = (repo_root / "tests" / "solutions" / path).read_text()
    result = fresh_evaluator.pool.evaluate(make_job(code, checks="none"))
    assert result.outcome is Outcome.UNSUPPORTED and result.compiled, result.message
    if path.startswith("cuda/"):  # the judge's own check also gives the kernel's resources
        assert result.signals.get("regs_max", 0) > 0, result.signals
