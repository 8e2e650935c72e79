"""KernelBench checkouts: `kernelbench:PATH` loads, `kernel-gym tasks import`, ids through the index or env var."""

import json

import pytest
import torch

from kernel_gym.cli import main
from kernel_gym.errors import TaskFormatError, UnknownTaskError
from kernel_gym.tasks import list_tasks, load_task
from kernel_gym.tasks.kernelbench import ENV_CHECKOUT, index_path, level_dirs
from kernel_gym.tasks.loading import load_reference

PROGRAM = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return {expr}


batch_size = 64
dim = 4096


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
'''


@pytest.fixture
def checkout(tmp_path, monkeypatch):
    """A KernelBench-layout tree: KernelBench/level{1,2,3}/*.py plus files that are not tasks."""
    monkeypatch.setenv("KERNEL_GYM_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(ENV_CHECKOUT, raising=False)
    root = tmp_path / "KernelBench-main"
    files = {
        "level1/1_Foo.py": PROGRAM.format(expr="torch.relu(x)"),
        "level1/19_ReLU.py": PROGRAM.format(expr="torch.relu(x)"),
        "level1/2_Tanh.py": PROGRAM.format(expr="torch.tanh(x)"),
        "level2/1_Sigmoid_Scale.py": PROGRAM.format(expr="torch.sigmoid(x) * 2.0"),
        "level3/5_Softmax.py": PROGRAM.format(expr="torch.softmax(x, dim=-1)"),
        "level3/__init__.py": "",
        "level1/99_Broken.py": "def oops(:\n",
    }
    for rel, text in files.items():
        path = root / "KernelBench" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / "README.md").write_text("not a task")
    return root


def test_load_one_file_by_scheme(checkout):
    path = checkout / "KernelBench" / "level1" / "19_ReLU.py"
    task = load_task(f"kernelbench:{path}")
    assert task.id == "kernelbench/level1/19_ReLU"
    assert task.level == 1 and task.path == path.resolve()
    assert task.metadata == {} and task.size_globals == {"batch_size": 64, "dim": 4096}
    assert task.sizes_for("cpu") == {}, "no KERNEL_GYM dict: the file's own sizes unless size= is given"
    assert task.sizes_for("cpu", {"batch_size": 2, "dim": 8}) == {"batch_size": 2, "dim": 8}


def test_size_overrides_shrink_a_kernelbench_task(checkout):
    task = load_task(f"kernelbench:{checkout / 'KernelBench' / 'level2' / '1_Sigmoid_Scale.py'}")
    module = load_reference(task.source, task.sizes_for("cpu", {"batch_size": 2, "dim": 8}))
    (x,) = module.get_inputs()
    assert x.shape == (2, 8)
    assert torch.allclose(module.Model()(x), torch.sigmoid(x) * 2.0)


def test_layouts_are_found(checkout):
    names = [d.name for d in level_dirs(checkout)]
    assert names == ["level1", "level2", "level3"]
    assert [d.name for d in level_dirs(checkout / "KernelBench")] == names
    assert [d.name for d in level_dirs(checkout / "KernelBench" / "level2")] == ["level2"]
    assert level_dirs(checkout / "nope") == []


def test_import_indexes_every_level_and_ids_resolve(checkout, capsys):
    with pytest.raises(UnknownTaskError, match="kernel-gym tasks import"):
        load_task("kernelbench/level1/19_ReLU")
    assert main(["tasks", "import", str(checkout)]) == 0
    out = capsys.readouterr().out
    assert "indexed 5 tasks (level1: 3, level2: 1, level3: 1)" in out and "99_Broken" in out
    data = json.loads(index_path().read_text())
    assert data["root"] == str(checkout.resolve())
    assert data["tasks"]["kernelbench/level1/19_ReLU"]["baseline_ms_source"] == "estimate"
    assert data["tasks"]["kernelbench/level1/19_ReLU"]["sizes"]["full"] == {"batch_size": 64, "dim": 4096}
    task = load_task("kernelbench/level1/19_ReLU")
    assert task.level == 1 and "torch.relu" in task.source
    assert load_task("kernelbench/level3/5_Softmax").level == 3
    assert list_tasks("kernelbench") == [
        "kernelbench/level1/1_Foo", "kernelbench/level1/2_Tanh", "kernelbench/level1/19_ReLU",
        "kernelbench/level2/1_Sigmoid_Scale", "kernelbench/level3/5_Softmax",
    ]
    assert list_tasks("kernelbench/level2") == ["kernelbench/level2/1_Sigmoid_Scale"]
    assert list_tasks("kernelbench", split="train") == []
    assert "kernelbench/level1/1_Foo" not in list_tasks(), "the default listing is the built-in suites"
    with pytest.raises(UnknownTaskError, match="Did you mean 'kernelbench/level1/19_ReLU'"):
        load_task("kernelbench/level1/19_Relu")


def test_import_out_writes_elsewhere(checkout, tmp_path):
    target = tmp_path / "kb.json"
    assert main(["tasks", "import", str(checkout / "KernelBench"), "--out", str(target), "--no-estimate"]) == 0
    assert set(json.loads(target.read_text())["tasks"]) == set(list_tasks("kernelbench")) | {
        "kernelbench/level1/1_Foo", "kernelbench/level1/2_Tanh", "kernelbench/level1/19_ReLU",
        "kernelbench/level2/1_Sigmoid_Scale", "kernelbench/level3/5_Softmax",
    }
    assert not index_path().exists()


def test_import_of_a_non_checkout_is_a_usage_error(tmp_path, capsys):
    assert main(["tasks", "import", str(tmp_path)]) == 2
    assert "no KernelBench level folders" in capsys.readouterr().err


def test_env_var_points_at_a_checkout(checkout, monkeypatch):
    monkeypatch.setenv(ENV_CHECKOUT, str(checkout))
    assert load_task("kernelbench/level2/1_Sigmoid_Scale").level == 2
    assert len(list_tasks("kernelbench")) == 6, "a live scan lists every file, unparsed"
    with pytest.raises(TaskFormatError):
        load_task("kernelbench/level1/99_Broken")


def test_listing_and_suites_show_kernelbench(checkout, capsys):
    main(["tasks", "import", str(checkout), "--no-estimate"])
    capsys.readouterr()
    assert main(["tasks", "--suite", "kernelbench/level1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == "3 tasks" and lines[1].split()[0] == "kernelbench/level1/1_Foo"
    assert "pass size=" in lines[1]
    assert main(["tasks", "suites"]) == 0
    out = capsys.readouterr().out
    assert "kernelbench/level1" in out and "level2 " in out
