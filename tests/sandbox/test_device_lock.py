"""The per-GPU lock (kernel_gym.judge.gpu_lock.device_lock): shared holders run together, an exclusive holder (timing)
runs alone, and a waiting exclusive holder goes before shared holders that arrive after it (no starvation).
Exercised with threads on lock files in a temporary directory (flock locks of separate opens conflict)."""

from __future__ import annotations

import threading
import time

import torch

from kernel_gym.judge import gpu_lock as timing


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


def test_timers_of_one_process_get_the_gpu_in_the_order_they_asked(tmp_path, monkeypatch):
    """The machine's judge times the jobs of every client on the GPU: its waiting timers go first come, first
    served, so no client's job waits behind an unbounded run of later ones (#21: none starves)."""
    monkeypatch.setattr(timing, "_lock_paths", lambda device: (tmp_path / "gpu.lock", tmp_path / "gpu.gate"))
    order: list[int] = []
    holding = threading.Event()

    def first() -> None:
        with timing.device_lock(torch.device("cuda"), exclusive=True):
            holding.set()
            time.sleep(0.4)

    def timer(i: int) -> None:
        with timing.device_lock(torch.device("cuda"), exclusive=True):
            order.append(i)
            time.sleep(0.02)

    threads = [threading.Thread(target=first)]
    threads[0].start()
    holding.wait(5)
    for i in range(6):
        threads.append(threading.Thread(target=timer, args=(i,)))
        threads[-1].start()
        time.sleep(0.03)  # they ask in this order while the first holds the GPU
    for t in threads:
        t.join()
    assert order == list(range(6)), order


def test_a_timer_that_gives_up_leaves_the_line(tmp_path, monkeypatch):
    monkeypatch.setattr(timing, "_lock_paths", lambda device: (tmp_path / "gpu.lock", tmp_path / "gpu.gate"))
    got: dict[str, bool] = {}
    holding = threading.Event()

    def holder() -> None:
        with timing.device_lock(torch.device("cuda"), exclusive=False):
            holding.set()
            time.sleep(1.0)

    def timer(name: str, timeout_s: float) -> None:
        with timing.device_lock(torch.device("cuda"), exclusive=True, timeout_s=timeout_s) as wait:
            got[name] = wait.acquired

    threads = [threading.Thread(target=holder)]
    threads[0].start()
    holding.wait(5)
    for name, timeout_s in (("impatient", 0.3), ("patient", 10.0)):
        threads.append(threading.Thread(target=timer, args=(name, timeout_s)))
        threads[-1].start()
        time.sleep(0.05)
    for t in threads:
        t.join()
    assert got == {"impatient": False, "patient": True}, got
