"""measure.py --baseline compile on the CPU: the plumbing, with torch.compile replaced by a counting stand-in (a real
inductor build takes tens of seconds here; on a GPU the level3 stage of benchmarks/device_session.sh runs it)."""

import json
import shutil

import pytest
import torch

from kernel_gym.tasks import load_task
from kernel_gym.tasks.c_reference import CModel
from kernel_gym.tasks.manifest import _MEASURED_KEYS, default_path
from kernel_gym.tasks.measure import main, time_reference

ARGS = ["--device", "cpu", "--warmup", "0", "--repeats", "2", "--no-alt", "--min-ms", "0"]


@pytest.fixture
def compiled(monkeypatch):
    """torch.compile replaced: records what it was given and counts the compiled callable's calls."""
    seen = {"models": [], "calls": 0}

    def fake_compile(model, *args, **kwargs):
        seen["models"].append(type(model).__name__)

        def forward(*inputs):
            seen["calls"] += 1
            return model(*inputs)

        return forward

    monkeypatch.setattr(torch, "compile", fake_compile)
    monkeypatch.setattr(torch._dynamo, "reset", lambda: seen.setdefault("reset", True))
    return seen


def test_time_reference_times_the_compiled_model_after_one_warm_up_call(compiled):
    task = load_task("level2/gemm_relu")
    ms = time_reference(task.source, task.metadata["cpu"], device="cpu", warmup=0, repeats=3, compile=True)
    assert ms > 0 and compiled["models"] == ["Model"]
    assert compiled["calls"] == 1 + 3  # the warm-up call that compiles, then the timed ones
    assert compiled["reset"]


def test_eager_timing_compiles_nothing(compiled):
    task = load_task("level2/gemm_relu")
    time_reference(task.source, task.metadata["cpu"], device="cpu", warmup=1, repeats=2)
    assert compiled["models"] == [] and compiled["calls"] == 0


@pytest.fixture
def manifest(tmp_path, monkeypatch):
    monkeypatch.setattr(CModel, "forward", lambda self, *a: (_ for _ in ()).throw(AssertionError("C reference")))
    path = tmp_path / "manifest.json"
    shutil.copy(default_path(), path)
    return path


def test_compile_baseline_is_recorded_beside_an_untouched_eager_one(manifest, compiled, capsys):
    before = json.loads(manifest.read_text())["tasks"]["c2cuda/saxpy"]
    assert main(["--out", str(manifest), "--only", "c2cuda/saxpy", "--baseline", "compile", *ARGS]) == 0
    entry = json.loads(manifest.read_text())["tasks"]["c2cuda/saxpy"]
    assert compiled["models"] == ["Baseline"]  # what the env's speedup is measured against, compiled
    assert entry["baseline_compile_ms"] > 0 and entry["compile_measured_on"] == "cpu"
    assert "torch.compile (default mode)" in entry["compile_measured_with"]
    assert {k: entry.get(k) for k in ("baseline_ms", "baseline_ms_source", "measured_on")} == {
        k: before.get(k) for k in ("baseline_ms", "baseline_ms_source", "measured_on")}
    assert "torch.compile" in capsys.readouterr().out


def test_both_baselines_then_missing_skips_what_this_device_measured(manifest, compiled, capsys):
    assert main(["--out", str(manifest), "--only", "c2cuda/saxpy", "--baseline", "eager", "compile", *ARGS]) == 0
    entry = json.loads(manifest.read_text())["tasks"]["c2cuda/saxpy"]
    assert entry["baseline_ms_source"] == "measured" and entry["measured_on"] == "cpu"
    assert entry["baseline_compile_ms"] > 0
    calls = compiled["calls"]
    capsys.readouterr()
    assert main(["--out", str(manifest), "--only", "c2cuda/saxpy", "--baseline", "eager", "compile", "--missing",
                 *ARGS]) == 0
    assert compiled["calls"] == calls and "already measured on cpu" in capsys.readouterr().out
    assert json.loads(manifest.read_text())["tasks"]["c2cuda/saxpy"] == entry


def test_a_manifest_rebuild_keeps_the_compile_baseline():
    assert {"baseline_compile_ms", "baseline_compile_alt_ms", "compile_measured_on",
            "compile_measured_with"} <= set(_MEASURED_KEYS)
