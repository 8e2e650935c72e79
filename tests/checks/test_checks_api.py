"""The public API of kernel_gym.checks."""

import dataclasses

import pytest

from kernel_gym import checks
from kernel_gym.checks import Violation, list_presets, list_rules, run_static_checks
from kernel_gym.errors import UnknownNameError, UnknownPresetError

GOOD = '''
import torch, torch.nn as nn, triton, triton.language as tl

@triton.jit
def k(x_ptr, y_ptr, n, B: tl.constexpr):
    o = tl.program_id(0) * B + tl.arange(0, B)
    tl.store(y_ptr + o, tl.load(x_ptr + o, mask=o < n), mask=o < n)

class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        k[(triton.cdiv(x.numel(), 256),)](x, y, x.numel(), B=256)
        return y
'''


def test_rules_and_presets_listed():
    assert set(list_rules()) >= {"library_op", "no_kernel", "try_except", "reference_reuse", "monkeypatch",
                                 "introspection", "precision", "kevin_text", "side_stream"}
    assert list_presets() == ["strict", "kevin-strict", "standard", "permissive", "none"]


def test_every_rule_has_a_docstring_and_snake_case_name():
    for name, fn in checks.RULES.items():
        assert name.isidentifier() and name == name.lower()
        assert fn.__doc__ and len(fn.__doc__.split()) > 10, name


def test_presets_name_registered_rules():
    for p in checks.PRESETS.values():
        assert set(p.rules) <= set(list_rules())
    assert "kevin_text" in checks.PRESETS["kevin-strict"].rules
    assert "kevin_text" not in checks.PRESETS["strict"].rules
    assert "library_op" not in checks.PRESETS["permissive"].rules
    assert "no_kernel" in checks.PRESETS["permissive"].rules


def test_violation_is_frozen_dataclass():
    v = Violation("library_op", "line 3: x", 3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        v.rule = "other"


def test_unknown_preset_raises_with_hint():
    with pytest.raises(UnknownPresetError) as e:
        run_static_checks(GOOD, "strickt")
    assert isinstance(e.value, UnknownNameError) and isinstance(e.value, KeyError)
    assert "strict" in str(e.value)


def test_clean_code_gives_empty_list_for_every_preset():
    for p in list_presets():
        assert run_static_checks(GOOD, p) == []


def test_default_preset_is_standard():
    code = GOOD.replace("return y", "return y + torch.relu(x)")
    assert [v.rule for v in run_static_checks(code)] == ["library_op"]


def test_messages_name_line_and_call():
    code = GOOD.replace("return y", "return torch.sigmoid(y)")
    (v,) = run_static_checks(code, "strict")
    assert v.rule == "library_op" and v.line == 13
    assert v.message.startswith("line 13:") and "torch.sigmoid" in v.message and "kernel" in v.message


def test_syntax_error_yields_nothing():
    assert run_static_checks("def broken(:\n", "strict") == []


ONE_ATTACK_PER_RULE = {
    "library_op": ("strict", GOOD.replace("return y", "return y.exp()")),
    "no_kernel": ("permissive", GOOD.replace("k[(triton.cdiv(x.numel(), 256),)](x, y, x.numel(), B=256)", "y.copy_(x)")),
    "try_except": ("permissive", GOOD.replace("        k[(", "        try:\n            k[(").replace(
        "B=256)\n", "B=256)\n        except Exception:\n            y = x.clone()\n")),
    "reference_reuse": ("permissive", GOOD.replace("ModelNew(nn.Module)", "ModelNew(Model)")),
    "monkeypatch": ("permissive", GOOD + "\ntorch.cuda.Event.elapsed_time = lambda self, end: 1e-3\n"),
    "introspection": ("permissive", "import gc\n" + GOOD),
    "precision": ("permissive", GOOD.replace("return y", "return y.half()")),
    "kevin_text": ("kevin-strict", GOOD + "\ndef unused():\n    pass\n"),
    "side_stream": ("permissive", GOOD.replace("y = torch.empty_like(x)", "s = torch.cuda.Stream()\n        y = torch.empty_like(x)")),
}


def test_every_rule_has_an_attack_flagged_by_exactly_that_name():
    assert set(ONE_ATTACK_PER_RULE) == set(list_rules())
    for name, (preset, code) in ONE_ATTACK_PER_RULE.items():
        assert name in {v.rule for v in run_static_checks(code, preset)}, name
