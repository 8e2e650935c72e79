"""Tensors the judge owns and a runner maps: one byte arena per set, carved into aligned views.

- cpu: an anonymous `memfd` (no name in /dev/shm, so no other process can open it), passed to the one runner it is
  meant for over the channel (SCM_RIGHTS) and mmapped by both; its size sealed (no runner can truncate it under the
  judge's mapping).
- cuda: one device allocation shared with CUDA IPC (torch's own reduction; the handle travels as base64 of the
  pickled rebuild arguments, judge -> runner only: a runner never sends pickle).

The judge creates (`Arena`), the runner attaches (`attach`). Layout: a list of (shape, dtype) in order.

In a candidate's runner on cpu the attached views refuse to become numpy or DLPack arrays (`refuse_views`): numpy
compute on an input (`x.numpy() @ w.numpy()`) dispatches no aten op, so the op audit would not see it. That closes
the direct routes only; a copy (`x.clone().numpy()`), `torch._C.TensorBase.numpy(x)` (a C method that cannot be
replaced) or a pointer (`ctypes` on `data_ptr()`) still reach numpy: on the CPU backend library compute behind forged
evidence is not seen (docs/anti-hacking.md); on cuda the profiler share is the check.
"""

from __future__ import annotations

import base64
import fcntl
import mmap
import os
import pickle
import threading
import weakref
from dataclasses import dataclass
from typing import Any

import torch

ALIGN = 256


def dtype_of(name: str) -> torch.dtype:
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"unknown dtype {name!r}")
    return dtype


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


@dataclass(frozen=True)
class Spec:
    shape: tuple[int, ...]
    dtype: str

    @property
    def nbytes(self) -> int:
        n = 1
        for s in self.shape:
            n *= int(s)
        return n * dtype_of(self.dtype).itemsize

    @classmethod
    def of(cls, t: torch.Tensor) -> Spec:
        return cls(tuple(int(s) for s in t.shape), dtype_name(t.dtype))

    def to_json(self) -> list:
        return [list(self.shape), self.dtype]

    @classmethod
    def from_json(cls, v: Any) -> Spec:
        shape, dtype = v
        if not isinstance(shape, list) or not all(isinstance(s, int) and s >= 0 for s in shape):
            raise ValueError(f"bad shape {shape!r}")
        dtype_of(dtype)
        return cls(tuple(shape), dtype)


def _offsets(specs: list[Spec]) -> tuple[list[int], int]:
    offsets, at = [], 0
    for s in specs:
        offsets.append(at)
        at += (s.nbytes + ALIGN - 1) // ALIGN * ALIGN
    return offsets, max(at, ALIGN)


def _views(base: torch.Tensor, specs: list[Spec], offsets: list[int]) -> list[torch.Tensor]:
    return [base[o:o + s.nbytes].view(dtype_of(s.dtype)).view(s.shape) for s, o in zip(specs, offsets)]


_RETIRED: list[Any] = []  # the private pools of closed cuda arenas, freed by release_retired()
_RETIRED_LOCK = threading.Lock()


def release_retired() -> int:
    """Free the memory of closed cuda arenas; how many pools went. Freeing memory (cudaFree) synchronizes the
    judge's whole device, which would wait out any pending end of a timed call, with the GIL held: so it happens
    only here, where the judge frees memory on purpose with no call being timed (judge/pool.py), never in the thread
    that closes an arena."""
    with _RETIRED_LOCK:
        pools = list(_RETIRED)
        _RETIRED.clear()
    count = len(pools)
    del pools
    return count


def retired_count() -> int:
    """How many closed cuda arenas' pools wait for release_retired()."""
    with _RETIRED_LOCK:
        return len(_RETIRED)


def _retire_pool(pool: Any) -> None:
    with _RETIRED_LOCK:
        _RETIRED.append(pool)


def _alone(size: int, device: torch.device) -> tuple[torch.Tensor, Any]:
    """`size` bytes of device memory in an allocation that holds nothing else. CUDA IPC maps a runner the whole
    allocation (the caching allocator's segment) a shared tensor lies in, not the tensor alone: from torch's shared
    pool, a runner could reach whatever else of the judge's shares that segment (another job's buffers, the
    reference's outputs, another runner's flag). A private memory pool per arena keeps its segment to itself."""
    if os.environ.get("KERNEL_GYM_PRIVATE_ARENAS", "1").strip() == "0":
        return torch.empty(size, dtype=torch.uint8, device=device), None
    pool = torch.cuda.MemPool()
    with torch.cuda.use_mem_pool(pool, device.index if device.index is not None else torch.cuda.current_device()):
        base = torch.empty(size, dtype=torch.uint8, device=device)
    return base, pool


class Arena:
    """Judge side: tensors of the given specs in memory that one runner can map."""

    def __init__(self, specs: list[Spec], device: torch.device):
        self.specs, self.device = list(specs), device
        offsets, size = _offsets(self.specs)
        self._fd: int | None = None
        self._mm: mmap.mmap | None = None
        self._pool_done: weakref.finalize | None = None
        if device.type == "cuda":
            self.base, pool = _alone(size, device)
            # however the arena goes (closed, or dropped), its pool goes to _RETIRED, never freed here and now
            self._pool_done = weakref.finalize(self, _retire_pool, pool) if pool is not None else None
        else:
            self._fd = os.memfd_create("kernel_gym_arena", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
            os.ftruncate(self._fd, size)
            # its size sealed: a runner that truncated the file (its mmap keeps a descriptor) would make the judge's
            # next read of the arena a SIGBUS, which kills the judge and every job it runs
            fcntl.fcntl(self._fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
            self._mm = mmap.mmap(self._fd, size)
            self.base = torch.frombuffer(self._mm, dtype=torch.uint8)
        self.offsets = offsets
        self.tensors = _views(self.base, self.specs, offsets)
        self._counter: tuple[bytes, int] | None = None  # cuda, once shared: torch's IPC reference counter for it

    def descriptor(self) -> tuple[dict[str, Any], list[int]]:
        """What the runner needs to map the arena: a JSON-able dict and the descriptors to pass with it."""
        layout = [s.to_json() for s in self.specs]
        if self.device.type == "cuda":
            from torch.multiprocessing.reductions import reduce_tensor

            _, args = reduce_tensor(self.base)
            self._counter = (args[11], args[12])  # (ref_counter_handle, ref_counter_offset)
            return {"kind": "cuda", "layout": layout, "handle": base64.b64encode(pickle.dumps(args)).decode()}, []
        return {"kind": "cpu", "layout": layout, "size": int(self.base.numel())}, [self._fd]

    def close(self) -> None:
        """The judge is done with the arena. A cuda arena a runner mapped keeps its memory until `retire` (its runner
        ended its job or is dead): memory must not be freed while another process maps it (CUDA: undefined)."""
        self.tensors = []
        if self._counter is None:
            self.base = None
            if self._pool_done is not None:  # (its memory stays cached in the pool until release_retired)
                self._pool_done()
                self._pool_done = None
        if self._mm is not None:
            try:
                self._mm.close()
            except BufferError:  # a view still alive somewhere: the mapping goes with it
                pass
            self._mm = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def retire(self) -> None:
        """The runner it was shared with no longer maps it: it ended its job (it let go of its views) or it is dead.
        Either way torch's IPC count of the share is released here, by the judge (`release_count`), then the
        memory goes."""
        self.release_count()
        self.close()

    def release_count(self) -> None:
        """Release torch's IPC count of the runner's share, without freeing anything (the memory stays with this
        object until `close`). torch counts a share until the consumer's views are freed, and the consumer's
        release writes a reference-counter file of the judge's, `/dev/shm/torch_*`, mode 0600: a runner under a uid
        of its own (the default as root) cannot open it, and a dead runner released nothing. Before this, every
        buffer the judge shared stayed in torch's IPC limbo for as long as the judge ran (an H100's judge held
        69 GiB after 15 GPU tests). So the judge releases the count itself, whether the runner ended its job or is
        dead; where the runner could release its own (same uid), the
        count goes below 0, which torch treats as released (its limbo keeps a block only while the count is > 0),
        and a counter's slot is never handed to a later share (torch takes the next offset of its file)."""
        if self._counter is not None:
            torch.UntypedStorage._release_ipc_counter(*self._counter, device=self.device)
        self._counter = None


class Attached:
    """Runner side: the views of an arena the judge shared."""

    def __init__(self, descriptor: dict[str, Any], fds: list[int], device: torch.device):
        specs = [Spec.from_json(v) for v in descriptor["layout"]]
        offsets, size = _offsets(specs)
        self._mm: mmap.mmap | None = None
        if descriptor["kind"] == "cuda":
            from torch.multiprocessing.reductions import rebuild_cuda_tensor

            base = rebuild_cuda_tensor(*pickle.loads(base64.b64decode(descriptor["handle"])))
        else:
            if len(fds) != 1:
                raise ValueError("a cpu arena comes with exactly one descriptor")
            self._mm = mmap.mmap(fds[0], size)
            os.close(fds[0])
            base = torch.frombuffer(self._mm, dtype=torch.uint8)
        if base.numel() < size:
            raise ValueError("the arena is smaller than its layout")
        self.tensors = _views(base, specs, offsets)
        self._base = base
        if base.device.type == "cpu":
            _ATTACHED[id(self)] = (base.data_ptr(), base.data_ptr() + size)

    def close(self) -> None:
        _ATTACHED.pop(id(self), None)
        self.tensors = []
        self._base = None
        if self._mm is not None:
            try:
                self._mm.close()
            except BufferError:
                pass
            self._mm = None


# ---- numpy and DLPack views of the judge's tensors (candidate runners) ------------------------------------------------

_ATTACHED: dict[int, tuple[int, int]] = {}  # id(Attached) -> [start, end) of its cpu mapping
_REFUSING: list[bool] = [False]  # on in a candidate's runner (runner/serve.py), off in the reference's
VIEWS = ("numpy", "__array__", "__dlpack__")  # Tensor methods that hand out the tensor's memory to another library


def _shared(tensor: torch.Tensor) -> bool:
    """Whether `tensor`'s memory is one of the judge's arenas this runner mapped (any view of one)."""
    if not _REFUSING[0] or not _ATTACHED:
        return False
    try:
        start = tensor.untyped_storage().data_ptr()
    except (RuntimeError, TypeError, AttributeError):
        return False
    return any(low <= start < high for low, high in _ATTACHED.values())


def _refusing(name: str, original: Any) -> Any:
    def view(self: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        if _shared(self):
            raise RuntimeError(f"Tensor.{name}() of an input the judge shares is refused in this harness: numpy or "
                               "other libraries' compute on it is not the solution's kernel (on the CPU backend no "
                               "check could see it); compute with your own kernels")
        return original(self, *args, **kwargs)

    view.__name__, view.__qualname__, view.__doc__ = name, f"Tensor.{name}", getattr(original, "__doc__", None)
    view.kernel_gym_refusing = True
    return view


def install_view_guards() -> None:
    """Wrap torch.Tensor's numpy/DLPack methods (once per process, before the harness snapshot: a solution that puts
    the originals back is harness tampering). They act only after `refuse_views()`."""
    for name in VIEWS:
        current = getattr(torch.Tensor, name, None)
        if current is not None and not getattr(current, "kernel_gym_refusing", False):
            setattr(torch.Tensor, name, _refusing(name, current))


def refuse_views() -> None:
    """From now on the views of this process's attached arenas refuse numpy and DLPack (a candidate's runner)."""
    install_view_guards()
    _REFUSING[0] = True
