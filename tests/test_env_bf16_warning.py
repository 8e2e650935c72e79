"""The CPU backend's bf16 warning (kernel_gym.device.CPU_BF16): Triton's interpreter computes bf16 on raw bits, so
a bf16 job on cpu is warned about whether bf16 is asked for (precision="bf16", at make) or is the task's own (every
level-3 task, at the first reset that draws one); an fp32 job is not."""

from __future__ import annotations

import warnings

import gymnasium as gym

import kernel_gym  # noqa: F401 - registers the env
from kernel_gym.device import CPU_BF16
from kernel_gym.tasks import load_task
from kernel_gym.tasks.precision import native_bf16_on_cpu


def _said(fn) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [str(w.message) for w in caught if issubclass(w.category, UserWarning) and CPU_BF16 in str(w.message)]


def test_a_natively_bf16_task_is_warned_about_once_at_reset():
    env = gym.make("KernelRefine-v0", task="level1/relu", device="cpu", max_turns=1)
    try:
        assert _said(lambda: env.reset(seed=0)) == []  # fp32
        said = _said(lambda: env.reset(seed=0, options={"task": "level3/mixer_block"}))
        assert len(said) == 1 and "level3/mixer_block is bf16 natively" in said[0] and "precision='fp32'" in said[0]
        assert _said(lambda: env.reset(seed=0, options={"task": "level3/retention"})) == []  # once per env
    finally:
        env.close()


def test_no_warning_for_the_fp32_variant_and_the_explicit_bf16_one_at_make():
    env = gym.make("KernelRefine-v0", task="level3/mixer_block", device="cpu", max_turns=1, precision="fp32")
    try:
        assert _said(lambda: env.reset(seed=0)) == []
    finally:
        env.close()
    made = []
    said = _said(lambda: made.append(gym.make("KernelRefine-v0", task="level1/relu", device="cpu", precision="bf16")))
    made[0].close()
    assert len(said) == 1 and said[0].startswith("precision='bf16' on cpu")


def test_the_note_is_for_bf16_tasks_only():
    assert native_bf16_on_cpu(load_task("level1/relu")) is None
    assert CPU_BF16 in native_bf16_on_cpu(load_task("level3/kv_cache_decode"))
