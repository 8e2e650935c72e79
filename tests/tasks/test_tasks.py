"""Task suites and the KernelBench-format loader; every reference runs at its CPU and alt sizes."""

import math

import pytest
import torch

from kernel_gym.errors import ConfigError, TaskFormatError, UnknownNameError, UnknownTaskError
from kernel_gym.tasks import in_split, list_suites, list_tasks, load_task, tasks_dir

ALL_TASKS = list_tasks()


def test_suites_are_populated():
    assert ALL_TASKS, "no built-in tasks found"
    level1, level2 = list_tasks("level1"), list_tasks("level2")
    assert len(level1) >= 4 and len(level2) >= 4
    assert all(t.startswith("level1/") for t in level1)
    assert all(t.startswith("level2/") for t in level2)
    assert set(level1) | set(level2) <= set(ALL_TASKS)
    assert "level1/relu" in level1
    with pytest.raises(UnknownNameError, match="unknown suite 'level4'. Did you mean 'level3', 'level2', 'level1'?"):
        list_tasks("level4")  # an unknown suite is a mistake, not an empty suite
    assert "level1" in list_suites() and "kernelbench" in list_suites()


def test_in_split_keeps_held_out_tasks_out_of_train():
    train, held_out = list_tasks("level1", "train")[0], list_tasks("level1", "eval")[0]
    assert in_split(train, "train") and not in_split(held_out, "train")
    assert in_split(held_out, "eval") and not in_split(train, "eval")
    assert in_split(held_out, "all") and in_split("/my/own/task.py", "train")  # no split: a training task
    with pytest.raises(ConfigError):
        in_split(train, "test")


def test_load_by_id():
    task = load_task("level1/relu")
    assert task.id == "level1/relu"
    assert task.level == 1
    assert "class Model" in task.source and "def get_inputs" in task.source
    assert task.source == (tasks_dir() / "level1" / "relu.py").read_text()
    assert task.dtype == "float32"
    assert task.metadata["cpu"] == {"batch_size": 16, "dim": 256}
    assert task.size_globals == {"batch_size": 8192, "dim": 16384}
    assert task.description.startswith("Elementwise ReLU")


def test_load_by_path(tmp_path):
    src = (tasks_dir() / "level1" / "relu.py").read_text()
    path = tmp_path / "my_relu.py"
    path.write_text(src)
    task = load_task(str(path))
    assert task.id == str(path.resolve())
    assert task.source == src
    assert task.path == path.resolve()
    assert load_task(path).source == src  # a Path works too


def test_sizes_for_devices():
    task = load_task("level1/relu")
    assert task.sizes_for("cpu") == {"batch_size": 16, "dim": 256}
    assert task.sizes_for("cuda") == {}
    assert task.sizes_for("cuda", "cpu") == {"batch_size": 16, "dim": 256}
    assert task.sizes_for("cpu", {"dim": 7}) == {"dim": 7}
    assert task.alt_sizes_for("cpu") == {"batch_size": 23, "dim": 301}
    with pytest.raises(TaskFormatError):
        task.sizes_for("cpu", "huge")


def test_unknown_id_has_a_did_you_mean_hint():
    with pytest.raises(UnknownTaskError) as excinfo:
        load_task("level1/rleu")
    message = str(excinfo.value)
    assert "Did you mean" in message and "'level1/relu'" in message
    assert isinstance(excinfo.value, KeyError)  # also a lookup error


def test_missing_path_is_unknown(tmp_path):
    with pytest.raises(UnknownTaskError, match=r"^task file not found: .*nope\.py$"):  # not "unknown task ... Known:"
        load_task(str(tmp_path / "nope.py"))


def test_file_without_get_inputs_is_a_format_error(tmp_path):
    path = tmp_path / "bad.py"
    path.write_text(
        "import torch.nn as nn\n\nclass Model(nn.Module):\n    pass\n\ndef get_init_inputs():\n    return []\n"
    )
    with pytest.raises(TaskFormatError, match="get_inputs"):
        load_task(str(path))


def test_file_with_syntax_error_is_a_format_error(tmp_path):
    path = tmp_path / "broken.py"
    path.write_text("def Model(:\n")
    with pytest.raises(TaskFormatError, match="not valid Python"):
        load_task(str(path))


def _run_reference(task_id: str, which: str, seed: int):
    """Exec the source, override its size globals, seed, build Model(*get_init_inputs()), run on get_inputs()."""
    task = load_task(task_id)
    namespace: dict = {"__name__": f"reference_{which}"}
    exec(compile(task.source, task_id, "exec"), namespace)
    sizes = task.metadata[which]
    assert sizes and set(sizes) <= set(task.size_globals), f"{which} sizes must override the file's size globals"
    namespace.update(sizes)
    torch.manual_seed(seed)
    model = namespace["Model"](*namespace["get_init_inputs"]())
    inputs = namespace["get_inputs"]()
    with torch.no_grad():
        out = model(*inputs)
    return inputs, out


@pytest.mark.timeout(60)
@pytest.mark.parametrize("task_id", [t for t in ALL_TASKS if not t.startswith("c2cuda/")])  # test_c2cuda.py
def test_reference_runs_at_cpu_and_alt_sizes(task_id):
    shapes = {}
    for which in ("cpu", "alt"):
        inputs, out = _run_reference(task_id, which, seed=0)
        assert isinstance(out, torch.Tensor)
        assert sum(x.numel() for x in inputs if isinstance(x, torch.Tensor)) < 2_000_000, "CPU sizes must be small"
        assert out.numel() > 1
        assert torch.isfinite(out).all(), f"{which}: non-finite outputs"
        assert float(out.max() - out.min()) > 0, f"{which}: constant output"
        assert out.dtype == getattr(torch, load_task(task_id).dtype)
        _, out2 = _run_reference(task_id, which, seed=1)
        assert not torch.equal(out, out2), f"{which}: the output ignores its inputs"
        shapes[which] = tuple(out.shape)
    assert shapes["cpu"] != shapes["alt"], "the alt shape must differ from the cpu shape"
    assert math.prod(shapes["cpu"]) > 1
