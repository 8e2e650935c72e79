"""One job inside a worker: compile -> correctness on fresh inputs -> timing -> verdict, with dynamic checks.

Order of events (and why):
- The candidate always runs *before* the reference on the same inputs (the reference gets clones), so the
  reference's outputs never exist while candidate code runs and cannot be reused as "stale" memory.
- Before each candidate call, freed device memory is filled with NaN bytes, so a `torch.empty` output the
  kernel never writes shows up as NaN (partial writes, stale-output reuse).
- Every call, timed or not, gets fresh inputs from a secret per-job seed and its outputs are compared with
  the reference's: caching across calls, batch-and-skip and seed specialisation all fail the comparison.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch

from kernel_gym import cuda_raw
from kernel_gym.eval import compare, cuda, launches, loading
from kernel_gym.eval.errors import candidate_traceback, classify, trim
from kernel_gym.eval.hacks import Hack
from kernel_gym.eval.integrity import Snapshot, pin_precision
from kernel_gym.eval.job import EvalJob
from kernel_gym.eval.result import EvalResult, Outcome, Timing
from kernel_gym.eval.timing import (
    c_reference_signals,
    cv,
    device_lock,
    gated_streams,
    make_timer,
    median,
    median_rel_se,
    timer_disagrees,
)
from kernel_gym.signals import collect as signals

log = logging.getLogger(__name__)
_CPU_ONLY = ("the CUDA sources compile ({how}), but CUDA kernels cannot run on the CPU backend; evaluate on a GPU "
             "(device='cuda') or write a Triton solution")


def _checksum(t: torch.Tensor) -> tuple[float, float]:
    """Two sums of a tensor: of |x|, and of x weighted by position (so permutations and sign flips show)."""
    flat = t.detach().reshape(-1).double()
    weights = torch.linspace(1.0, 2.0, flat.numel(), dtype=torch.float64, device=flat.device)
    return float(flat.abs().sum()), float((flat * weights).sum())


def _global_hooks() -> int:
    """Hooks registered for *every* module (torch.nn.modules.module.register_module_*_hook)."""
    m = torch.nn.modules.module
    names = ("_global_forward_hooks", "_global_forward_pre_hooks", "_global_backward_hooks",
             "_global_backward_pre_hooks", "_global_forward_hooks_always_called", "_global_module_registration_hooks",
             "_global_parameter_registration_hooks", "_global_buffer_registration_hooks")
    return sum(len(getattr(m, n, {}) or {}) for n in names)


def _fingerprint(model: torch.nn.Module) -> tuple:
    """Identity of a model's code, hooks, mode and a checksum of its parameters and buffers: any change means
    someone tampered with it."""
    code = tuple((id(type(m)), id(getattr(type(m).forward, "__code__", None)), "forward" in vars(m),
                  "__call__" in vars(m), bool(getattr(m, "_forward_hooks", None)),
                  bool(getattr(m, "_forward_pre_hooks", None)), m.training) for m in model.modules())
    with torch.no_grad():
        state = tuple(_checksum(t) for t in (*model.parameters(), *model.buffers()))
    return code, state, _global_hooks()


class Stop(Exception):
    """Ends the pipeline early with a finished result."""

    def __init__(self, outcome: Outcome, message: str, **fields: Any):
        super().__init__(message)
        self.outcome, self.message, self.fields = outcome, message, fields


WARMUP_S = 0.1  # on cuda, the GPU is kept busy this long right before timing (JobRun.busy_gpu)
_LOW = (torch.float16, torch.bfloat16)
_HIGH = (torch.float32, torch.float64)


def _to_device(values: list[Any], device: torch.device) -> list[Any]:
    return [v.to(device) if isinstance(v, torch.Tensor) else v for v in values]


def _clone(values: list[Any]) -> list[Any]:
    return [v.clone() if isinstance(v, torch.Tensor) else v for v in values]


class JobRun:
    """State of one job: modules, models, timer and what each stage took."""

    def __init__(self, job: EvalJob, workdir: Path, progress: Callable[[str], None], snapshot: Snapshot):
        self.job, self.cfg, self.workdir, self.progress, self.snapshot = job, job.config, workdir, progress, snapshot
        self.device = torch.device(self.cfg.device)
        self.atol, self.rtol = job.tolerance or self.cfg.tolerances.get(job.dtype, (1e-4, 1e-4))
        self.salt = secrets.randbits(31) if self.cfg.secret_seeds else 0
        self.stage_ms: dict[str, float] = {}
        self.compiled = False
        self.poisoned = False
        self.stage = "compile"
        self.out_bytes = 1 << 20
        self.signals: dict[str, float] = {}
        self.fingerprints: dict[int, tuple] = {}  # reference model id -> its fingerprint when built
        self.ungated: list[str] = []  # candidate kernels seen on a stream the launch gate cannot hold
        self.calls_without_launch = 0  # calls after the first that launched none of the solution's own kernels

    # ---- helpers -------------------------------------------------------------------------------------
    def seed_for(self, i: int) -> int:
        return (self.cfg.seed * 1_000_003 + 7919 * (i + 1) + self.salt) % (2**31)

    def sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize()

    def inputs(self, module: Any, seed: int) -> list[Any]:
        torch.manual_seed(seed)
        with torch.device(self.device):
            return _to_device(list(module.get_inputs()), self.device)

    def build(self, ref_module: Any, cand_module: Any) -> tuple[torch.nn.Module, torch.nn.Module]:
        """Model and ModelNew, each built right after seeding with the same seed (KernelBench's convention)."""
        torch.manual_seed(self.cfg.seed)
        init = list(ref_module.get_init_inputs())
        torch.manual_seed(self.cfg.seed)
        ref = ref_module.Model(*init).to(self.device).eval()
        self.fingerprints[id(ref)] = _fingerprint(ref)
        threads = set(threading.enumerate())
        torch.manual_seed(self.cfg.seed)
        cand = cand_module.ModelNew(*init)
        if not isinstance(cand, torch.nn.Module):
            raise Stop(Outcome.RUNTIME_ERROR, "ModelNew must be a torch.nn.Module subclass")
        cand = cand.to(self.device).eval()
        if any(t not in threads and t.is_alive() for t in threading.enumerate()):
            raise Hack("background_thread", "constructing ModelNew started a thread; do all work inside forward()")
        return ref, cand

    def poison(self) -> None:
        """Fill memory the allocator will hand out next with NaN bytes (0xFF.. is NaN in every float type)."""
        if self.device.type == "cuda":
            torch.empty(self.out_bytes, dtype=torch.uint8, device=self.device).fill_(0xFF)
            torch.cuda.synchronize()  # finished before candidate code runs, on whatever stream it uses

    def call_candidate(self, model: torch.nn.Module, inputs: list[Any], timer: Any = None) -> tuple[Any, int, Any]:
        """Run the candidate once (timed when a timer is given) and apply the per-call dynamic checks.

        Returns (output, number of its own kernel launches, timing sample or None)."""
        before = set(threading.enumerate())
        launches.STATE.count = 0
        sample = None
        with torch.no_grad():
            if timer is None:
                out = model(*inputs)
                self.sync()
            else:
                sample, out = timer.time(lambda: model(*inputs))
        n = launches.STATE.count
        stray = [t for t in threading.enumerate() if t not in before and t.is_alive()]
        if stray:
            raise Hack("background_thread", f"the forward left {len(stray)} thread(s) running ({stray[0].name}); "
                       "all work must finish inside forward()")
        for i, o in enumerate(compare.flatten_outputs(out)):
            if isinstance(o, torch.Tensor) and type(o) is not torch.Tensor:
                raise Hack("lazy_output", f"output {i} is a {type(o).__name__} (a Tensor subclass); return a plain "
                           "torch.Tensor with the values computed")
        if n == 0 and self.compiled:  # judged by check_launches, once the outputs have been (the first call: compile)
            self.calls_without_launch += 1
        return out, n, sample

    def check_launches(self) -> None:
        """Every call must launch the solution's own kernels, not only the first. Checked after the outputs of the
        calls so far were compared, so a stale or cached result keeps its own verdict; what is left is a call
        whose output was right without any of its kernels: computed some other way (a library op)."""
        if self.calls_without_launch:
            raise Hack("no_custom_kernel", f"{self.calls_without_launch} later call(s) of forward() launched none of "
                       f"the solution's own kernels (the first call launched "
                       f"{self.signals.get('own_launches_per_call', 0):.0f}); every call must compute with them")

    def check_harness(self) -> None:
        changes = self.snapshot.changes()
        if changes:
            raise Hack("harness_tampering", "the solution modified the evaluation environment: " + ", ".join(changes))

    def reference(self, model: torch.nn.Module, inputs: list[Any], timer: Any = None) -> tuple[Any, Any]:
        """Run the reference the same way as the candidate; returns (output, timing sample or None)."""
        if _fingerprint(model) != self.fingerprints.get(id(model)):
            raise Hack("harness_tampering", "the reference model was modified (its forward, class or parameters)")
        with torch.no_grad():
            if timer is not None:
                sample, out = timer.time(lambda: model(*inputs))
                return out, sample
            out = model(*inputs)
        self.sync()
        return out, None

    def mismatch_text(self, m: Any) -> str:
        return compare.error_summary(m) + f" (atol={self.atol:g}, rtol={self.rtol:g}, dtype {self.job.dtype})"

    def timed(self, name: str, fn: Callable[[], Any]) -> Any:
        self.progress(name)
        t0 = time.perf_counter()
        try:
            return fn()
        finally:
            self.stage_ms[name] = round((time.perf_counter() - t0) * 1e3, 3)

    # ---- stages --------------------------------------------------------------------------------------
    def compile(self) -> None:
        """Import the candidate (load_inline builds here), build both models, and make the first call (JIT)."""
        self.ref_module = loading.load_reference(self.job.task_source, self.job.sizes)
        threads = set(threading.enumerate())
        cuda_raw.COMPILED.clear()  # (the worker set cuda_raw.TARGET_DEVICE to its device at start)
        try:
            self.cand_module = loading.load_candidate(self.job.code, self.workdir)
        except cuda.CudaSourcesCaptured as captured:
            self.cuda_on_cpu(captured.kwargs)
        except cuda_raw.NoCudaDevice as no_device:
            self.cuda_raw_on_cpu(no_device.module)
        except cuda_raw.CompileError as error:
            raise Stop(Outcome.COMPILE_ERROR, "NVRTC failed on the CUDA source:\n" + trim(error.log)) from None
        if not hasattr(self.cand_module, "ModelNew"):
            raise Stop(Outcome.COMPILE_ERROR, "the code defines no ModelNew")
        if any(t not in threads and t.is_alive() for t in threading.enumerate()):
            raise Hack("background_thread", "importing the solution started a thread; do all work inside forward()")
        self.check_harness()
        self.stage = "first_call"  # from here, only Triton JIT and build failures count as compile errors
        self.progress("first_call")  # the env now applies the run timeout
        # outside the lock: a ModelNew may build its extension in __init__ (CPU work that must not hold up timers)
        self.ref_model, self.cand_model = self.build(self.ref_module, self.cand_module)
        with self.shared_gpu():  # making inputs is GPU work too: never beside another job's timing
            inputs = self.inputs(self.ref_module, self.seed_for(-1))
            self.poison()
            with signals.record_launches() as self.triton_launches:
                self.first_out, launched, _ = self.call_candidate(self.cand_model, _clone(inputs))
        self.compiled = True
        self.signals["own_launches_per_call"] = float(launched)
        if launched == 0:
            raise Hack("no_custom_kernel", "forward() launched none of the solution's own kernels")

    def cuda_on_cpu(self, kwargs: dict[str, Any]) -> None:
        ok, log = cuda.nvcc_check(kwargs.get("cuda_sources", ""), workdir=self.workdir,
                                  timeout_s=self.cfg.compile_timeout_s)
        if not ok:
            raise Stop(Outcome.COMPILE_ERROR, "nvcc failed on cuda_sources:\n" + trim(log))
        self.compiled = True
        self.signals.update(signals.cuda_compile_signals(kwargs.get("cuda_sources", ""), self.job.code, self.workdir))
        raise Stop(Outcome.UNSUPPORTED, _CPU_ONLY.format(how="nvcc check"))

    def cuda_raw_on_cpu(self, module: Any) -> None:
        self.compiled = True
        self.signals.update(signals.cuda_raw_compile_signals(module, self.job.code))
        raise Stop(Outcome.UNSUPPORTED, _CPU_ONLY.format(how=f"NVRTC, {module.arch}"))

    def trial(self, i: int, scale: float | None = None, judge: bool = True) -> Any:
        """One correctness trial on fresh inputs (floating inputs times `scale` if given); the mismatch or None."""
        inputs = self.inputs(self.ref_module, self.seed_for(i))
        if scale is not None:
            inputs = [v * scale if isinstance(v, torch.Tensor) and v.is_floating_point() else v for v in inputs]
        pristine, ref_inputs = _clone(inputs), _clone(inputs)
        self.poison()
        out, _, _ = self.call_candidate(self.cand_model, inputs)
        if not compare.tensors_equal(inputs, pristine):
            raise Hack("input_mutation", "forward() modified its input tensors; write results to new outputs")
        self.check_harness()
        expected, _ = self.reference(self.ref_model, ref_inputs)
        if scale is not None and not all(torch.isfinite(o).all() for o in compare.flatten_outputs(expected)
                                         if isinstance(o, torch.Tensor) and o.is_floating_point()):
            return None  # the task itself is not defined on rescaled inputs
        self.out_bytes = max(self.out_bytes, sum(o.numel() * o.element_size() for o in compare.flatten_outputs(expected)
                                                 if isinstance(o, torch.Tensor)))
        if not judge:
            return compare.compare_outputs(out, expected, self.atol, self.rtol, self.cfg.max_rel_l2)
        return self.judge(out, expected)

    def judge(self, out: Any, expected: Any, where: str = "") -> Any:
        """Compare outputs; degenerate or never-written outputs are hacks, other differences a mismatch."""
        mismatch = compare.compare_outputs(out, expected, self.atol, self.rtol, self.cfg.max_rel_l2)
        if mismatch is not None and mismatch.kind == "structure":
            for g, e in zip(compare.flatten_outputs(out), compare.flatten_outputs(expected)):
                if isinstance(g, torch.Tensor) and isinstance(e, torch.Tensor) and g.dtype in _LOW and e.dtype in _HIGH \
                        and not self.job.allow_precision:
                    raise Hack("precision_downcast", f"{where}an output is {g.dtype} where the task's is {e.dtype}")
        if mismatch is not None and mismatch.kind == "degenerate":
            raise Hack("degenerate_output", where + (mismatch.where or ""))
        if mismatch is not None and mismatch.kind == "nan":  # (cuda: poison(); cpu: pin_precision's fill)
            raise Hack("uninitialized_output", f"{where}the output holds NaN where the reference is finite "
                       f"({self.mismatch_text(mismatch)}). Output memory is NaN-filled before every call, so this is "
                       "memory your kernels never wrote (stale or partial output), or a NaN-producing bug")
        return mismatch

    def correctness(self) -> None:
        results = [self.trial(i) for i in range(self.cfg.correctness_trials)]
        bad = [(i, m) for i, m in enumerate(results) if m is not None]
        if bad and len(bad) < len(results):
            raise Hack("input_specialization", f"correct on {len(results) - len(bad)} of {len(results)} input seeds but "
                       f"wrong on the others: {self.mismatch_text(bad[0][1])}. The output must depend only on the "
                       "inputs (no hard-coded values, caching, or races)")
        if bad:
            raise Stop(Outcome.MISMATCH, self.mismatch_text(bad[0][1]), mismatch=bad[0][1])
        self.distribution()
        self.audit_ops()
        if self.job.backend in ("triton", "cuda_raw"):
            self.ablation()
        if self.device.type == "cuda":
            self.kernel_share()
        if self.cfg.check_alt_shape and self.job.alt_sizes:
            self.alt_shape()
        self.reused_buffers()
        self.check_launches()

    def audit_ops(self) -> None:
        """Watch the dispatcher during one call: PyTorch compute the preset forbids is `torch_compute`."""
        from kernel_gym.eval.op_audit import audit

        inputs = self.inputs(self.ref_module, self.seed_for(7_000))
        with torch.no_grad():
            _, ops = audit(lambda: self.cand_model(*inputs))
        self.sync()
        self.forbid_ops(ops)

    def forbid_ops(self, ops: dict[str, int], after_timing: bool = False) -> None:
        """PyTorch compute the preset forbids, among the ops the audit saw, is `torch_compute`."""
        from kernel_gym.eval.op_audit import forbidden

        bad = forbidden(ops, self.cfg.checks)
        if not bad:
            return
        listed = ", ".join(f"aten.{b}" for b in bad[:6])
        if after_timing:
            raise Hack("torch_compute", f"in a call like the timed ones, forward() ran PyTorch compute ({listed}) that "
                       f"checks={self.cfg.checks!r} does not allow (the checked calls before timing did not); compute "
                       "it in your own kernels in every call")
        raise Hack("torch_compute", f"forward() ran PyTorch compute ({listed}) that checks={self.cfg.checks!r} does "
                   "not allow; compute it in your own kernels")

    def note_ungated(self, kernels: list[str]) -> None:
        """Kernels on a stream outside the launch gate's reach (a non-blocking stream not from torch's pool): their
        work could run while the gate holds the timing stream, unseen, so this solution is timed without the gate."""
        if kernels and not self.ungated:
            self.ungated = kernels
            self.signals["ungated_stream_kernels"] = float(len(kernels))

    def after_timing_check(self, timer: Any) -> bool:
        """One more candidate call after timing, through the same timer, like a timed round (so a solution that
        behaves only while it is checked, telling the checks apart by call count or by the launch gate, is seen
        behaving as it does when timed). Under the op audit: PyTorch compute the preset forbids is `torch_compute`.
        With the gate, also under the profiler: True when a kernel ran on a stream the gate does not hold (the
        solution must then be timed again without the gate)."""
        from kernel_gym.eval.op_audit import audit
        from kernel_gym.eval.profile import profile_call

        t0 = time.perf_counter()
        inputs = self.inputs(self.ref_module, self.seed_for(50_000))
        seen: dict[str, int] = {}

        def audited(*args: Any) -> Any:
            out, ops = audit(lambda: self.cand_model(*args))
            seen.update(ops)
            return out

        timer.flush()
        ungated: list[str] = []
        with torch.no_grad():
            if getattr(timer, "gated", False):
                ungated = profile_call(lambda: self.call_candidate(audited, inputs, timer), set(),
                                       gated=gated_streams(self.device)).ungated
            else:
                self.call_candidate(audited, inputs, timer)
        self.check_harness()
        self.stage_ms["after_timing_check"] = round((time.perf_counter() - t0) * 1e3, 3)
        self.forbid_ops(seen, after_timing=True)
        self.note_ungated(ungated)
        return bool(ungated)

    def reused_buffers(self) -> None:
        """A call on the very buffers of the previous call, refilled with new values: a cache keyed on data
        pointers or shapes returns its stale output. Fresh inputs alone catch it only when the allocator happens
        to reuse an address (reliable on cuda, not on cpu); this makes the hit certain."""
        buffers = self.inputs(self.ref_module, self.seed_for(8_000))
        self.call_candidate(self.cand_model, buffers)
        fresh = self.inputs(self.ref_module, self.seed_for(8_001))
        with torch.no_grad():
            for old, new in zip(buffers, fresh):
                if isinstance(old, torch.Tensor) and isinstance(new, torch.Tensor) and old.shape == new.shape:
                    old.copy_(new)
        expected, _ = self.reference(self.ref_model, _clone(buffers))
        self.poison()
        out, _, _ = self.call_candidate(self.cand_model, buffers)
        # Every earlier trial passed on NaN-poisoned memory, so any difference here (NaN included: a stale
        # tensor cached during the ablation trial holds the never-written NaN fill) is the stale result.
        mismatch = compare.compare_outputs(out, expected, self.atol, self.rtol, self.cfg.max_rel_l2)
        if mismatch is not None:
            raise Hack("output_caching", "called again on the same input buffers holding new values, forward() "
                       f"returned a stale or never-written result ({self.mismatch_text(mismatch)}); every call must compute its own "
                       "result, whatever the input addresses")

    def distribution(self) -> None:
        """One trial with floating inputs scaled by 16: shortcuts that only hold for small randn values fail."""
        mismatch = self.trial(5_000, scale=16.0)
        if mismatch is not None:
            raise Hack("input_distribution", "correct on the standard inputs but wrong when they are scaled by 16 "
                       f"({self.mismatch_text(mismatch)}); do not rely on the range of the test inputs")

    def kernel_share(self) -> None:
        """On cuda: most GPU time must be in the solution's own kernels (profiler), by preset."""
        from kernel_gym.eval.profile import EXCLUDES_LIBRARY_GEMM, MIN_OWN_SHARE, profile_call

        inputs = self.inputs(self.ref_module, self.seed_for(6_000))
        names = set(launches.STATE.names) | set(cuda.KERNEL_NAMES)
        with torch.no_grad():
            prof = profile_call(lambda: self.cand_model(*inputs), names,
                                exclude_library_gemm=self.cfg.checks in EXCLUDES_LIBRARY_GEMM,
                                gated=gated_streams(self.device) if self.cfg.launch_gate else ())
        share, total_ms, top = prof.share, prof.total_ms, prof.top
        self.note_ungated(prof.ungated)
        self.signals["own_kernel_time_share"] = round(share, 4)
        self.signals["profiled_kernel_ms"] = round(total_ms, 4)
        need = MIN_OWN_SHARE.get(self.cfg.checks, 0.5)
        if share < need:
            raise Hack("library_time", f"only {100 * share:.1f}% of the GPU time is in your own kernels (need "
                       f"{100 * need:.0f}% under checks={self.cfg.checks!r}); most is in {', '.join(top) or 'library kernels'}")

    def ablation(self) -> None:
        """Skip every Triton launch for one trial: if the output is still right, the kernels were decoys."""
        launches.STATE.ablate = True
        try:
            mismatch = self.trial(10_000, judge=False)  # any difference, NaN included, means the kernels matter
        except Hack:
            raise
        except Exception:  # noqa: BLE001 - a solution that breaks without its kernels relies on them
            mismatch = "raised"
        finally:
            launches.STATE.ablate = False
        if mismatch is None:
            raise Hack("decoy_kernel", "the output stays correct when the solution's own kernels are skipped, so "
                       "the result is computed some other way; compute it in your kernels")

    def alt_shape(self) -> None:
        module = loading.load_reference(self.job.task_source, self.job.alt_sizes)
        try:
            ref, cand = self.build(module, self.cand_module)
            saved = (self.ref_module, self.ref_model, self.cand_model)
            self.ref_module, self.ref_model, self.cand_model = module, ref, cand
            try:
                mismatch = self.trial(20_000)
            finally:
                self.ref_module, self.ref_model, self.cand_model = saved
        except Hack as hack:
            if hack.name != "uninitialized_output":
                raise
            raise Hack("shape_specialization", f"correct at the main shape, but at a second shape "
                       f"{self.job.alt_sizes} part of the output was never written ({hack.message}). Do not "
                       "hard-code sizes") from None
        except Stop:
            raise
        except Exception as e:  # noqa: BLE001
            raise Hack("shape_specialization", f"correct at the main shape but fails at a second shape "
                       f"{self.job.alt_sizes}: {candidate_traceback(e)}") from None
        if mismatch is not None:
            raise Hack("shape_specialization", f"correct at the main shape but wrong at a second shape "
                       f"{self.job.alt_sizes}: {self.mismatch_text(mismatch)}. Do not hard-code sizes")

    def exclusive_timing(self) -> Timing:
        """The timing stage, alone on the GPU (its machine-wide lock; the wait is recorded, not timed)."""
        with device_lock(self.device, exclusive=True) as wait:
            self.stage_ms["gpu_lock_wait"] = round(wait.seconds * 1e3, 3)
            if not wait.acquired:  # another job held the GPU too long (stuck): timed without exclusivity
                self.signals["timing_not_exclusive"] = 1.0
            return self.timing()

    @contextlib.contextmanager
    def shared_gpu(self) -> Iterator[None]:
        """GPU work other than timing (building models and inputs, first call, checks, signals): beside other
        jobs' such work, but never while one of them is being timed. Waits add up in stage_ms["gpu_shared_wait"]."""
        with device_lock(self.device, exclusive=False) as wait:
            self.stage_ms["gpu_shared_wait"] = round(self.stage_ms.get("gpu_shared_wait", 0.0) + wait.seconds * 1e3, 3)
            yield

    def shared_correctness(self) -> None:
        """The correctness stage, beside other jobs' checks but never while one of them is being timed."""
        with self.shared_gpu():
            self.correctness()

    def timing(self) -> Timing:
        """Time with the launch gate unless the candidate runs kernels on a stream the gate cannot hold (seen by the
        profiler check before timing, or by the profiled gated call after it: then timed again, without the gate).
        The call after timing is audited as well (`after_timing_check`)."""
        gate = self.cfg.launch_gate and self.device.type == "cuda" and not self.ungated
        timing, timer = self.measure(gate)
        self.check_launches()
        if self.after_timing_check(timer):
            timing, _ = self.measure(False)
        self.check_launches()
        return timing

    def measure(self, gate: bool) -> tuple[Timing, Any]:
        """Alternate candidate and reference on fresh inputs each round; every round's outputs are checked.

        At least `n_timing` rounds; then, up to `max_timing`, rounds go on until both medians are known to
        `timing_rel_se` (or `timing_budget_s` is spent). Python's garbage collector is off meanwhile (after the young
        generations are collected: a full collection costs ~100 ms in a worker with torch and triton loaded), so no
        collection pause lands inside a timed call (as `timeit` does)."""
        timer = make_timer(self.device, self.cfg.l2_flush_mb, gate=gate)
        timed_ref = self.timed_reference()
        for w in range(self.cfg.warmup):  # through the timer (readings dropped): the launch gate learns its length
            inputs = self.inputs(self.ref_module, self.seed_for(30_000 + w))
            self.call_candidate(self.cand_model, _clone(inputs), timer)
            self.reference(timed_ref, inputs, timer)
        gc.collect(1)
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            self.busy_gpu(timed_ref)
            cand_samples, ref_samples = self.timed_rounds(timer, timed_ref)
        finally:
            if gc_was_enabled:
                gc.enable()
        self.check_harness()
        if timer_disagrees(cand_samples):
            raise Hack("timer_tampering", "the timer read far less than the host clock over the same interval")
        rt, bt = [s.ms for s in cand_samples], [s.ms for s in ref_samples]
        self.signals.update(c_reference_signals(self.ref_model, median(rt)))
        se = (median_rel_se(rt) ** 2 + median_rel_se(bt) ** 2) ** 0.5 if len(rt) >= 3 else 0.0
        gate = median([s.gate_ms for s in cand_samples + ref_samples])
        return Timing(runtime_ms=median(rt), baseline_ms=median(bt), runtime_cv=cv(rt), baseline_cv=cv(bt),
                      trials=len(rt), method=timer.method, speedup_rel_se=round(se, 6), gate_ms=round(gate, 4)), timer

    def timed_rounds(self, timer: Any, timed_ref: torch.nn.Module) -> tuple[list[Any], list[Any]]:
        """The timed rounds: fresh inputs, NaN poison, flush, candidate timed, flush, reference timed on clones,
        outputs compared. Returns the candidate's and the reference's samples."""
        cand_samples: list[Any] = []
        ref_samples: list[Any] = []
        n_min, n_max = self.cfg.n_timing, self.cfg.max_timing
        deadline = time.perf_counter() + self.cfg.timing_budget_s
        for r in range(n_max):
            if r >= n_min and (time.perf_counter() >= deadline or self.timing_settled(cand_samples, ref_samples)):
                break
            inputs = self.inputs(self.ref_module, self.seed_for(40_000 + r))
            ref_inputs = _clone(inputs)
            if r % 2:  # each side reads each of the two copies in half the rounds: where they lie cancels out
                inputs, ref_inputs = ref_inputs, inputs
            self.poison()
            timer.flush()
            out, _, sample = self.call_candidate(self.cand_model, inputs, timer)
            cand_samples.append(sample)
            timer.flush()
            expected, ref_sample = self.reference(timed_ref, ref_inputs, timer)
            ref_samples.append(ref_sample)
            mismatch = self.judge(out, expected, f"timed call {r + 1}: ")
            if mismatch is not None:
                raise Hack("output_caching", f"timed call {r + 1} returned wrong outputs for its fresh inputs "
                           f"({self.mismatch_text(mismatch)}); every call must compute its own result")
        return cand_samples, ref_samples

    def timing_settled(self, cand_samples: list[Any], ref_samples: list[Any]) -> bool:
        """Both medians known to `timing_rel_se` (relative standard error, from the MAD)."""
        target = self.cfg.timing_rel_se
        return (median_rel_se([s.ms for s in cand_samples]) <= target
                and median_rel_se([s.ms for s in ref_samples]) <= target)

    def busy_gpu(self, model: torch.nn.Module) -> None:
        """Keep the GPU busy for WARMUP_S before timing: the trusted reference back to back (no host gaps, at most
        1000 calls), so the GPU's clocks are up when the first round is timed, whatever ran before. (On cpu the
        same, for a few ms only: timing there is informational.)"""
        if _fingerprint(model) != self.fingerprints.get(id(model)):
            raise Hack("harness_tampering", "the reference model was modified (its forward, class or parameters)")
        inputs = self.inputs(self.ref_module, self.seed_for(35_000))
        t0 = time.perf_counter()
        until = t0 + (WARMUP_S if self.device.type == "cuda" else 0.005)
        with torch.no_grad():
            model(*inputs)
            self.sync()
            # a short reference goes 8 calls between synchronizations (no host gaps), a long one 1 (stops on time)
            every = 8 if time.perf_counter() - t0 < 1e-3 and self.device.type == "cuda" else 1
            for i in range(1, 1000):
                if i % every == 0:
                    self.sync()
                    if time.perf_counter() >= until:
                        break
                model(*inputs)
        self.sync()

    def timed_reference(self) -> torch.nn.Module:
        """What the candidate is timed against: the task's `Baseline` when it defines one (a C task's PyTorch
        baseline, whose outputs then also check the timed calls; see kernel_gym/tasks/c_task.py), else `Model`."""
        if getattr(self, "_timed_ref", None) is None:
            self._timed_ref = self.ref_model
            if hasattr(self.ref_module, "Baseline"):
                torch.manual_seed(self.cfg.seed)
                init = list(self.ref_module.get_init_inputs())
                torch.manual_seed(self.cfg.seed)
                self._timed_ref = self.ref_module.Baseline(*init).to(self.device).eval()
                self.fingerprints[id(self._timed_ref)] = _fingerprint(self._timed_ref)
        return self._timed_ref

    def kernel_signals(self) -> None:
        """Structure and registers/occupancy of a correct candidate (kernel_gym.signals; a signal that cannot be
        computed is left out, none changes the verdict). Before timing: recompiling a Triton kernel may run the
        candidate's Python, and the timing stage's checks come after it."""
        try:
            self.signals.update(signals.before_timing(job=self.job, device=self.device, cand_module=self.cand_module,
                                                      cand_model=self.cand_model,
                                                      launches=getattr(self, "triton_launches", {})))
        except Exception:  # noqa: BLE001 - signals are information; they never decide (or break) a verdict
            log.exception("kernel signals failed")

    def roofline_signals(self, timing: Timing) -> None:
        """The task's bytes and FLOPs and, on a known GPU, the roofline signals (runs only the reference)."""
        try:
            self.signals.update(signals.after_timing(job=self.job, device=self.device, ref_model=self.timed_reference(),
                                                     inputs=self.inputs(self.ref_module, self.seed_for(50_000)),
                                                     runtime_ms=timing.runtime_ms, baseline_ms=timing.baseline_ms))
        except Exception:  # noqa: BLE001 - signals are information; they never decide (or break) a verdict
            log.exception("roofline signals failed")

    def execute(self) -> EvalResult:
        pin_precision(self.device.type)
        try:
            self.stage = "compile"
            self.timed("compile", self.compile)
            self.stage = "correctness"
            self.timed("correctness", self.shared_correctness)
            self.timed("kernel_signals", self.kernel_signals)
            self.stage = "timing"
            timing = self.timed("timing", self.exclusive_timing)
            with self.shared_gpu():
                self.timed("roofline_signals", lambda: self.roofline_signals(timing))
        except Hack as hack:
            return self.result(Outcome.REJECTED, hack.message, hacks=(hack.name,), hack_details=(hack.message,))
        except Stop as stop:
            return self.result(stop.outcome, stop.message, **stop.fields)
        except BaseException as exc:  # noqa: BLE001 - any failure of candidate code (SystemExit too) is a verdict
            outcome, self.poisoned = classify(exc, self.stage)
            where = {"compile": "importing the solution", "first_call": "the first call of forward()"}.get(
                self.stage, f"the {self.stage} stage")
            return self.result(outcome, f"{where} failed:\n{candidate_traceback(exc)}")
        return self.result(Outcome.CORRECT, "", timing=timing)

    def result(self, outcome: Outcome, message: str, **fields: Any) -> EvalResult:
        compiled = self.compiled or outcome in (Outcome.CORRECT, Outcome.MISMATCH) or (
            self.stage != "compile" and outcome is not Outcome.COMPILE_ERROR)
        return EvalResult(outcome=outcome, message=message, backend=self.job.backend, compiled=compiled,
                          stage_ms=dict(self.stage_ms), signals=dict(self.signals), **fields)


def run_job(job: EvalJob, *, workdir: Path, progress: Callable[[str], None], snapshot: Snapshot) -> tuple[EvalResult, bool]:
    """Evaluate one job; returns (result, worker_poisoned)."""
    run = JobRun(job, workdir, progress, snapshot)
    try:
        return run.execute(), run.poisoned
    finally:
        launches.STATE.reset()
        loading.unload(getattr(run, "cand_module", None))
