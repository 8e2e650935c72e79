"""Task bytes and FLOPs, roofline utilisation and the violation flag; the profile line built from them."""

import pytest
import torch

from kernel_gym.signals.hardware import H200
from kernel_gym.signals.roofline import VIOLATION_FACTOR, roofline, task_counts, task_signals, tensor_bytes
from kernel_gym.signals.summary import profile_text


class Relu(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)


def test_elementwise_task_moves_its_input_and_output():
    x = torch.randn(64, 128)
    nbytes, flops = task_counts(Relu(), [x])
    assert (nbytes, flops) == (2 * 64 * 128 * 4, 0)  # elementwise ops count no FLOPs


def test_linear_task_counts_weights_and_matmul_flops():
    torch.manual_seed(0)
    model = torch.nn.Linear(32, 16)  # weight 16x32, bias 16
    x = torch.randn(8, 32)
    nbytes, flops = task_counts(model, [x])
    assert flops == 2 * 8 * 32 * 16
    assert nbytes == 4 * (8 * 32 + 16 * 32 + 16 + 8 * 16)


def test_broadcast_and_repeated_inputs_count_once():
    x = torch.randn(1, 256).expand(64, 256)
    assert tensor_bytes(x) == 256 * 4
    y = torch.randn(100)
    nbytes, _ = task_counts(torch.nn.Identity(), [y])  # the output is the input itself
    assert nbytes == 400


def test_roofline_of_a_bandwidth_bound_kernel():
    nbytes = 1 << 30  # 1 GiB: at 4.3 TB/s at least 0.2497 ms
    s = roofline(nbytes, 0, runtime_ms=0.34, baseline_ms=0.27, spec=H200)
    assert s["roofline_min_ms"] == pytest.approx(nbytes / 4.3e12 * 1e3, rel=1e-4)
    assert s["bandwidth_util"] == pytest.approx(nbytes / 0.34e-3 / 4.3e12, rel=1e-4)
    assert s["roofline_util"] == pytest.approx(s["bandwidth_util"], rel=1e-4)  # no FLOPs: the memory roof
    assert s["flops_util"] == 0.0 and s["roofline_violation"] == 0.0
    assert s["roofline_max_speedup"] == pytest.approx(0.27 / s["roofline_min_ms"], rel=1e-4)


def test_roofline_of_a_compute_bound_kernel_uses_the_dtype_roof():
    flops, nbytes = 2 * 4096**3, 3 * 4096 * 4096 * 4
    fp32 = roofline(nbytes, flops, runtime_ms=3.0, baseline_ms=3.0, spec=H200)
    assert fp32["roofline_min_ms"] == pytest.approx(flops / 60e12 * 1e3, rel=1e-4)
    bf16 = roofline(nbytes, flops, runtime_ms=0.2, baseline_ms=0.3, spec=H200, dtype="bfloat16")
    assert bf16["peak_flops"] == 989e12 and bf16["flops_util"] == pytest.approx(flops / 0.2e-3 / 989e12, rel=1e-4)


def test_a_time_far_below_the_roofline_is_flagged():
    nbytes = 1 << 30
    floor_ms = nbytes / 4.3e12 * 1e3
    assert roofline(nbytes, 0, floor_ms * 0.9, 1.0, H200)["roofline_violation"] == 0.0  # within the margin
    assert roofline(nbytes, 0, floor_ms / (VIOLATION_FACTOR * 1.1), 1.0, H200)["roofline_violation"] == 1.0


def test_task_signals():
    assert task_signals(1000, 5000) == {"task_bytes": 1000.0, "task_flops": 5000.0, "arithmetic_intensity": 5.0}
    assert "arithmetic_intensity" not in task_signals(0, 0)


def test_profile_text():
    signals = {"own_kernel_time_share": 1.0, "target_sm": 90.0, "kernels_profiled": 1.0, "regs_max": 32.0,
               "smem_max_bytes": 0.0, "spill_bytes_max": 0.0, "occupancy": 1.0, "occupancy_block_threads": 256.0,
               **roofline(1 << 30, 0, 0.34, 0.27, H200), "task_flops": 0.0}
    text = profile_text(signals)
    assert text.startswith("Profile (sm_90): 1 kernel, 32 registers/thread, 0 B shared memory, no spills, "
                           "occupancy 100% (256 threads/block); 3.16 TB/s = 73% of the 4.30 TB/s peak")
    assert "own kernels 100% of GPU time" in text and "TFLOP/s" not in text and "Code notes" not in text
    noted = profile_text({**signals, "struct_uncoalesced": 2.0, "spill_bytes_max": 96.0})
    assert "96 B spilled/thread" in noted
    assert noted.splitlines()[1] == ("Code notes: 2 strided (likely uncoalesced) global accesses; "
                                     "register spills to local memory.")
    assert profile_text({}) == "" and profile_text({"own_kernel_time_share": 1.0}) == ""
    cpu = profile_text({"target_sm": 90.0, "regs_max": 28.0, "kernels_profiled": 2.0, "spill_bytes_max": 0.0})
    assert cpu == "Profile (sm_90): 2 kernels, max 28 registers/thread, 0 B shared memory, no spills."
