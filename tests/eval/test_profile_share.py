"""The profiler share (kernel_gym/harness/profile.py): fills of the solution's own buffers are not library time, and
the library GEMM/conv is left out of the total only where the task policy allows one (CPU, on FunctionEvents built
by hand; the real trace is in tests/anti_hacking/test_gpu_shapes.py)."""

from __future__ import annotations

import pytest
from torch.autograd import DeviceType
from torch.autograd.profiler_util import FunctionEvent

from kernel_gym.checks.task_policy import task_policy
from kernel_gym.harness.profile import excludes_library_gemm, summarize
from kernel_gym.tasks import load_task

FILL = ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >"
        "(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)")
MUL = ("void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, float, float, "
       "at::native::binary_internal::MulFunctor<float> >, std::array<char*, 3ul> >(int, ...)")
GEMM = "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment_k_off_kernel"


def trace(*kernels: tuple[str, float]) -> list[FunctionEvent]:
    events, t = [], 0.0
    for name, us in kernels:
        events.append(FunctionEvent(len(events), name, 1, t, t + us, device_type=DeviceType.CUDA,
                                    device_resource_id=7, use_device="cuda"))
        t += us
    return events


def test_fill_of_the_own_output_is_not_library_time():
    """issue 22: a `torch::zeros` output fill beside the kernel read as 49.3 % own time."""
    prof = summarize(trace((FILL, 10.0), ("relu_positive_store", 10.3)), {"relu_positive_store"})
    assert prof.share == pytest.approx(1.0) and prof.top == []


def test_library_compute_still_counts():
    prof = summarize(trace((FILL, 10.0), ("relu_kernel", 10.0), (MUL, 30.0)), {"relu_kernel"})
    assert prof.share == pytest.approx(0.25) and prof.top == [MUL]


def test_library_gemm_counts_on_a_single_gemm_task():
    policy = {t: task_policy(load_task(t).source) for t in ("level1/matmul", "level2/gemm_relu")}
    events = trace((GEMM, 990.0), ("touch", 10.0))
    keep_out = excludes_library_gemm("standard", policy["level2/gemm_relu"])
    assert keep_out and summarize(events, {"touch"}, keep_out).share == pytest.approx(1.0)
    keep_in = excludes_library_gemm("standard", policy["level1/matmul"])
    assert not keep_in and summarize(events, {"touch"}, keep_in).share == pytest.approx(0.01)
    assert not excludes_library_gemm("permissive", policy["level1/matmul"])
    assert excludes_library_gemm("standard") and not excludes_library_gemm("strict")


def streams(*kernels: tuple[str, int]) -> list[FunctionEvent]:
    """Device events of 1 µs each, in order, on the given profiler stream ids."""
    return [FunctionEvent(i, name, 1, float(i), i + 1.0, device_type=DeviceType.CUDA, device_resource_id=sid,
                          use_device="cuda") for i, (name, sid) in enumerate(kernels)]


def test_a_kernel_off_the_gated_streams_is_ungated():
    prof = summarize(streams(("sleep", 7), ("sleep", 20), ("relu", 7), ("relu_side", 33)), {"relu"}, markers=2)
    assert prof.ungated == ["relu_side"] and prof.skipped is None


def test_a_trace_without_its_markers_skips_the_stream_check_and_says_so():
    """A trace that does not start with one marker per gated stream (a profiler that dropped events) never makes a
    genuine solution look ungated; what it held instead is reported (`stream_check_skipped_*` signals)."""
    prof = summarize(streams(("sleep", 7), ("relu", 7), ("relu_side", 33)), {"relu"}, markers=2)
    assert prof.ungated == []
    assert prof.skipped == {"markers": 2.0, "lead": 1.0, "ids": 1.0, "events": 3.0}
