"""C→CUDA tasks: the .c format, the C reference (compiled with cc, run with ctypes), the PyTorch baseline, the
directory loader, and the env pipeline on the CPU (Triton solution end to end; CUDA is nvcc-checked)."""

import math
import shutil
from pathlib import Path

import pytest
import torch

from kernel_gym.errors import TaskFormatError
from kernel_gym.judge.compare import compare_outputs, flatten_outputs
from kernel_gym.tasks import list_tasks, load_task, tasks_dir
from kernel_gym.tasks.c_reference import CACHE, find_cc
from kernel_gym.tasks.c_task import load_c_tasks, parse_c
from kernel_gym.tasks.loading import load_reference

pytestmark = pytest.mark.skipif(find_cc() is None, reason="no host C compiler")

C_TASKS = list_tasks(suite="c2cuda")
SOLUTIONS = Path(__file__).resolve().parents[1] / "solutions" / "c2cuda"
SAXPY = (tasks_dir() / "c2cuda" / "saxpy.c").read_text()


def _run(task_id: str, which: str, seed: int, model_cls: str = "Model"):
    task = load_task(task_id)
    module = load_reference(task.source, task.metadata[which])
    torch.manual_seed(0)
    init = list(module.get_init_inputs())
    torch.manual_seed(0)
    model = getattr(module, model_cls)(*init)
    torch.manual_seed(seed)
    inputs = list(module.get_inputs())
    return inputs, flatten_outputs(model(*[x.clone() for x in inputs]))


def test_suite_has_at_least_20_tasks():
    assert len(C_TASKS) >= 20
    assert all(t.startswith("c2cuda/") for t in C_TASKS)
    assert set(C_TASKS) <= set(list_tasks())


@pytest.mark.parametrize("task_id", C_TASKS)
def test_task_loads_with_c_source_and_interface(task_id):
    task = load_task(task_id)
    assert task.metadata["format"] == "c" and task.metadata["has_baseline"]
    assert "kernel-gym" not in task.metadata["c_source"], "the metadata header is not part of the C shown"
    assert f"void {task.metadata['entry']}(" in task.metadata["c_source"]
    assert "ModelNew.forward(" in task.metadata["interface"]
    assert task.description and set(task.metadata) >= {"cpu", "alt", "full_alt", "dtype"}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("task_id", C_TASKS)
def test_c_reference_is_deterministic_and_matches_the_baseline(task_id):
    shapes = {}
    for which in ("cpu", "alt"):
        inputs, out = _run(task_id, which, seed=0)
        assert sum(x.numel() for x in inputs) < 2_000_000, "CPU sizes must be small"
        assert all(type(o) is torch.Tensor and torch.isfinite(o.double()).all() for o in out)
        assert all(o.numel() >= 1 for o in out)
        assert any(o.numel() == 1 or float(o.max() - o.min()) > 0 for o in out), "a constant output"
        again_inputs, again = _run(task_id, which, seed=0)
        assert all(torch.equal(a, b) for a, b in zip(inputs, again_inputs)), "same seed, same inputs"
        assert all(torch.equal(a, b) for a, b in zip(out, again)), "same seed, bit-identical C outputs"
        other_inputs, other = _run(task_id, which, seed=1)
        assert not all(torch.equal(a, b) for a, b in zip(inputs, other_inputs)), "another seed, other inputs"
        assert not all(torch.equal(a, b) for a, b in zip(out, other)), "the output depends on the inputs"
        _, base = _run(task_id, which, seed=0, model_cls="Baseline")
        mismatch = compare_outputs(tuple(base), tuple(out), 1e-4, 1e-4, 1e-2)
        assert mismatch is None, f"{which}: baseline vs C: {mismatch}"
        shapes[which] = [tuple(x.shape) for x in inputs]
    assert shapes["cpu"] != shapes["alt"], "the alt shape differs from the cpu shape"


def test_outputs_return_to_the_inputs_device_and_inputs_are_untouched():
    task = load_task("c2cuda/saxpy")
    module = load_reference(task.source, task.metadata["cpu"])
    model = module.Model(2.5)
    x, y = torch.randn(100), torch.randn(100)
    y0 = y.clone()
    out = model(x, y)
    assert torch.equal(y, y0), "an inout buffer is updated on a copy"
    assert torch.allclose(out, 2.5 * x + y0) and out.device == x.device
    assert model.c_ms and model.c_ms[-1] >= 0
    meta = model(x.to("meta"), y.to("meta"))  # shape-only tracing goes through the baseline
    assert meta.device.type == "meta" and meta.shape == (100,)


def test_costly_calls_are_cached_per_input_content():
    task = load_task("c2cuda/matmul")
    module = load_reference(task.source, {"m": 96, "k": 96, "n": 96})
    model = module.Model()
    torch.manual_seed(3)
    a, b = module.get_inputs()
    model.c_ms = [1e6]  # pretend the C call is costly, so the cache is worth hashing for
    first = model(a, b)
    hits = CACHE.hits
    model.c_ms = [1e6]
    assert torch.equal(model(a.clone(), b.clone()), first) and CACHE.hits == hits + 1
    model.c_ms = [1e6]
    assert not torch.equal(model(a + 1, b), first)


def test_parse_reads_roles_and_rejects_bad_headers():
    t = parse_c(SAXPY, "saxpy")
    assert [(a.name, a.role) for a in t.args] == [("n", "size"), ("a", "param"), ("x", "in"), ("y", "inout")]
    with pytest.raises(TaskFormatError, match="metadata comment"):
        parse_c("void f(int n, float *y) {}", "f")
    with pytest.raises(TaskFormatError, match="no definition"):
        parse_c(SAXPY.replace("void saxpy(", "void other("), "saxpy")
    with pytest.raises(TaskFormatError, match="shape"):
        parse_c(SAXPY.replace('x = { shape = ["n"] }', "x = {}"), "saxpy")
    with pytest.raises(TaskFormatError, match="unknown header"):
        parse_c(SAXPY.replace("[sizes]", 'colour = "red"\n[sizes]'), "saxpy")


def test_a_c_compile_error_is_a_clear_task_error(tmp_path):
    bad = tmp_path / "saxpy.c"  # the entry function defaults to the file name
    bad.write_text(SAXPY.replace("y[i] = a * x[i] + y[i];", "y[i] = a * x[i] + ;"))
    task = load_task(str(bad))
    with pytest.raises(TaskFormatError, match="does not compile"):
        load_reference(task.source, task.metadata["cpu"]).Model(2.5)


def test_directory_loader(tmp_path):
    (tmp_path / "sub").mkdir()
    shutil.copy(tasks_dir() / "c2cuda" / "saxpy.c", tmp_path / "saxpy.c")
    shutil.copy(tasks_dir() / "c2cuda" / "row_sum.c", tmp_path / "sub" / "row_sum.c")
    (tmp_path / "_draft.c").write_text("not a task")
    tasks = load_c_tasks(tmp_path)
    assert [Path(t.id).name for t in tasks] == ["saxpy.c", "row_sum.c"]
    assert all(Path(t.id).is_absolute() and t.metadata["format"] == "c" for t in tasks)
    assert load_task(tasks[0].id).source == tasks[0].source
    with pytest.raises(TaskFormatError):
        load_c_tasks(tmp_path / "missing")


def test_prompt_shows_the_c_source_and_calling_convention():
    from kernel_gym.feedback.render import render_prompt

    task = load_task("c2cuda/saxpy")
    text = render_prompt(task, backend="cuda", checks="standard", device="cuda", scoring="S", atol=1e-4, rtol=1e-4)
    assert "```c\nvoid saxpy(int n, float a, const float *x, float *y)" in text
    assert "ModelNew(a=2.5)" in text and "ModelNew.forward(x: float32[n], y: float32[n])" in text
    assert "class Model(" not in text and "Baseline" not in text and "kernel-gym" not in text.split("## Rules")[0]
    assert "load_inline" in text


def _step(task: str, code: str, **kwargs):
    import gymnasium as gym

    env = gym.make("KernelRefine-v0", task=task, max_turns=1, **kwargs)
    try:
        env.reset(seed=0)
        return env.step(f"```python\n{code}\n```")[4]
    finally:
        env.close()


@pytest.mark.timeout(300)
def test_triton_solution_is_correct_through_the_env_on_cpu():
    info = _step("c2cuda/saxpy", (SOLUTIONS / "saxpy_triton.py").read_text(), device="cpu")
    assert info["correct"] and info["error"] is None and not info["hacks"], info["feedback"]
    assert info["speedup"] is not None and info["baseline_ms"] > 0
    assert info["signals"]["c_reference_ms"] > 0
    assert math.isclose(info["signals"]["speedup_vs_c"], info["signals"]["c_reference_ms"] / info["runtime_ms"],
                        rel_tol=1e-2)


@pytest.mark.timeout(300)
def test_wrong_triton_solution_is_a_mismatch_on_cpu():
    code = (SOLUTIONS / "saxpy_triton.py").read_text().replace("a * x + y", "a * x - y")
    info = _step("c2cuda/saxpy", code, device="cpu")
    assert not info["correct"] and info["error"] == "mismatch"


CUDA_SOLUTIONS = sorted(p.stem.removesuffix("_cuda") for p in SOLUTIONS.glob("*_cuda.py"))


@pytest.mark.timeout(600)
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("name", CUDA_SOLUTIONS)
def test_cuda_solution_compiles_and_is_unsupported_on_cpu(name):
    info = _step(f"c2cuda/{name}", (SOLUTIONS / f"{name}_cuda.py").read_text(), device="cpu", backend="cuda")
    assert info["error"] == "unsupported" and info["compiled"], info["feedback"]
