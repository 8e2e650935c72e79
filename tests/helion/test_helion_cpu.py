"""backend="helion" through the real pipeline on the CPU backend: the env's static rules, then the judge and a
confined runner, where Helion compiles each kernel into Triton and the Triton interpreter runs it.

Genuine Helion solutions (an elementwise, a reduction, a GEMM) are judged correct; a "Helion kernel" whose host code
does the GEMM with torch.matmul is rejected (statically, by the op audit with the static rules bypassed, by the
ablation trial under `permissive`); a decoy kernel beside torch in forward is rejected by the ablation trial.
"""

from __future__ import annotations

import pathlib

import pytest

# Skips too where helion is installed but does not import against this torch (helion 1.5.1 on torch 2.11: an
# ImportError); pytest.importorskip skips only ModuleNotFoundError unless given exc_type=ImportError (pytest >= 8.2)
try:
    import helion  # noqa: F401
except ImportError as e:
    pytest.skip(f"helion does not import: {e}", allow_module_level=True)

HERE = pathlib.Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def evaluator():
    from kernel_gym.judge.local import LocalEvaluator

    ev = LocalEvaluator("cpu", workers=1)
    ev.start()
    ev.pool.warm_up()
    yield ev
    ev.close()


def code(kind: str, name: str) -> str:
    return (HERE / kind / name).read_text()


def step(evaluator, source: str, task: str, checks: str = "standard", backend: str = "auto") -> dict:
    import gymnasium as gym

    import kernel_gym  # noqa: F401 - registers the env id

    env = gym.make("KernelRefine-v0", task=task, backend=backend, device="cpu", checks=checks, max_turns=1,
                   evaluator=evaluator)
    try:
        env.reset(seed=0)
        _, reward, _, _, info = env.step(f"My Helion kernel.\n\n```python\n{source}```\n")
    finally:
        env.close()
    assert reward == info["score"]
    return info


def bypass(evaluator, source: str, task: str, **config):
    """The sandbox alone (no static rule), so that the dynamic checks are shown to stop an attack on their own."""
    from kernel_gym.eval.job import EvalConfig, EvalJob
    from kernel_gym.tasks import load_task

    t = load_task(task)
    job = EvalJob(task_id=t.id, task_source=t.source, code=source, backend="helion", sizes=t.sizes_for("cpu"),
                  alt_sizes=t.alt_sizes_for("cpu"), dtype=t.dtype, allow_precision=t.allow_precision,
                  config=EvalConfig(device="cpu", compile_timeout_s=120, run_timeout_s=120, **config))
    return evaluator.pool.evaluate(job)


@pytest.mark.parametrize("task, name", [("level1/relu", "level1_relu.py"),
                                        ("level1/sum_reduce", "level1_sum_reduce.py"),
                                        ("level1/matmul", "level1_matmul.py"),
                                        ("level1/softmax", "level1_softmax.py")])  # torch.exp: libdevice.exp
def test_genuine_helion_solution_is_correct(evaluator, task, name):
    info = step(evaluator, code("solutions", name), task, checks="strict")
    assert info["backend"] == "helion" and info["correct"], info["feedback"]
    assert info["hacks"] == [] and info["score"] > 0
    assert info["signals"]["own_launches_per_call"] >= 1  # Helion's Triton launches, counted by the launch hooks


def test_library_in_host_code_rejected_by_the_static_rules(evaluator):
    info = step(evaluator, code("attacks", "library_in_host_code.py"), "level1/matmul", checks="standard")
    assert info["error"] == "rejected" and "library_op" in info["hacks"] and info["score"] == 0


def test_library_in_host_code_rejected_by_the_op_audit(evaluator):
    result = bypass(evaluator, code("attacks", "library_in_host_code.py"), "level1/matmul", checks="strict")
    assert result.outcome.value == "rejected" and "torch_compute" in result.hacks, result.message


def test_decoy_rejected_by_the_ablation_trial(evaluator):
    info = step(evaluator, code("attacks", "decoy_scratch_kernel.py"), "level1/relu", checks="permissive")
    assert info["error"] == "rejected" and info["hacks"] == ["decoy_kernel"], info["feedback"]


def test_helion_error_is_a_compile_error_in_the_policys_terms(evaluator):
    source = code("solutions", "level1_relu.py").replace("block_sizes=[8, 128]", "block_sizes=[8]")
    info = step(evaluator, source, "level1/relu", backend="helion")
    assert info["error"] == "compile_error"
    assert "InvalidConfig" in info["feedback"] and "solution.py" in info["feedback"]
    assert "/kernel_gym/" not in info["feedback"] and "site-packages" not in info["feedback"]


def test_a_kernel_without_config_is_not_autotuned(evaluator):
    source = code("solutions", "level1_relu.py").replace(
        "config=helion.Config(block_sizes=[8, 128]), ", "")
    info = step(evaluator, source, "level1/relu")
    assert info["error"] == "compile_error" and "Autotuning is disabled" in info["feedback"]
    assert "config=helion.Config(block_sizes=" in info["feedback"]  # the hint says how


def test_a_runner_that_imported_helion_serves_no_other_job(evaluator, reusing_runners):
    """Helion stays in the runner's memory after the job (its settings, its compiled kernels, its functions, which
    the job's solution could have patched): even under the "clean" reuse policy the next job gets a runner that never
    imported it."""
    from kernel_gym.eval.job import EvalJob

    slot = evaluator.pool._all[0]  # noqa: SLF001 - the one slot of this pool
    triton_relu = (HERE.parent / "solutions" / "level1_relu.py").read_text()
    evaluator.evaluate(EvalJob(task_id="level1/relu", code=triton_relu))
    before = slot.cand.pid
    assert evaluator.evaluate(EvalJob(task_id="level1/relu", code=triton_relu)).correct
    assert slot.cand.pid == before  # a clean Triton job keeps its runner
    assert evaluator.evaluate(EvalJob(task_id="level1/relu", code=code("solutions", "level1_relu.py"))).correct
    assert slot.cand.pid != before


def test_helions_caches_are_the_jobs_own(evaluator):
    """Helion's cache, the code it generates (Inductor's cache) and Triton's cache lie in the job's folder, deleted
    with the job: nothing a solution leaves there reaches the next job."""
    source = code("solutions", "level1_relu.py").replace("        return relu_kernel(x)", """\
        import os
        from helion.autotuner.local_cache import get_helion_cache_dir
        from torch._inductor.runtime.cache_dir_utils import cache_dir
        job = os.environ["TMPDIR"]
        y = relu_kernel(x)
        generated = relu_kernel.bind((x,))._run.__code__.co_filename
        for path in (str(get_helion_cache_dir()), cache_dir(), os.environ["TRITON_CACHE_DIR"], generated):
            assert os.path.basename(job).startswith("job_") and path.startswith(job + os.sep), (path, job)
        return y""")
    info = step(evaluator, source, "level1/relu", checks="none")
    assert info["correct"], info["feedback"]
