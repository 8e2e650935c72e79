"""The profiler's stream check (kernel_gym/harness/profile.py `summarize`), on real torch FunctionEvents built by hand:
which kernels ran on a stream the launch gate cannot hold, and the guards that keep a trace without usable stream
ids from ever making a genuine solution look ungated. The check on a real trace is in test_gpu_attacks.py."""

from __future__ import annotations

import pytest
from torch.autograd import DeviceType
from torch.autograd.profiler_util import FunctionEvent

from kernel_gym.harness.profile import summarize

MARK = "void at::native::(anonymous namespace)::spin_kernel(long)"


def trace(*kernels: tuple[str, int], markers: tuple[int, ...] = (7, 13, 14, 15)) -> list[FunctionEvent]:
    """Marker kernels on the given stream ids, then the call's kernels (name, stream id), 10 us each, plus a CPU
    event and a memory event that must be ignored."""
    events, t = [], 0.0
    for sid in markers:
        events.append(FunctionEvent(len(events), MARK, 1, t, t + 1.0, device_type=DeviceType.CUDA,
                                    device_resource_id=sid, use_device="cuda"))
        t += 0.5  # markers on different streams overlap
    t += 50.0
    for name, sid in kernels:
        events.append(FunctionEvent(len(events), name, 1, t, t + 10.0, device_type=DeviceType.CUDA,
                                    device_resource_id=sid, use_device="cuda"))
        t += 10.0
    events.append(FunctionEvent(len(events), "cudaLaunchKernel", 1, 0.0, 1.0))  # host side
    events.append(FunctionEvent(len(events), "[memory]", 1, t, t, device_type=DeviceType.CUDA, device_resource_id=99,
                                use_device="cuda"))
    return events[::-1]  # order in the list does not matter: start times do


def test_kernels_on_gated_streams_are_not_flagged():
    prof = summarize(trace(("_relu_kernel", 7), ("_relu_kernel", 14)), {"_relu_kernel"}, markers=4)
    assert prof.ungated == []
    assert prof.share == pytest.approx(1.0) and prof.total_ms == pytest.approx(0.02)


def test_kernel_on_another_stream_is_ungated():
    prof = summarize(trace(("_relu_kernel", 7), ("_side_kernel", 42), ("Memcpy DtoD", 42)), {"_relu_kernel"},
                     markers=4)
    assert prof.ungated == ["Memcpy DtoD", "_side_kernel"]
    assert prof.share == pytest.approx(0.5)  # the markers are not counted as library time, the copy neither


def test_markers_are_left_out_of_the_share_without_stream_check():
    prof = summarize(trace(("_relu_kernel", 7), markers=()), {"_relu_kernel"})
    assert prof.ungated == [] and prof.share == pytest.approx(1.0)


@pytest.mark.parametrize("markers, ids", [
    (5, (7, 13, 14, 15)),  # a marker event went missing
    (4, (7, 7, 7, 7)),  # ids that are not per stream (e.g. no stream ids at all)
])
def test_stream_check_skipped_when_the_trace_is_not_as_expected(markers, ids):
    prof = summarize(trace(("_relu_kernel", 7), ("_relu_kernel", 42), markers=ids), {"_relu_kernel"},
                     markers=markers)
    assert prof.ungated == []
