"""Issue 37 on a GPU: the error budget against the float64 oracle, at full sizes on cuda.

- the project's genuine solutions (tests/solutions/level*.py) are correct with the oracle, their candidate/reference
  error ratios within k, and the oracle's cost is in the correctness stage (`stage_ms["oracle"]`), never in timing;
- the bf16 round trip on outputs of ~1e-5 is rejected, the honest blocked reordering accepted (oracle_cases/);
- every task of tasks/level1 and tasks/level2 at full size, in this process on the GPU: bf16 and fp16 round trips
  of input and result are outside the budget, the fp32 reference inside it; with each task's float64 cost.

Run with `pytest -m gpu tests/judge/test_gpu_oracle.py`; KG_GPU_ORACLE_JSON=path keeps the numbers for
benchmarks/RESULTS.md ("Error budget": oracle cost per task, error ratios of the genuine solutions).
"""

from __future__ import annotations

import json
import os
import pathlib
import time

import pytest
import torch

from kernel_gym.judge.error_budget import DEFAULT_K, FLOOR, budget_for
from kernel_gym.judge.oracle import to_float64

pytestmark = pytest.mark.gpu

ROOT = pathlib.Path(__file__).resolve().parents[2]
CASES = pathlib.Path(__file__).resolve().parent / "oracle_cases"
SOLUTIONS = sorted((ROOT / "tests" / "solutions").glob("level*.py"))
NUMBERS: dict[str, dict] = {}


@pytest.fixture(scope="module")
def cuda_pool():
    from kernel_gym.judge.pool import WorkerPool

    pool = WorkerPool("cuda")
    pool.warm_up()
    yield pool
    pool.close()
    if os.environ.get("KG_GPU_ORACLE_JSON"):
        pathlib.Path(os.environ["KG_GPU_ORACLE_JSON"]).write_text(json.dumps(NUMBERS, indent=1))


def _job(code: str, task: str, **config):
    from kernel_gym.eval.job import EvalConfig, job_for
    from kernel_gym.tasks import load_task

    config.setdefault("compile_timeout_s", 600)
    config.setdefault("run_timeout_s", 300)
    return job_for(load_task(task), code, backend="triton", config=EvalConfig(device="cuda", checks="none", **config))


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_genuine_solution_within_budget_on_cuda(cuda_pool, path):
    task = path.stem.replace("_", "/", 1)
    r = cuda_pool.evaluate(_job(path.read_text(), task))
    NUMBERS[f"solution {task}"] = {"outcome": r.outcome.value, "correctness": r.correctness,
                                   "stage_ms": {k: r.stage_ms.get(k) for k in ("oracle", "oracle_build", "correctness", "timing")}}
    assert r.correct, f"{task}: {r.outcome.value} {r.hacks} {r.message[:600]}"
    c = r.correctness
    assert c["rule"] == "oracle" and c["candidate_error"] <= c["limit"], c
    assert 0 < r.stage_ms["oracle"] <= r.stage_ms["correctness"]


def test_downcast_rejected_and_reordering_accepted_on_cuda(cuda_pool):
    down = cuda_pool.evaluate(_job((CASES / "bf16_round_trip.py").read_text(), str(CASES / "task_small_outputs.py")))
    assert down.outcome.value == "mismatch" and down.correctness["rule"] == "oracle", down.message
    honest = cuda_pool.evaluate(_job((CASES / "offset_sum_blocked.py").read_text(), str(CASES / "task_offset_sum.py")))
    assert honest.correct, honest.message
    NUMBERS["bf16_round_trip"], NUMBERS["offset_sum_blocked"] = down.correctness, honest.correctness


def _suite_ids() -> list[str]:
    return [f"{lv}/{p.stem}" for lv in ("level1", "level2") for p in sorted((ROOT / "tasks" / lv).glob("*.py"))]


def _flat(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


@pytest.mark.timeout(1800)
def test_downcasts_fail_on_every_suite_task_at_full_size():
    from kernel_gym.harness.integrity import pin_precision
    from kernel_gym.tasks import load_task
    from kernel_gym.tasks.loading import load_reference

    pin_precision("cuda")
    passed = []
    for tid in _suite_ids():
        module = load_reference(load_task(tid).source, {})
        torch.manual_seed(0)
        init = list(module.get_init_inputs())
        torch.manual_seed(0)
        model = module.Model(*init).cuda().eval()
        torch.manual_seed(0)
        model64 = module.Model(*init).cuda().eval().double()
        torch.manual_seed(1)
        xs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in module.get_inputs()]
        with torch.no_grad():
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            ref = _flat(model(*xs))
            torch.cuda.synchronize()
            t1 = time.perf_counter()
            exact = _flat(model64(*to_float64(xs)))
            torch.cuda.synchronize()
            t2 = time.perf_counter()
            rounds = {dt: [o.to(dt).float() for o in _flat(model(*[x.to(dt).float() if x.is_floating_point() else x
                                                                   for x in xs]))]
                      for dt in (torch.bfloat16, torch.float16)}
        row = {"fp32_ms": round((t1 - t0) * 1e3, 3), "fp64_ms": round((t2 - t1) * 1e3, 3)}
        for i, (r, o) in enumerate(zip(ref, exact)):
            b, _ = budget_for(i, r, r, o, DEFAULT_K, FLOOR["float32"])
            row[f"ref_err_{i}"] = b.reference.rel_l2
            for dt, outs in rounds.items():
                d, _ = budget_for(i, outs[i], r, o, DEFAULT_K, FLOOR["float32"])
                row[f"{dt}_over_limit_{i}"] = round(d.candidate.rel_l2 / d.limit("rel_l2"), 2)
                if d.ok:
                    passed.append((tid, str(dt)))
        NUMBERS[f"suite {tid}"] = row
        del model, model64, xs, ref, exact, rounds
        torch.cuda.empty_cache()
    if os.environ.get("KG_GPU_ORACLE_JSON"):
        pathlib.Path(os.environ["KG_GPU_ORACLE_JSON"]).with_suffix(".suite.json").write_text(json.dumps(
            {k: v for k, v in NUMBERS.items() if k.startswith("suite")}, indent=1))
    assert passed == []
