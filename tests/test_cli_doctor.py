"""`kernel-gym doctor`: what this machine can run, on one screen, and `require` for launchers to fail fast."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kernel_gym.commands import doctor
from kernel_gym.errors import ConfigError


def test_doctor_says_what_this_machine_has():
    out = subprocess.run([sys.executable, "-m", "kernel_gym.cli", "doctor", "--json"], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert set(report) == set(doctor.CHECKS)
    assert all(set(item) == {"name", "ok", "detail", "needed_for"} for item in report.values())
    assert report["triton"]["ok"] and report["triton"]["detail"].startswith("triton ")
    import torch

    assert report["gpu"]["ok"] == torch.cuda.is_available()
    assert "uid" in report["isolation"]["detail"] or "runners would run" in report["isolation"]["detail"]
    text = subprocess.run([sys.executable, "-m", "kernel_gym.cli", "doctor", "--only", "triton", "gpu"],
                          capture_output=True, text=True, timeout=120).stdout.splitlines()
    assert len(text) == 2 and text[0].split()[1] == "triton"


def test_a_launcher_fails_fast_with_what_is_missing(monkeypatch):
    monkeypatch.setitem(doctor.CHECKS, "vllm", lambda: doctor.Item("vllm", False, "vllm not installed", "training"))
    with pytest.raises(ConfigError, match=r"OpenRLHF training needs: vllm \(vllm not installed\)"):
        doctor.require(["triton", "vllm"], "OpenRLHF training")
    doctor.require(["triton"], "a CPU episode")  # all there: nothing raised


def test_a_check_that_fails_is_said_not_raised(monkeypatch):
    def broken():
        raise RuntimeError("driver mismatch")

    monkeypatch.setitem(doctor.CHECKS, "gpu", broken)
    (item,) = doctor.diagnose(["gpu"])
    assert not item.ok and "driver mismatch" in item.detail


def test_the_openrlhf_launcher_stops_before_ray_when_vllm_is_missing(monkeypatch):
    """Before: Ray started, then OpenRLHF failed on the missing vLLM; now one line, nothing started."""
    from kernel_gym.integrations import openrlhf_train

    monkeypatch.setitem(doctor.CHECKS, "vllm", lambda: doctor.Item("vllm", False, "vllm not installed", "training"))
    started = []
    monkeypatch.setattr(openrlhf_train, "install", lambda: started.append("patch"))
    with pytest.raises(ConfigError, match="OpenRLHF training needs: vllm"):
        openrlhf_train.main(["--rollout.n_samples_per_prompt", "4"])
    assert not started


def test_the_trl_script_says_what_it_misses_before_loading_anything(monkeypatch, repo_root, tmp_path):
    """scripts/train_trl.py --use-cpu with a Hub model id and no Hub: one line naming it, before any download."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("train_trl", repo_root / "scripts" / "train_trl.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    monkeypatch.setitem(doctor.CHECKS, "hub", lambda: doctor.Item("hub", False, "huggingface.co not reachable", ""))
    with pytest.raises(ConfigError, match=r"needs: hub \(huggingface.co not reachable\)"):
        script.main(["--use-cpu", "--model", "Qwen/Qwen2.5-Coder-0.5B-Instruct"])
    script.preflight(script.parse_args(["--use-cpu", "--model", str(tmp_path)]))  # a local folder needs no Hub


@pytest.mark.timeout(120)
def test_verls_launcher_stops_in_one_line_on_a_machine_that_cannot_train(repo_root):
    """examples/verl/run_kevin.sh hung on a CPU machine with no error; now kernel-gym doctor --require says what is
    missing and the script exits 2 before verl starts."""
    import os

    if not [i for i in doctor.diagnose(["gpu", "ray", "verl", "vllm"]) if not i.ok]:
        pytest.skip("this machine has everything verl training needs: the launcher would start it")
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}
    run = subprocess.run(["bash", str(repo_root / "examples" / "verl" / "run_kevin.sh")], capture_output=True,
                         text=True, timeout=100, env=env, cwd=repo_root)
    assert run.returncode == 2, (run.returncode, run.stderr[-1000:])
    assert "verl training (examples/verl/run_kevin.sh) needs:" in run.stderr and "Traceback" not in run.stderr
