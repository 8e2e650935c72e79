"""benchmarks/task_memory.py's CPU parts: the judged-run sum agrees with memory.py's for the same parts, the task
order, arguments and the report of a saved run (the measurement itself needs a GPU: device_session.sh `memory`)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

from kernel_gym.tasks import list_tasks
from kernel_gym.tasks.memory import MEMORY_BOUND_MIB, Footprint

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def _load():
    if "task_memory" not in sys.modules:
        spec = importlib.util.spec_from_file_location("task_memory", BENCH / "task_memory.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["task_memory"] = module
        spec.loader.exec_module(module)
    return sys.modules["task_memory"]


tm = _load()


def test_judged_sum_is_memory_py_s_with_measured_parts():
    parts = {"params": 300 * 2**20, "inputs": 64 * 2**20, "outputs": 32 * 2**20, "activations": 512 * 2**20,
             "itemsize": 2}
    estimate = Footprint(**parts).peak_mib
    assert tm.judged_mib(parts["params"], parts["inputs"], parts["outputs"], parts["activations"], None, 2) == round(
        estimate, 1)
    measured_oracle = 100 * 2**20  # a float64 pass far smaller than the 4x scale: the measurement counts
    assert tm.judged_mib(parts["params"], parts["inputs"], parts["outputs"], parts["activations"], measured_oracle,
                         2) == round(estimate - 4 * (300 + 64 + 512) + 100, 1)


def test_level3_first_then_the_other_suites():
    ids = tm.ordered_tasks(tm.DEFAULT_SUITES, None)
    assert ids[: len(list_tasks("level3"))] == list_tasks("level3")
    assert sorted(ids) == sorted(list_tasks()) and len(ids) == len(set(ids))
    assert tm.ordered_tasks(["level1"], ["level3/moe_topk_experts"]) == ["level3/moe_topk_experts"]


def test_arguments():
    args = tm.parse_args([])
    assert args.suites == ["level3", "level2", "level1", "c2cuda"] and args.budget_s == 300 and args.out is None
    assert tm.parse_args(["--budget-s", "60", "--only", "level1/relu"]).only == ["level1/relu"]


def test_report_of_a_saved_run(tmp_path, capsys):
    data = {"card": "NVIDIA H100 80GB HBM3", "not_reached": ["level1/relu"], "rows": [
        {"task": "level3/a", "judged_mib": 9000.5, "estimate_mib": 9500.0, "reference_mib": 2000.0,
         "oracle_mib": 4000.0, "reserved_peak_mib": 4200.0, "seconds": 1.5},
        {"task": "level3/b", "judged_mib": MEMORY_BOUND_MIB + 1.0, "estimate_mib": 19000.0, "reference_mib": 5000.0,
         "oracle_mib": None, "reserved_peak_mib": 6000.0, "seconds": 2.0},
        {"task": "c2cuda/x", "error": "oom: CUDA out of memory", "seconds": 0.3}]}
    text = tm.report(data)
    assert "3 tasks measured, 1 over the 20480 MiB bound; not reached within the budget: 1" in text
    assert text.index("level3/b") < text.index("level3/a")  # the largest first
    assert f"| level3/b | {MEMORY_BOUND_MIB + 1.0} **over** | 19000.0 | 5000.0 | no float64 | 6000.0 | 2.0 |" in text
    assert "| c2cuda/x | oom: CUDA out of memory |" in text
    saved = tmp_path / "task_memory.json"
    saved.write_text(json.dumps(data))
    assert tm.main(["--report", str(saved)]) == 0
    assert capsys.readouterr().out == text
