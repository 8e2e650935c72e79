"""Diagnostics for the launch gate's stream check (harness/profile.py): what the profiler reports for the marker
kernels on the gated streams and for a kernel on a CuPy stream wrapped as `torch.cuda.ExternalStream`, as a runner
sees it (streams tracked from the start). Prints the device events and the check's decision.

    python benchmarks/probe_streams.py            # on a machine with an NVIDIA GPU and CuPy
"""

from __future__ import annotations

import torch

from kernel_gym.harness import profile, timing


def main() -> None:
    timing.track_streams()
    dev = torch.device("cuda")
    x = torch.randn(1 << 24, device=dev)
    for non_blocking in (False, True):
        import cupy

        raw = cupy.cuda.Stream(non_blocking=non_blocking)
        ext = torch.cuda.ExternalStream(raw.ptr)
        gated = timing.gated_streams(dev)
        print(f"\nnon_blocking={non_blocking}: gated streams {[s.cuda_stream for s in gated]}, external {ext.cuda_stream},"
              f" tracked {ext.cuda_stream in timing._MADE}")  # noqa: SLF001

        def fn(ext: torch.cuda.ExternalStream = ext) -> None:
            with torch.cuda.stream(ext):
                torch.relu(x)
            torch.cuda.synchronize()

        from torch.profiler import ProfilerActivity
        from torch.profiler import profile as torch_profile

        for attempt in range(2):  # the profiler's first start differs (CUPTI)
            with torch_profile(activities=[ProfilerActivity.CUDA]) as prof:
                for stream in gated:
                    with torch.cuda.stream(stream):
                        torch.cuda._sleep(1)
                torch.cuda.synchronize()
                fn()
                torch.cuda.synchronize()
            events = sorted((e for e in prof.events() if e.device_type == profile._CUDA),  # noqa: SLF001
                            key=lambda e: e.time_range.start)
            print(f"  attempt {attempt}: {len(events)} device events")
            for e in events[:12]:
                print(f"    {e.name[:60]:60s} resource={e.device_resource_id} start={e.time_range.start}")
            result = profile.summarize(prof.events(), {"relu"}, markers=len(gated))
            print(f"  summarize: ungated={result.ungated} share={result.share:.3f}")


if __name__ == "__main__":
    main()
