"""benchmarks/compare_cost.py on cpu: one row per output size and chunk, each pass timed and its ops counted; a larger
chunk dispatches fewer ops (what the GPU run measures in time)."""

from __future__ import annotations

import importlib.util
import pathlib

import torch

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "compare_cost.py"


def test_a_larger_chunk_dispatches_fewer_ops_and_the_chunk_is_put_back():
    spec = importlib.util.spec_from_file_location("compare_cost", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    from kernel_gym.judge import compare

    before = compare.CHUNK
    small, large = (module.measure(1 << 16, c, torch.device("cpu"), 1) for c in (12, 16))
    assert compare.CHUNK == before
    for name in ("fixed", "budget"):
        assert small[name]["ms"] > 0 and large[name]["ops"] > 0
        assert small[name]["ops"] > 4 * large[name]["ops"], (small, large)  # 16 chunks against 1
