"""What a runner does for the judge, one request at a time: load a module, build a model, map the judge's shared
tensors, call the model on them and copy its outputs into the judge's buffers, and report what it saw.

Everything a runner returns is *evidence* (launch counts, the ops it dispatched, threads left running, harness
changes, profiler shares, output structure): the judge decides. A runner never holds an input seed, an expected
output, a tolerance or a verdict, so candidate code that takes the runner over can at worst lie about evidence.
"""

from __future__ import annotations

import gc
import os
import shutil
import tempfile
import threading
import time
import types
from pathlib import Path
from typing import Any

import torch

from kernel_gym import cuda_raw
from kernel_gym.harness import cuda, dsl_launches, integrity, launches, stream_values
from kernel_gym.harness.errors import trim
from kernel_gym.harness.integrity import Snapshot
from kernel_gym.harness.timing import gated_streams, hold_new_streams
from kernel_gym.runner import building
from kernel_gym.runner.evidence import audited, flatten, json_value, profiled
from kernel_gym.runner.refusal import CPU_ONLY, Refusal
from kernel_gym.sandbox import limits
from kernel_gym.sandbox.shared import Attached, dtype_name
from kernel_gym.tasks import loading

PROBE = bool(os.environ.get("KERNEL_GYM_RUNNER_PROBE"))  # benchmarks only: see Session.probe


class Session:
    """The runner's state across the requests of one job (models, mapped tensors) and across jobs (the device)."""

    def __init__(self, device: str, root: Path, snapshot: Snapshot):
        self.device = torch.device("cuda", torch.cuda.current_device()) if device == "cuda" else torch.device(device)
        self.root, self.snapshot = root, snapshot
        self.modules: dict[str, types.ModuleType] = {}
        self.models: dict[str, Any] = {}
        self.slots: dict[str, Attached] = {}
        self.events: dict[str, Any] = {}
        self.flag: Attached | None = None  # cuda: the judge's flag a timed call's nonce is written into
        self.workdir: Path | None = None
        self.compiled = False
        self.triton_launches: dict = {}
        self.first_threads: set[threading.Thread] = set()
        self.join_events: list[Any] = []
        self.fan_out = torch.cuda.Event() if self.device.type == "cuda" else None
        self.scratch: dict[Any, list[torch.Tensor]] = {}
        self.probes: list[tuple[Any, Any]] = []
        self.marks: list[list[float]] = []  # host ms per timed call: bind, launch, join+done, deliver+evidence
        self.mark: list[float] | None = None
        self.state: dict[str, Any] = {}  # process-wide settings at the job's start (integrity.process_state)

    # ---- job lifecycle -------------------------------------------------------------------------------------------
    def begin(self) -> dict[str, Any]:
        self.workdir = Path(tempfile.mkdtemp(prefix="job_", dir=limits.jobs_folder(self.root)))
        # every library cache, HOME and TMPDIR: this job's own (limits.job_environment; serve.py works in its folder)
        os.environ.update(limits.job_environment(self.workdir))
        tempfile.tempdir = None
        cuda_raw.CACHE_ROOT = self.workdir / "cuda_raw"  # NVRTC's cubins: this job's own (no shared cache)
        cuda_raw._MEMO.clear()  # noqa: SLF001 - nothing compiled in an earlier job of this runner is reused
        cuda.KERNEL_NAMES.clear()  # the kernels this job's extensions define (evidence of this job only)
        self.first_threads = set(threading.enumerate())
        self.state = integrity.process_state()  # (after the harness's own settings for this job)
        return {}

    def end(self) -> dict[str, Any]:
        """Drop the job's state; report what it left behind (a reused runner must be clean)."""
        for module in self.modules.values():
            loading.unload(module)
        self.modules.clear()
        self.models.clear()
        for slot in self.slots.values():
            slot.close()
        self.slots.clear()  # (the judge's interprocess events stay: they serve every job of this runner)
        launches.STATE.reset()
        self.compiled = False
        self.scratch.clear()
        if self.device.type == "cuda":  # an idle runner keeps its CUDA context only: what the job's tensors held
            gc.collect()  # goes back to the driver, for the jobs of every other runner on this GPU
            torch.cuda.empty_cache()
            torch.cuda.ipc_collect()
        leftover = [t for t in threading.enumerate() if t not in self.first_threads and t.is_alive()]
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None
        state = integrity.restore_state(self.state) if self.state else []  # (what could not be put back)
        return {"leftover_threads": len(leftover), "harness": self.snapshot.changes(), "state": state}

    # ---- loading and building ------------------------------------------------------------------------------------
    def load(self, kind: str, name: str, source: str, sizes: dict[str, Any] | None = None) -> dict[str, Any]:
        """Load a module: the candidate from a real file in the job's folder (load_inline builds here), or the
        task's reference with its size globals."""
        threads = set(threading.enumerate())
        if kind == "reference":
            self.modules[name] = loading.load_reference(source, sizes or {})
            return {"threads_started": 0}
        cuda_raw.COMPILED.clear()
        try:
            module = loading.load_candidate(source, self.workdir or limits.jobs_folder(self.root))
        except cuda.CudaSourcesCaptured as captured:  # the judge compiles the source itself (judge/compile_check.py)
            raise Refusal("unsupported", CPU_ONLY.format(how="nvcc check"),
                          compile_check={"kind": "nvcc", "source": captured.kwargs.get("cuda_sources", "")}) from None
        except cuda_raw.NoCudaDevice as no_device:
            from kernel_gym.signals import collect

            signals = collect.cuda_raw_compile_signals(no_device.module, source)
            raise Refusal("unsupported", CPU_ONLY.format(how=f"NVRTC, {no_device.module.arch}"), signals=signals,
                          compile_check={"kind": "nvrtc", "source": no_device.module.source,
                                         "options": list(no_device.module.options)}) from None
        except cuda_raw.CompileError as error:
            raise Refusal("compile_error", "NVRTC failed on the CUDA source:\n" + trim(error.log)) from None
        if not hasattr(module, "ModelNew"):
            raise Refusal("compile_error", "the code defines no ModelNew")
        dsl_launches.install()
        self.modules[name] = module
        started = [t for t in threading.enumerate() if t not in threads and t.is_alive()]
        return {"threads_started": len(started), "harness": self.snapshot.changes()}

    def build(self, name: str, module: str, cls: str, init: list[Any], seed: int,
              dtype: str | None = None, through: str | None = None, copy_as: str | None = None,
              copy_dtype: str | None = None) -> dict[str, Any]:
        """Construct `cls` of a loaded module (runner/building.py: seeded, cast, on the device). `copy_as` (the
        reference's runner): also keep its float64 twin under that name, made before any call, for the judge's
        oracle; the reply's `twin` says whether it was made."""
        threads = set(threading.enumerate())
        model = building.construct(self.modules[module], cls, init, seed, self.device, dtype, through)
        self.models[name] = model
        reply: dict[str, Any] = {}
        if copy_as is not None:
            self.models.pop(copy_as, None)
            copied, reply["twin"] = building.twin(model, copy_dtype)
            if copied is not None:
                self.models[copy_as] = copied
        started = [t for t in threading.enumerate() if t not in threads and t.is_alive()]
        return {**reply, "threads_started": len(started), "harness": self.snapshot.changes()}

    def bind(self, slot: str, descriptor: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        old = self.slots.pop(slot, None)
        if old is not None:
            old.close()
        self.slots[slot] = Attached(descriptor, fds, self.device)
        return {}

    def bind_events(self, flag: dict[str, Any] | None = None, **handles: str) -> dict[str, Any]:
        """The judge's interprocess events: "go" (the call's inputs are in place and it may start) and "done" (its
        work is over and its outputs are in the judge's buffers: the end of the timed interval); and, where the
        driver takes stream memory operations, the judge's flag: "done" is then the call's nonce written there."""
        import base64

        self.events = {name: torch.cuda.Event.from_ipc_handle(self.device, base64.b64decode(handle))
                       for name, handle in handles.items() if name in ("go", "done")}
        if flag is not None:
            stream_values.bind()
            self.flag = Attached(flag, [], self.device)
        return {}

    def finish(self, stream: Any, nonce: int | None) -> None:
        """The end of a timed call's work on `stream`: the nonce into the judge's flag, else the "done" event."""
        if nonce is not None and self.flag is not None:
            stream_values.write(stream.cuda_stream, self.flag.tensors[0].data_ptr(), nonce)
        else:
            self.events["done"].record(stream)

    # ---- calls ---------------------------------------------------------------------------------------------------
    def inputs(self, spec: list[Any], slot: str) -> list[Any]:
        """The call's arguments: fresh views of the judge's shared tensors (new objects each call), values as given."""
        tensors = self.slots[slot].tensors
        return [tensors[item["t"]].view(tensors[item["t"]].shape) if "t" in item else item["v"] for item in spec]

    def poison(self, nbytes: int) -> None:
        """cuda: fill memory the allocator hands out next with 0xFF bytes (NaN in every float type, a payload no
        arithmetic produces). cpu: torch's deterministic fill does it (pin_precision)."""
        if self.device.type == "cuda" and nbytes > 0:
            torch.empty(nbytes, dtype=torch.uint8, device=self.device).fill_(0xFF)
            torch.cuda.synchronize()

    def call(self, model: str, inputs: list[Any], slot_in: str, slot_out: str | None, *, timed: bool = False,
             audit: bool = False, ablate: bool = False, profile: bool = False, poison: int = 0,
             own_names: list[str] | None = None, exclude_library_gemm: bool = False,
             exclude_kernels: list[str] | None = None,
             record: bool = False, gate: bool = False, nonce: int | None = None) -> dict[str, Any]:
        """Call a model once on the judge's inputs and copy its outputs into the judge's buffers. `record`: keep
        the Triton launches' configurations (the first call; for the resource signals)."""
        import contextlib

        from kernel_gym.signals import collect

        mark = self.mark = [time.perf_counter()] if PROBE and timed else None
        args = self.inputs(inputs, slot_in)
        fn = self.models[model]
        self.poison(poison)
        before = set(threading.enumerate())
        dsl_launches.install()  # CuTe DSL / TileLang, once the job has imported one (their hooks: nothing else)
        launches.STATE.count = 0
        launches.STATE.ablate = ablate
        evidence: dict[str, Any] = {}
        try:
            fill = integrity.fresh_memory_poisoned(self.device.type) if ablate else contextlib.nullcontext()
            with torch.no_grad(), fill, (collect.record_launches() if record else contextlib.nullcontext()) as seen:
                self._run(fn, args, timed=timed, audit=audit, profile=profile, own_names=own_names or [],
                                exclude_library_gemm=exclude_library_gemm, evidence=evidence, slot_out=slot_out, gate=gate,
                                exclude_kernels=exclude_kernels or [], nonce=nonce)
        finally:
            launches.STATE.ablate = False
        if record and seen is not None:
            self.triton_launches = seen
        evidence["launches"] = launches.STATE.count
        stray = [t for t in threading.enumerate() if t not in before and t.is_alive()]
        evidence["stray_threads"] = len(stray)
        if stray:
            evidence["stray_name"] = stray[0].name
        if not timed:  # (walking the snapshot takes ms: after timed calls the judge asks with `harness` instead)
            evidence["harness"] = self.snapshot.changes()
        evidence["names"] = sorted(launches.STATE.names | cuda.KERNEL_NAMES)
        if mark is not None:
            mark.append(time.perf_counter())
            self.marks.append([round((b - a) * 1e3, 4) for a, b in zip(mark, mark[1:])])
        return evidence

    def _run(self, fn: Any, args: list[Any], *, timed: bool, audit: bool, profile: bool, own_names: list[str],
             exclude_library_gemm: bool, evidence: dict[str, Any], slot_out: str | None, gate: bool,
             exclude_kernels: list[str] = (), nonce: int | None = None) -> None:
        cuda_dev = self.device.type == "cuda"
        gc_was_enabled = gc.isenabled()
        if timed:  # no collection pause inside a timed call (as timeit does; the judge collects before timing)
            gc.disable()
        gated: list[Any] = []
        if cuda_dev and (timed or profile):
            gated = gated_streams(self.device)
        probe = None
        if timed and cuda_dev:
            # nothing of this call starts before the judge's inputs are in place: the current stream waits for "go",
            # the streams the solution made for a local event behind that wait (one interprocess wait a call)
            current = torch.cuda.current_stream(self.device)
            current.wait_event(self.events["go"])
            if gated:  # (streams made during the call wait for it as they are made: timing.hold_new_streams)
                self.fan_out.record(current)
                for s in gated[1:]:
                    s.wait_event(self.fan_out)
                hold_new_streams(self.fan_out)
            if PROBE:
                probe = (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                probe[0].record()
                self.mark.append(time.perf_counter())  # inputs bound, every gated stream waits for "go"

        def run() -> Any:
            return fn(*args)

        if audit:
            run = audited(run, args, evidence)
        try:
            if profile and cuda_dev:
                out = profiled(run, evidence, own_names=own_names, exclude_library_gemm=exclude_library_gemm,
                               gated=gated, exclude_kernels=exclude_kernels)
            else:
                out = run()
        finally:
            if gc_was_enabled:
                gc.enable()
            if cuda_dev:
                hold_new_streams(None)
        if probe is not None:
            self.mark.append(time.perf_counter())  # the call returned
        if cuda_dev:
            self.join(timed and gate, gated_streams(self.device) if gated else gated)  # with streams made in it
        if probe is not None:
            probe[1].record()
            self.probes.append(probe)
        # the outputs go into the judge's buffers before "done": the judge reads them right after its end event, so
        # a "done" recorded early reads as unwritten outputs (the copy's cost is in the judge's calibration)
        self.deliver(out, slot_out, evidence)
        if timed and cuda_dev:
            self.finish(torch.cuda.current_stream(self.device), nonce)
            if probe is not None:
                self.mark.append(time.perf_counter())  # joined, copied, "done" recorded
        elif cuda_dev:
            torch.cuda.synchronize()

    def join(self, gated_call: bool, gated: list[Any]) -> None:
        """Before the outputs are copied, all of the call's work must be done: under the launch gate, device-side
        (the current stream waits for every stream the solution made; blocking streams by the legacy rule), so no host latency
        enters the judge's interval; otherwise the whole device is synchronized from the host."""
        if not gated_call:
            torch.cuda.synchronize()
            return
        current = torch.cuda.current_stream(self.device)
        if len(self.join_events) < len(gated):  # made once: creating ~100 events a call would cost host time
            self.join_events = [torch.cuda.Event() for _ in gated]
        for s, e in zip(gated[1:], self.join_events):
            e.record(s)
            current.wait_event(e)

    def deliver(self, out: Any, slot_out: str | None, evidence: dict[str, Any]) -> None:
        """Describe the outputs and copy them, in stream order, into the judge's buffers when they fit exactly."""
        flat = flatten(out)
        structure, lazy = [], []
        for i, o in enumerate(flat):
            if isinstance(o, torch.Tensor):
                if type(o) is not torch.Tensor:
                    lazy.append(i)
                structure.append({"shape": [int(s) for s in o.shape], "dtype": dtype_name(o.dtype),
                                  "device": o.device.type})
            else:
                structure.append({"value": json_value(o)})
        evidence["structure"], evidence["lazy"] = structure, lazy
        targets = self.slots[slot_out].tensors if slot_out is not None else []
        tensors = [o for o in flat if isinstance(o, torch.Tensor)]
        fits = (slot_out is not None and not lazy and len(tensors) == len(targets)
                and all(tuple(t.shape) == tuple(o.shape) and t.dtype == o.dtype and o.device.type == t.device.type
                        for t, o in zip(targets, tensors)))
        if fits:
            for t, o in zip(targets, tensors):
                t.copy_(o.detach())
        evidence["copied"] = bool(fits)

    def probe(self) -> dict[str, Any]:
        """Diagnostics only (`KERNEL_GYM_RUNNER_PROBE=1`): this runner's own event interval of each timed call since
        the last ask, from after its wait for "go" to before "done". Evidence a runner could forge: never used by a
        verdict or a time, only printed beside the judge's readings by benchmarks/bench_judge.py."""
        pairs, self.probes = self.probes, []
        marks, self.marks = self.marks, []
        return {"probe": [round(s.elapsed_time(e), 5) for s, e in pairs], "marks": marks}

    def noop(self, timed: bool = False, gate: bool = False, slot_out: str | None = None,
             nonce: int | None = None) -> dict[str, Any]:
        """The calibration call: no model, one empty kernel (so that the GPU switches to this process's context as a
        real call makes it) and the copy of an output of the slot's shapes into the judge's buffers, between "go"
        and "done" as in a real call."""
        cuda_dev = self.device.type == "cuda"
        stream = torch.cuda.current_stream(self.device) if cuda_dev else None
        if timed and cuda_dev:
            stream.wait_event(self.events["go"])
            torch.cuda._sleep(0)
        if slot_out is not None:
            targets = self.slots[slot_out].tensors
            key = (slot_out, tuple((tuple(t.shape), t.dtype) for t in targets))
            if key not in self.scratch:  # made once per slot: an allocation would cost host time every call
                self.scratch = {key: [torch.zeros_like(t) for t in targets]}
            for t, o in zip(targets, self.scratch[key]):
                t.copy_(o)
        if timed and cuda_dev:
            self.finish(stream, nonce)
        return {}

    def collect(self, poison: int = 0) -> dict[str, Any]:
        """Before a timed call, outside the judge's interval: the young generations collected, fresh memory poisoned."""
        gc.collect(1)
        self.poison(poison)
        return {}

    def harness(self) -> dict[str, Any]:
        return {"harness": self.snapshot.changes()}

    # ---- the reference's extras ----------------------------------------------------------------------------------
    def warm(self, model: str, inputs: list[Any], slot_in: str, seconds: float) -> dict[str, Any]:
        """Keep the device busy with the model back to back for `seconds` (clocks up before timing)."""
        fn, args = self.models[model], self.inputs(inputs, slot_in)
        until = time.perf_counter() + seconds
        n = 0
        with torch.no_grad():
            while n < 1000:
                fn(*args)
                n += 1
                if self.device.type == "cuda" and n % 8 == 0:
                    torch.cuda.synchronize()
                if time.perf_counter() >= until:
                    break
        if self.device.type == "cuda":
            torch.cuda.synchronize()
        return {"calls": n}

    def c_ms(self, model: str) -> dict[str, Any]:
        return {"c_ms": [float(x) for x in (getattr(self.models.get(model), "c_ms", None) or [])]}

    def signals_before(self, code: str, backend: str, dtype: str, allow_precision: bool) -> dict[str, Any]:
        return self._signals("before_timing", code, backend, dtype, allow_precision, cand_module=self.modules.get("main"),
                             cand_model=self.models.get("main"), launches=self.triton_launches)

    def signals_after(self, model: str, inputs: list[Any], slot_in: str, code: str, backend: str, dtype: str,
                      allow_precision: bool, runtime_ms: float, baseline_ms: float) -> dict[str, Any]:
        return self._signals("after_timing", code, backend, dtype, allow_precision, ref_model=self.models[model],
                             inputs=self.inputs(inputs, slot_in), runtime_ms=runtime_ms, baseline_ms=baseline_ms)

    def _signals(self, when: str, code: str, backend: str, dtype: str, allow_precision: bool, **kw: Any
                 ) -> dict[str, Any]:
        from kernel_gym.signals import collect

        job = types.SimpleNamespace(code=code, backend=backend, dtype=dtype, allow_precision=allow_precision)
        try:
            return {"signals": getattr(collect, when)(job=job, device=self.device, **kw)}
        except Exception:  # noqa: BLE001 - signals are information, never a verdict
            return {"signals": {}}
