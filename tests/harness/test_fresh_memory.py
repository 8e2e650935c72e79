"""harness.integrity.fresh_memory_poisoned: for the ablation trial's call on cuda, every `torch.empty*` is filled (NaN
for floats, the largest value for integers), and the process's settings are put back after (they are part of the
harness snapshot a runner is checked against)."""

from __future__ import annotations

import pytest
import torch

from kernel_gym.harness import integrity


@pytest.fixture
def settings_restored():
    was = (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled(),
           torch.utils.deterministic.fill_uninitialized_memory)
    yield was
    torch.use_deterministic_algorithms(was[0], warn_only=was[1])
    torch.utils.deterministic.fill_uninitialized_memory = was[2]


@pytest.mark.parametrize("before", [(False, False, False), (True, True, True)])
def test_fresh_memory_is_filled_inside_and_the_settings_come_back(settings_restored, before):
    torch.use_deterministic_algorithms(before[0], warn_only=before[1])
    torch.utils.deterministic.fill_uninitialized_memory = before[2]
    flags = integrity.precision_flags()
    with integrity.fresh_memory_poisoned("cuda"):  # (the settings are torch's, whatever the device: cpu tensors here)
        assert torch.empty(64).isnan().all()
        assert (torch.empty(8, dtype=torch.int32) == torch.iinfo(torch.int32).max).all()
    assert integrity.precision_flags() == flags


def test_on_cpu_it_changes_nothing(settings_restored):
    torch.use_deterministic_algorithms(False)
    torch.utils.deterministic.fill_uninitialized_memory = False
    with integrity.fresh_memory_poisoned("cpu"):  # (cpu runners have it on all the time: pin_precision)
        assert not torch.are_deterministic_algorithms_enabled()
