"""CUDA stream memory operations: a 64-bit value written to device memory in stream order, and a stream that waits
until memory holds a value (`cuStreamWriteValue64`, `cuStreamWaitValue64`, through the driver with ctypes).

The judge's clock ends a timed call with them instead of an interprocess event: the runner writes the call's nonce
into a flag in the judge's memory after its work, and the judge's end waits for that value. Measured on an H100
(benchmarks/probe_wait_value.py, RESULTS.md): a judge stream waiting on a dead runner's interprocess event is never
released and takes the judge's whole GPU context with it, while a wait on a value is released by the judge writing
the value itself, and the reading is the event's within 0.2 µs."""

from __future__ import annotations

import ctypes
import functools

WAIT_EQ = 0x1  # CU_STREAM_WAIT_VALUE_EQ
WRITE_DEFAULT = 0x0  # CU_STREAM_WRITE_VALUE_DEFAULT


class StreamValueError(RuntimeError):
    """The driver refused a stream memory operation."""


@functools.cache
def _functions() -> tuple[ctypes._CFuncPtr, ctypes._CFuncPtr]:
    lib = ctypes.CDLL("libcuda.so.1")  # already loaded by torch's CUDA runtime: no new library enters the process
    found = []
    for name in ("cuStreamWriteValue64", "cuStreamWaitValue64"):
        fn = getattr(lib, f"{name}_v2", None) or getattr(lib, name)  # _v2: CUDA 11.7+, no device attribute needed
        fn.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint]
        fn.restype = ctypes.c_int
        found.append(fn)
    return found[0], found[1]


def bind() -> None:
    """Resolve the driver's functions now (a runner does it before it imports the candidate's code)."""
    _functions()


def write(stream: int, address: int, value: int) -> None:
    """Queue on `stream` (a raw CUstream) the write of `value` into the 8 bytes at device `address`."""
    rc = _functions()[0](ctypes.c_void_p(stream), address, value, WRITE_DEFAULT)
    if rc:
        raise StreamValueError(f"cuStreamWriteValue64 failed: CUresult {rc}")


def wait(stream: int, address: int, value: int) -> None:
    """Queue on `stream` a wait until the 8 bytes at device `address` equal `value`."""
    rc = _functions()[1](ctypes.c_void_p(stream), address, value, WAIT_EQ)
    if rc:
        raise StreamValueError(f"cuStreamWaitValue64 failed: CUresult {rc}")


@functools.cache
def usable(device_index: int) -> bool:
    """Whether this device and driver take stream memory operations: one write and one wait, done within 5 s.
    `KERNEL_GYM_STREAM_VALUES=0` turns them off (the end then waits for the runner's interprocess event)."""
    import os
    import time

    import torch

    if os.environ.get("KERNEL_GYM_STREAM_VALUES", "1").strip() == "0":
        return False
    try:
        device = torch.device("cuda", device_index)
        flag = torch.zeros(1, dtype=torch.int64, device=device)
        torch.cuda.synchronize(device)
        stream = torch.cuda.Stream(device)
        write(stream.cuda_stream, flag.data_ptr(), 0x5EED)
        stream.synchronize()
        if int(flag.item()) != 0x5EED:
            return False
        # the value is in place before the wait is queued: a driver that honours it passes at once, and nothing of
        # this check can be left waiting (on an H100 a wait released by an ordinary kernel's store, 629bd68's
        # check, never completed; the runner and the judge release theirs with stream writes, as measured)
        done = torch.cuda.Event()
        wait(stream.cuda_stream, flag.data_ptr(), 0x5EED)
        done.record(stream)
        deadline = time.monotonic() + 5.0
        while not done.query():
            if time.monotonic() > deadline:
                return False
            time.sleep(1e-4)
        return True
    except (OSError, AttributeError, StreamValueError, RuntimeError):
        return False
