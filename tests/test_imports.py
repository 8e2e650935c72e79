"""Every module of the package imports (GPU-only modules included), and `import kernel_gym` stays light."""

import importlib
import pkgutil
import subprocess
import sys

import pytest

import kernel_gym

MODULES = sorted(m.name for m in pkgutil.walk_packages(kernel_gym.__path__, "kernel_gym."))


@pytest.mark.parametrize("name", MODULES)
def test_module_imports(name):
    importlib.import_module(name)


def test_import_touches_neither_torch_nor_cuda():
    code = "import sys, kernel_gym; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False"


def test_core_imports_no_edge_module():
    """The env and the evaluation core pull in nothing from integrations/, service/ or preference/ (the ranker and LLM
    judge load only when an env is configured with one)."""
    code = ("import sys, kernel_gym.env, kernel_gym.eval.evaluator, kernel_gym.judge.pool, kernel_gym.judge.pipeline; "
            "print(sorted(m for m in sys.modules if m.startswith(('kernel_gym.integrations', 'kernel_gym.service', "
            "'kernel_gym.preference'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"
