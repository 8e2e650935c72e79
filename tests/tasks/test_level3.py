"""The level-3 suite (issue #40): whole blocks of current models, bf16-native, sized for a 20 GB memory bound."""

from __future__ import annotations

import json

import pytest
import torch

from kernel_gym.tasks import list_tasks, load_task, split_of, tasks_dir
from kernel_gym.tasks.loading import load_reference
from kernel_gym.tasks.manifest import assign_split, build_manifest
from kernel_gym.tasks.memory import CONTEXT_MIB, L2_FLUSH_MIB, MEMORY_BOUND_MIB, footprint, peak_mib_estimate
from kernel_gym.tasks.precision import at_precision, supported
from kernel_gym.tasks.roofline import FLOPS_PER_S, flop_rate, trace_source

LEVEL3 = list_tasks("level3")
MANIFEST = json.loads((tasks_dir() / "manifest.json").read_text())


def test_the_suite_lists_at_least_30_tasks_split_into_train_and_eval():
    assert len(LEVEL3) >= 30 and all(t.startswith("level3/") for t in LEVEL3)
    splits = {t: split_of(t) for t in LEVEL3}
    assert all(s == assign_split(t) for t, s in splits.items())
    assert set(splits.values()) == {"train", "eval"}
    assert set(list_tasks("level3", split="eval")) == {t for t, s in splits.items() if s == "eval"}


def _run(task_id: str, which: str, seed: int, dtype: torch.dtype) -> torch.Tensor:
    """The reference at its `which` sizes, built after `seed`, model and floating inputs cast to `dtype` (as the
    judge casts them for `precision=`)."""
    task = load_task(task_id)
    module = load_reference(task.source, task.metadata[which])
    torch.manual_seed(seed)
    model = module.Model(*module.get_init_inputs()).to(dtype)
    torch.manual_seed(seed + 1)
    inputs = [x.to(dtype) if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in module.get_inputs()]
    with torch.no_grad():
        return model(*inputs)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("task_id", LEVEL3)
def test_reference_runs_at_cpu_and_alt_sizes_in_fp32_and_bf16(task_id):
    """Finite, deterministic under the seed, dependent on it, the same block at both precisions."""
    assert load_task(task_id).dtype == "bfloat16" and {"fp32", "bf16"} <= set(supported(load_task(task_id)))
    for which in ("cpu", "alt"):
        outs = {}
        for dtype in (torch.float32, torch.bfloat16):
            out = _run(task_id, which, 0, dtype)
            assert out.dtype == dtype and out.numel() > 1, (which, dtype)
            assert torch.isfinite(out).all(), f"{which} {dtype}: non-finite output"
            assert torch.equal(out, _run(task_id, which, 0, dtype)), f"{which} {dtype}: not deterministic"
            assert not torch.equal(out, _run(task_id, which, 3, dtype)), f"{which} {dtype}: ignores the seed"
            outs[dtype] = out.double()
        exact, low = outs[torch.float32], outs[torch.bfloat16]
        assert float((low - exact).norm() / exact.norm()) < 0.05, f"{which}: bf16 far from fp32"


@pytest.mark.parametrize("task_id", LEVEL3)
def test_manifest_entry_records_native_precision_and_peak_memory(task_id):
    entry = MANIFEST["tasks"][task_id]
    assert entry["level"] == 3 and entry["dtype"] == "bfloat16" and entry["native_precision"] == "bf16"
    assert entry["precisions"][0] == "fp32" and "bf16" in entry["precisions"]
    assert entry["peak_mib_source"] == "estimate" and 0 < entry["peak_mib_estimate"] <= MEMORY_BOUND_MIB
    assert entry["baseline_ms_source"] in ("estimate", "measured") and entry["estimate_ms"] > 0.1
    assert set(entry["sizes"]) == {"full", "cpu", "alt", "full_alt"}


@pytest.mark.parametrize("suite", ["level1", "level2"])
def test_level1_and_level2_entries_record_their_peak_memory_estimate_too(suite):
    """Every suite's judged run fits the bound at full size; the manifest says so for levels 1 and 2 as well
    (the same estimate as level 3's, kernel_gym.tasks.memory)."""
    entries = {t: MANIFEST["tasks"][t] for t in list_tasks(suite)}
    assert all(0 < e["peak_mib_estimate"] <= MEMORY_BOUND_MIB for e in entries.values())
    task = load_task(f"{suite}/relu" if suite == "level1" else f"{suite}/gemm_relu")
    assert entries[task.id]["peak_mib_estimate"] == peak_mib_estimate(task.source, task.metadata.get("full_alt"))


def test_the_fp32_variant_is_the_same_task_cast():
    task = load_task("level3/llama_decoder_layer")
    fp32 = at_precision(task, "fp32")
    assert fp32.dtype == "float32" and fp32.metadata["native_dtype"] == "bfloat16"
    assert at_precision(task, None) is task and at_precision(task, "bf16") is task


def test_bf16_tasks_are_estimated_against_the_tensor_core_roof():
    trace = trace_source(load_task("level3/layernorm_gemm_gelu").source)
    assert trace.dtype == "bfloat16" and flop_rate("bfloat16") > 10 * FLOPS_PER_S
    assert flop_rate("float32") == FLOPS_PER_S and trace_source(load_task("level2/gemm_relu").source).dtype == "float32"


def test_peak_memory_counts_every_copy_a_judged_run_holds():
    """level2/gemm_relu at full size: W 64 MiB + b, x 32 MiB, y 32 MiB; the forward's peak is two 32 MiB results."""
    fp = footprint(load_task("level2/gemm_relu").source)
    mib = 2**20
    assert (fp.inputs, fp.outputs, fp.itemsize) == (32 * mib, 32 * mib, 4)
    assert fp.params == 4096 * 4096 * 4 + 4096 * 4 and fp.activations == 64 * mib
    reference = fp.params + fp.inputs + fp.activations
    fixed = (3 * CONTEXT_MIB + L2_FLUSH_MIB) * mib
    assert fp.peak_bytes == reference + (fp.params + fp.activations) + 2 * (fp.inputs + fp.outputs) + 2 * reference \
        + fixed
    task = load_task("level3/kv_cache_decode")
    assert MANIFEST["tasks"][task.id]["peak_mib_estimate"] == peak_mib_estimate(task.source, task.metadata["full_alt"])


def test_rebuilding_one_suite_keeps_every_other_entry_as_it_was():
    previous = json.loads(json.dumps(MANIFEST))
    previous["tasks"]["level1/relu"]["baseline_ms"] = 123.0  # would be rebuilt (and lose it) without `only`
    rebuilt = build_manifest(previous, only=["level3/mixer_block"])
    assert list(rebuilt["tasks"]) == list(MANIFEST["tasks"])
    assert rebuilt["tasks"]["level1/relu"]["baseline_ms"] == 123.0
    assert rebuilt["tasks"]["level3/mixer_block"] == MANIFEST["tasks"]["level3/mixer_block"]


def test_env_resets_with_a_level3_prompt_on_cpu():
    import gymnasium as gym

    import kernel_gym  # noqa: F401 - registers the env

    env = gym.make("KernelRefine-v0", task="level3/moe_topk_experts", device="cpu", max_turns=1)
    try:
        obs, info = env.reset(seed=0)
    finally:
        env.close()
    assert "level3/moe_topk_experts" in obs and "class Model" in obs and "bfloat16" in obs
