"""Ctrl-C reaches a rollout at once even when the kernel hands SIGINT to another thread than the main one (it may:
any thread that does not block it). CPython runs the handler only in the main thread, and only once that thread runs
bytecode again: a main thread in a blocking wait for the steps in flight held `kernel-gym rollout`'s Ctrl-C for
~100 s (tests/rollout/test_rollout_cli.py saw it under load). The driver's waits wake twice a second."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

CHILD = """
import os, signal, sys, threading, time
from concurrent.futures import ThreadPoolExecutor
from kernel_gym.rollout.driver import _waited

signal.signal(signal.SIGINT, lambda *_: os._exit(130))

def step():  # a step in flight; the signal arrives on its thread, not on the main one
    time.sleep(0.5)
    signal.pthread_kill(threading.get_ident(), signal.SIGINT)
    time.sleep(30)

with ThreadPoolExecutor(2) as pool:
    futures = [pool.submit(step)]
    _waited(futures, first_exception=sys.argv[1] == "first")
os._exit(0)
"""


@pytest.mark.parametrize("mode", ["first", "all"])
def test_a_signal_on_another_thread_reaches_the_waiting_main_thread(repo_root, mode):
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", CHILD, mode], cwd=repo_root, capture_output=True, text=True,
                          timeout=60)
    took = time.monotonic() - t0
    assert proc.returncode == 130, (proc.returncode, proc.stderr[-2000:])
    assert took < 10, took  # (the step ends at 30 s: a blocking wait would run its handler only then)
