"""The per-GPU lock (kernel_gym.eval.timing.device_lock): shared holders run together, an exclusive holder (timing)
runs alone, and a waiting exclusive holder goes before shared holders that arrive after it (no starvation).
Exercised with threads on lock files in a temporary directory (flock locks of separate opens conflict)."""

from __future__ import annotations

import threading
import time

import torch

from kernel_gym.eval import timing


def test_shared_together_exclusive_alone_and_timers_not_starved(tmp_path, monkeypatch):
    monkeypatch.setattr(timing, "_lock_paths", lambda device: (tmp_path / "gpu.lock", tmp_path / "gpu.gate"))
    events: list[tuple[str, str, float]] = []
    t0 = time.perf_counter()

    def hold(name: str, exclusive: bool, start: float, seconds: float) -> None:
        time.sleep(start)
        with timing.device_lock(torch.device("cuda"), exclusive=exclusive):
            events.append((name, "in", time.perf_counter() - t0))
            time.sleep(seconds)
            events.append((name, "out", time.perf_counter() - t0))

    plan = [("shared_a", False, 0.0, 0.6), ("shared_b", False, 0.05, 0.2), ("timer", True, 0.15, 0.3),
            ("shared_late", False, 0.3, 0.1)]
    threads = [threading.Thread(target=hold, args=p) for p in plan]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    at = {(n, k): t for n, k, t in events}
    assert at[("shared_b", "in")] < at[("shared_a", "out")]  # shared holders overlap
    assert at[("timer", "in")] >= at[("shared_a", "out")] and at[("timer", "in")] >= at[("shared_b", "out")]
    assert at[("shared_late", "in")] >= at[("timer", "out")]  # arrived while the timer waited: queued behind it


def test_no_lock_on_cpu():
    with timing.device_lock(torch.device("cpu"), exclusive=True) as wait:
        assert wait.seconds == 0.0 and wait.acquired


def test_a_stuck_holder_delays_others_only_up_to_the_timeout(tmp_path, monkeypatch):
    """A job stuck with the lock (a hung kernel until its run timeout) must not make other jobs time out."""
    monkeypatch.setattr(timing, "_lock_paths", lambda device: (tmp_path / "gpu.lock", tmp_path / "gpu.gate"))
    release = threading.Event()

    def stuck() -> None:
        with timing.device_lock(torch.device("cuda"), exclusive=False):
            release.wait(5)

    holder = threading.Thread(target=stuck)
    holder.start()
    time.sleep(0.1)
    t0 = time.perf_counter()
    with timing.device_lock(torch.device("cuda"), exclusive=True, timeout_s=0.3) as wait:
        assert not wait.acquired and 0.25 < wait.seconds < 2.0
    assert time.perf_counter() - t0 < 2.0
    release.set()
    holder.join()
    with timing.device_lock(torch.device("cuda"), exclusive=True, timeout_s=0.3) as wait:
        assert wait.acquired  # and the lock works again once the holder is gone
