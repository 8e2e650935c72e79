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
