"""Issue 37 on a GPU: the library policy's third check, the profiler share (`library_time`), agrees with the static
rule and the op audit; the regression set of outside-style solutions (their CUDA forms included) is accepted on cuda.

- every allowed pattern of test_library_policy.PATTERNS is correct on cuda with static rules and every dynamic check
  (the profiler leaves the allowed GEMM and final-reduction kernels out of the total: own share >= 50 %), and with
  the static rules bypassed too; every forbidden pattern is rejected both ways (`library_op` statically; dynamically
  `torch_compute`, or `library_time` where the profiler sees it);
- the profiler alone (in this process): a Triton kernel's squared differences averaged by `.mean(dim=1)` on
  level1/mse_loss keep their share with the policy's exclusions, and the reduce kernel counts without them.

Run with `pytest -m gpu tests/anti_hacking/test_gpu_library_policy.py`; KG_GPU_POLICY_JSON=path keeps the verdicts.
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor

import pytest
from test_library_policy import OUTSIDE, PATTERNS, REGRESSION

pytestmark = pytest.mark.gpu


def _job(path, task_id: str):
    from kernel_gym.eval.job import EvalConfig, job_for
    from kernel_gym.tasks import load_task

    code = path.read_text()
    backend = "cuda" if "load_inline" in code else "triton"
    config = EvalConfig(device="cuda", checks="standard", compile_timeout_s=600, run_timeout_s=300)
    return job_for(load_task(task_id), code, backend=backend, config=config)


@pytest.fixture(scope="module")
def verdicts():
    """(file name, task) -> (with static rules, static rules bypassed), all evaluated concurrently on one cuda pool:
    the static rules run before the evaluator (`evaluate_job`), which alone judges only what executes."""
    from kernel_gym.eval.evaluator import evaluate_job
    from kernel_gym.judge.local import LocalEvaluator

    cases = {(p.name, t): p for p, t, *_ in PATTERNS}
    cases |= {(n, t): OUTSIDE / n for n, t in REGRESSION.items() if "cpp" not in n}
    ev = LocalEvaluator("cuda", workers=4)
    ev.start()
    try:
        with ThreadPoolExecutor(max_workers=4) as pool:
            full = {k: pool.submit(evaluate_job, _job(p, k[1]), ev) for k, p in cases.items()}
            bare = {k: pool.submit(ev.evaluate, _job(p, k[1])) for k, p in cases.items()}
            out = {k: (full[k].result(), bare[k].result()) for k in cases}
    finally:
        ev.close()
    if os.environ.get("KG_GPU_POLICY_JSON"):
        with open(os.environ["KG_GPU_POLICY_JSON"], "w") as f:
            json.dump({f"{n} on {t}": [{"outcome": r.outcome.value, "hacks": list(r.hacks), "message": r.message[:600],
                                        "share": r.signals.get("own_kernel_time_share"),
                                        "correctness": r.correctness} for r in pair]
                       for (n, t), pair in out.items()}, f, indent=1)
    return out


@pytest.mark.parametrize("path, task, allowed, allowance", PATTERNS, ids=[p[0].stem for p in PATTERNS])
def test_the_profiler_agrees_with_the_static_rule_and_the_op_audit(verdicts, path, task, allowed, allowance):
    full, bare = verdicts[(path.name, task)]
    where = f"{path.name}: {full.outcome.value} {full.hacks} / {bare.outcome.value} {bare.hacks} {bare.message[:400]}"
    assert (full.correct and not full.hacks) is allowed and (bare.correct and not bare.hacks) is allowed, where
    if allowed:
        assert bare.signals.get("own_kernel_time_share", 0.0) >= 0.5, (where, bare.signals)
    else:
        assert full.hacks == ("library_op",) and set(bare.hacks) <= {"torch_compute", "library_time"}, where


@pytest.mark.parametrize("name", sorted(n for n in REGRESSION if "cpp" not in n))
def test_outside_style_solution_accepted_on_cuda(verdicts, name):
    full, _ = verdicts[(name, REGRESSION[name])]
    assert full.correct and not full.hacks, f"{name}: {full.outcome.value} {full.hacks} {full.message[:600]}"


def test_the_profiler_leaves_the_allowed_final_reduction_out():
    import torch
    import triton
    import triton.language as tl

    from kernel_gym.checks.task_policy import task_policy
    from kernel_gym.harness.profile import excluded, profile_call
    from kernel_gym.tasks import load_task

    @triton.jit
    def _kg_policy_sq_diff(p_ptr, t_ptr, o_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        d = tl.load(p_ptr + offs, mask=mask) - tl.load(t_ptr + offs, mask=mask)
        tl.store(o_ptr + offs, d * d, mask=mask)

    p, t = torch.randn(256, 4096, device="cuda"), torch.randn(256, 4096, device="cuda")

    def forward():
        o = torch.empty_like(p)
        _kg_policy_sq_diff[(triton.cdiv(p.numel(), 1024),)](p, t, o, p.numel(), BLOCK=1024)
        return o.mean(dim=1)

    forward()
    torch.cuda.synchronize()
    policy = task_policy(load_task("level1/mse_loss").source)
    names = excluded("standard", policy)
    assert "final_reduction" in names
    kept = profile_call(forward, {"_kg_policy_sq_diff"}, exclude=names)
    counted = profile_call(forward, {"_kg_policy_sq_diff"})
    assert kept.share == 1.0 and counted.share < 1.0, (kept, counted)
    assert excluded("standard", task_policy(load_task("level1/softmax").source)) == []


def test_a_scratch_buffer_the_last_call_filled_is_no_decoy():
    """A genuine kernel that writes per-block partial sums into a `torch.empty` scratch buffer: in the ablation trial
    (its kernels skipped) the caching allocator hands back the block the previous call filled with the right
    partials, so the output stayed correct and the kernel read as a decoy (2026-12-08, H100, with the static rules
    bypassed). Fresh memory is filled in that trial (harness.integrity.fresh_memory_poisoned): correct every time."""
    from kernel_gym.judge.local import LocalEvaluator

    ev = LocalEvaluator("cuda", workers=1)
    try:
        results = [ev.evaluate(_job(OUTSIDE / "mse_scalar_partials_sum_div.py", str(OUTSIDE / "task_mse_scalar.py")))
                   for _ in range(3)]
    finally:
        ev.close()
    assert [r.outcome.value for r in results] == ["correct"] * 3, [(r.hacks, r.message[:200]) for r in results]
