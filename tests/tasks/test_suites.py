"""The built-in suites: sizes, file conventions, the manifest, the train/eval split, and the roofline model."""

import ast
import json

import pytest

from kernel_gym.errors import ConfigError
from kernel_gym.tasks import list_tasks, load_task, split_of, tasks_dir
from kernel_gym.tasks.manifest import assign_split, source_digest, task_entry
from kernel_gym.tasks.roofline import BANDWIDTH_BYTES_PER_S, LAUNCH_S, trace_source
from kernel_gym.tasks.validate import validate_source

ALL_TASKS = list_tasks()
MANIFEST = json.loads((tasks_dir() / "manifest.json").read_text())


def test_each_level_has_at_least_40_tasks():
    assert len(list_tasks("level1")) >= 40
    assert len(list_tasks("level2")) >= 40


@pytest.mark.parametrize("task_id", ALL_TASKS)
def test_file_follows_the_suite_conventions(task_id):
    task = load_task(task_id)
    tree = ast.parse(task.source)
    assert ast.get_docstring(tree), "module docstring (the task description)"
    assert set(task.metadata) >= {"cpu", "alt", "full_alt", "dtype"}
    for which in ("cpu", "alt", "full_alt"):
        assert set(task.metadata[which]) <= set(task.size_globals), f"{which} names a non-global"
        assert task.metadata[which] != {k: task.size_globals[k] for k in task.metadata[which]}
    assert task.metadata["cpu"] != task.metadata["alt"]
    get_inputs = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "get_inputs")
    calls = [n for n in ast.walk(get_inputs) if isinstance(n, ast.Call)]
    assert not any(kw.arg == "device" for c in calls for kw in c.keywords), "inputs are made on the CPU"
    makers = {c.func.attr for c in calls if isinstance(c.func, ast.Attribute)}
    assert makers & {"randn", "rand"}


def test_level2_tasks_fuse_a_main_op_with_two_or_more_others():
    for task_id in list_tasks("level2"):
        assert len(MANIFEST["tasks"][task_id]["ops"]) >= 3, task_id


def test_manifest_matches_the_task_files():
    """Rebuild with `python -m kernel_gym.tasks.manifest` after changing a task."""
    assert list(MANIFEST["tasks"]) == ALL_TASKS
    for task_id, entry in MANIFEST["tasks"].items():
        task = load_task(task_id)
        assert entry["source_sha256"] == source_digest(task.source), f"{task_id}: manifest is stale"
        assert entry["level"] == task.level and entry["dtype"] == task.dtype
        assert entry["sizes"]["full"] == task.size_globals and entry["sizes"]["cpu"] == task.metadata["cpu"]
        assert entry["split"] == assign_split(task_id)
        assert entry["baseline_ms_source"] in ("estimate", "measured")
        assert entry["estimate_ms"] > 0.1, f"{task_id}: too cheap for the GPU"
        assert entry["input_mib"] < 1024, f"{task_id}: inputs over 1 GiB"


def test_manifest_entry_is_reproducible():
    task = load_task("level2/gemm_relu")
    fresh = task_entry(task.id, task.source, task.level, task.metadata, task.size_globals)
    stored = MANIFEST["tasks"]["level2/gemm_relu"]
    assert {k: v for k, v in fresh.items() if not k.startswith("baseline")} == {
        k: stored[k] for k in fresh if not k.startswith("baseline")
    }


def test_split_partitions_the_suites():
    train, evaluation = list_tasks(split="train"), list_tasks(split="eval")
    assert set(train) | set(evaluation) == set(ALL_TASKS) and not set(train) & set(evaluation)
    assert 0.1 < len(evaluation) / len(ALL_TASKS) < 0.3
    for suite in ("level1", "level2", "level3"):
        assert list_tasks(suite, split="eval") and set(list_tasks(suite, split="eval")) <= set(evaluation)
    assert split_of("level1/relu") in ("train", "eval") and split_of("no/such") is None
    assert assign_split("level1/relu") == assign_split("level1/relu")
    with pytest.raises(ConfigError):
        list_tasks(split="test")


def test_roofline_counts_bytes_and_flops():
    relu = trace_source(load_task("level1/relu").source)
    n = 8192 * 16384
    assert relu.signature == ("relu",) and relu.bytes == 2 * 4 * n and relu.flops == 0
    assert relu.estimate_ms == pytest.approx((2 * 4 * n / BANDWIDTH_BYTES_PER_S + LAUNCH_S) * 1e3)
    gemm = trace_source(load_task("level2/gemm_relu").source)
    assert gemm.signature == ("addmm", "relu", "mul")
    assert gemm.flops == 2 * 2048 * 4096 * 4096
    small = trace_source(load_task("level2/gemm_relu").source, {"batch_size": 8})
    assert small.flops == 2 * 8 * 4096 * 4096


def test_roofline_reads_the_gpu_peaks_of_the_signals_hardware_spec():
    """One source of truth for peaks (kernel_gym.signals.hardware); the manifest's model (and so every estimate_ms)
    stays 4.3 TB/s and 50 TFLOP/s."""
    from kernel_gym.signals.hardware import H200
    from kernel_gym.tasks.roofline import FLOPS_PER_S, MODEL, SGEMM_FRACTION, SPEC

    assert SPEC is H200 and BANDWIDTH_BYTES_PER_S == H200.bandwidth
    assert FLOPS_PER_S == H200.peak_flops("float32") * SGEMM_FRACTION
    assert MODEL == MANIFEST["roofline"] and (BANDWIDTH_BYTES_PER_S, FLOPS_PER_S) == (4.3e12, 5.0e13)


@pytest.mark.parametrize("task_id", [t for t in ALL_TASKS if not t.startswith("c2cuda/")])
def test_generator_validator_accepts_every_suite_task(task_id):
    """(C tasks may have integer or scalar outputs: tests/tasks/test_c2cuda.py checks them.) Deterministic (also across forwards), finite, non-constant, uses every input, > 0.1 ms estimated."""
    verdict = validate_source(load_task(task_id).source)
    assert verdict.ok, (verdict.reason, verdict.detail)


def test_rebuilding_the_manifest_keeps_measured_baselines_of_unchanged_tasks():
    from kernel_gym.tasks.manifest import build_manifest

    previous = json.loads(json.dumps(MANIFEST))
    previous["tasks"]["level1/relu"].update(baseline_ms=0.3, baseline_ms_source="measured", measured_on="H200")
    previous["tasks"]["level1/tanh"].update(baseline_ms=0.3, baseline_ms_source="measured", source_sha256="stale")
    rebuilt = build_manifest(previous)["tasks"]
    assert rebuilt["level1/relu"]["baseline_ms"] == 0.3 and rebuilt["level1/relu"]["measured_on"] == "H200"
    assert rebuilt["level1/tanh"]["baseline_ms_source"] == "estimate", "a changed task loses its old measurement"
    assert rebuilt["level1/relu"]["precisions"] == MANIFEST["tasks"]["level1/relu"]["precisions"]  # measured, kept
    assert "precisions" not in rebuilt["level1/tanh"]
