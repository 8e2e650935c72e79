"""measure.py on the CPU (wall clock, tiny sizes): the manifest gets measured baselines, TF32 flags are restored."""

import json
import shutil

import pytest
import torch

from kernel_gym.tasks import load_task
from kernel_gym.tasks.c_reference import CModel
from kernel_gym.tasks.generator import generate, write_suite
from kernel_gym.tasks.manifest import default_path
from kernel_gym.tasks.measure import baseline_of, full_fp32, main, time_reference


def test_time_reference_on_cpu():
    task = load_task("level2/gemm_relu")
    ms = time_reference(task.source, task.metadata["cpu"], device="cpu", warmup=1, repeats=3)
    assert 0 < ms < 1000


@pytest.fixture
def no_c_reference(monkeypatch):
    """The C reference (`Model` of a C task) fails if it is run: the baseline must be the torch `Baseline`."""
    def refuse(self, *inputs):
        raise AssertionError("measure timed the C reference, not the Baseline")

    monkeypatch.setattr(CModel, "forward", refuse)


def test_c_task_times_the_baseline_not_the_c_reference(no_c_reference):
    task = load_task("c2cuda/saxpy")
    assert baseline_of(task.source) == "Baseline"
    assert baseline_of(load_task("level2/gemm_relu").source) == "Model"
    ms = time_reference(task.source, task.metadata["cpu"], device="cpu", warmup=0, repeats=2)
    assert 0 < ms < 1000


def test_measure_records_baseline_of_for_a_c_task(tmp_path, capsys, no_c_reference):
    manifest = tmp_path / "manifest.json"
    shutil.copy(default_path(), manifest)
    code = main(["--out", str(manifest), "--only", "c2cuda/saxpy", "--device", "cpu", "--warmup", "0",
                 "--repeats", "1", "--no-alt", "--min-ms", "0"])
    assert code == 0, capsys.readouterr()
    tasks = json.loads(manifest.read_text())["tasks"]
    entry = tasks["c2cuda/saxpy"]
    assert entry["baseline_ms_source"] == "measured" and entry["baseline_ms"] > 0
    assert entry["baseline_of"] == "Baseline"
    assert "baseline_of" not in tasks["level2/gemm_relu"]


def test_full_fp32_restores_the_flags():
    before = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    with full_fp32():
        assert not torch.backends.cuda.matmul.allow_tf32 and not torch.backends.cudnn.allow_tf32
    assert (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32) == before


def test_measure_updates_a_generated_manifest(tmp_path, capsys):
    result = generate(1, seed=0)
    manifest = write_suite(result, tmp_path, {"seed": 0})
    (name,) = json.loads(manifest.read_text())["tasks"]
    path = tmp_path / f"{name}.py"
    # measure at the CPU sizes: make them the file's full sizes
    src = path.read_text()
    task = load_task(str(path))
    for key, value in task.size_globals.items():
        if key in task.metadata["cpu"]:
            src = src.replace(f"\n{key} = {value}\n", f"\n{key} = {task.metadata['cpu'][key]}\n", 1)
    path.write_text(src)
    code = main(["--out", str(manifest), "--device", "cpu", "--warmup", "1", "--repeats", "2", "--no-alt",
                 "--min-ms", "0"])
    assert code == 0, capsys.readouterr()
    entry = json.loads(manifest.read_text())["tasks"][name]
    assert entry["baseline_ms_source"] == "measured" and entry["baseline_ms"] > 0
    assert entry["measured_on"] == "cpu" and "TF32 off" in entry["measured_with"]
    assert entry["estimate_ms"] >= 0.1, "the estimate is kept beside the measurement"
