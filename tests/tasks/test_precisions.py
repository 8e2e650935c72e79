"""Which precisions a task runs at, measured on its reference (kernel_gym/tasks/precisions.py), and the manifest."""

from __future__ import annotations

import pytest

from kernel_gym.errors import ConfigError
from kernel_gym.tasks import load_task
from kernel_gym.tasks.manifest import read_manifest
from kernel_gym.tasks.precision import at_precision, supported
from kernel_gym.tasks.precisions import measure
from kernel_gym.tasks.task import parse_task

# exp of inputs around 12: ~1.6e5, past fp16's largest finite value (65504), fine in bf16 and fp32
OVERFLOWS_IN_FP16 = '''
import torch
import torch.nn as nn

N = 256
KERNEL_GYM = {"cpu": {"N": 256}}

class Model(nn.Module):
    def forward(self, x):
        return torch.exp(x)

def get_inputs():
    return [torch.randn(N) * 0.1 + 12.0]

def get_init_inputs():
    return []
'''


def test_a_reference_that_overflows_at_fp16_does_not_run_at_fp16():
    task = parse_task("custom/exp_large", OVERFLOWS_IN_FP16)
    entry = measure(task)
    assert entry["precisions"] == ["fp32", "bf16"], entry
    assert entry["precision_rel_l2"]["fp16"] is None and entry["precision_rel_l2"]["bf16"] < 1e-2


def test_built_in_tasks_run_at_the_precisions_the_manifest_measured():
    tasks = read_manifest()["tasks"]
    assert all(t.get("precisions", ["fp32"])[0] == "fp32" for t in tasks.values())
    assert tasks["level1/relu"]["precisions"] == ["fp32", "fp16", "bf16"]
    assert tasks["c2cuda/saxpy"]["precisions"] == ["fp32"]
    relu = load_task("level1/relu")
    assert supported(relu) == ("fp32", "fp16", "bf16")
    listed = parse_task("custom/exp", OVERFLOWS_IN_FP16.replace('KERNEL_GYM = {', 'KERNEL_GYM = {"precisions": '
                                                                                  '["fp32", "bf16"], '))
    assert supported(listed) == ("fp32", "bf16")
    with pytest.raises(ConfigError, match="does not run at fp16"):
        at_precision(listed, "fp16")
