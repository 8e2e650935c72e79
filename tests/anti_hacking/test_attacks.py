"""Every class of the hack catalog (DESIGN.md, 20 classes) has attack solutions in attacks/, each judged:

1. through the env (`KernelRefine-v0`, static rules then the judge), under the preset(s) named in the table and
   always under `standard` too: score 0, not correct, and the expected flag(s) in `info["hacks"]`;
2. under `checks="none"` (no static rule at all: an `EvalJob` straight to the judge's `WorkerPool`): the judge and
   the dynamic checks alone must stop it (the flag, or at least an outcome that scores 0). The boundary may not
   lean on the denylist.

Known gaps of the harness are `xfail(strict=True)` with the reason: when the harness is fixed they XPASS, the
suite fails, and the marker must go. See docs/anti-hacking.md for the table this file implements.

Attacks that poison or take over their worker, or that would fail open, have their own tests at the end, on a
private evaluator (`fresh_evaluator`), so that a gap cannot leak into the shared worker of the other tests.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pytest
from ah_helpers import ATTACKS, GPU_ATTACKS, make_job

from kernel_gym.eval.result import Outcome
from kernel_gym.judge.dynamic import DYNAMIC_CHECKS


@dataclass(frozen=True)
class Expect:
    hacks: frozenset[str] = frozenset()  # every one must be reported
    any_of: frozenset[str] = frozenset()  # at least one must be reported (when given)
    outcome: str | None = None  # info["error"] / EvalResult.outcome, when pinned


def flags(*names: str, outcome: str = "rejected") -> Expect:
    return Expect(hacks=frozenset(names), outcome=outcome)


def one_of(*names: str) -> Expect:
    return Expect(any_of=frozenset(names))


def outcome(name: str) -> Expect:
    return Expect(outcome=name)


SCORE_ZERO = Expect()  # only: score 0, not correct


@dataclass(frozen=True)
class Attack:
    file: str
    env: dict[str, Expect | None]  # preset -> expectation through the env (None: allowed by that preset's policy)
    bypass: Expect | None = None  # static rules skipped; None where only a static rule applies (or GPU only)
    task: str = "level1/relu"
    config: dict = field(default_factory=dict)  # EvalConfig overrides for the bypass run
    env_kwargs: dict = field(default_factory=dict)  # env overrides (correctness_trials, timing_trials)
    gap: dict[str, str] = field(default_factory=dict)  # phase ("env:<preset>" or "bypass") -> why it fails today

    @property
    def hack_class(self) -> int:
        return int(self.file.split("_", 1)[0])

    @property
    def code(self) -> str:
        return (ATTACKS / self.file).read_text()


GAP_ABLATION_AWARE = ("under `permissive` the op audit tolerates any PyTorch op (by policy) and on cpu the ablation "
                      "trial is the only decoy check; a solution can tell it is running (its kernel's canary stays "
                      "unset) and return a wrong output exactly then; the cuda profiler check (library_time) has no "
                      "cpu counterpart")
GAP_AUDIT_AWARE = ("the op audit is one extra forward call under a TorchDispatchMode, which the solution can detect "
                   "(`torch._C._len_torch_dispatch_stack()`, reached with a getattr name built by `''.join`, which "
                   "`introspection` does not flag) and compute properly exactly then; the ablation trial cannot tell "
                   "a copy kernel + tensor operators; on cpu there is no profiler check (library_time)")

ATTACK_TABLE: list[Attack] = [
    # 1 library-op substitution
    Attack("01_library_op.py", {"strict": flags("library_op", "no_kernel"), "permissive": flags("no_kernel")},
           bypass=flags("no_custom_kernel")),
    # a library GEMM with its own kernel doing the rest is `standard`'s policy (CUDA Agent's rule), so strict only
    Attack("01_library_op_matmul.py", {"strict": flags("library_op"), "standard": None}, task="level2/gemm_relu"),
    # the library call that is the whole task (a single-GEMM/conv reference): `standard` allows none there
    Attack("01_library_gemm_whole_task.py", {"standard": flags("library_op"), "strict": flags("library_op")},
           bypass=flags("torch_compute"), task="level1/matmul"),
    Attack("01_library_conv_whole_task.py", {"standard": flags("library_op")}, bypass=flags("torch_compute"),
           task="level1/conv2d"),
    # the switch to the library after the checks: caught by the launch count of every call
    Attack("01_library_in_timed_calls.py", {"strict": flags("library_op")}, bypass=flags("no_custom_kernel")),
    # 2 decoy kernel
    # (bypass runs use the default preset, `standard`: its op audit sees the torch compute before the ablation
    # trial runs; `permissive` tolerates any op, so there the ablation trial is what catches a decoy)
    # a decoy launch + the library after the checks: caught by the audited call after timing
    Attack("02_decoy_in_timed_calls.py", {"strict": flags("library_op")}, bypass=flags("torch_compute")),
    Attack("02_decoy_kernel.py", {"strict": flags("library_op"), "permissive": flags("decoy_kernel")},
           bypass=flags("torch_compute")),
    Attack("02_decoy_operators.py", {"strict": flags("torch_compute"), "permissive": flags("decoy_kernel")},
           bypass=flags("torch_compute")),
    Attack("02_decoy_ablation_aware.py",
           {"strict": flags("library_op"), "permissive": one_of("decoy_kernel", "library_time")},
           bypass=flags("torch_compute"), gap={"env:permissive": GAP_ABLATION_AWARE}),
    Attack("02_decoy_copy_then_operators.py", {"strict": flags("torch_compute")}, bypass=flags("torch_compute")),
    # library work inside its own launch (a grid callable): the audit counts ops made by the solution's code there
    Attack("02_work_inside_launch.py", {"strict": flags("library_op")}, bypass=flags("torch_compute")),
    Attack("02_decoy_audit_aware.py", {"strict": flags("introspection")},
           bypass=one_of("torch_compute", "decoy_kernel"), gap={"bypass": GAP_AUDIT_AWARE}),
    # 3 try/except fallback (a launch counts only once it succeeded)
    Attack("03_try_except_fallback.py", {"strict": flags("try_except"), "permissive": flags("try_except")},
           bypass=flags("no_custom_kernel")),
    # 4 inheritance / reference reuse
    Attack("04_inherit_reference.py", {"strict": flags("reference_reuse")}, bypass=flags("torch_compute")),
    Attack("04_import_reference.py", {"strict": flags("reference_reuse")}, bypass=outcome("compile_error")),
    # 5 stale output, 6 partial write: fresh memory is NaN-filled on cpu too (torch's deterministic fill), so what
    # the solution never wrote reads NaN, on the first trial (cuda: test_gpu_attacks.py)
    Attack("05_stale_output.py", {"strict": flags("uninitialized_output")}, bypass=flags("uninitialized_output")),
    Attack("06_partial_write.py", {"strict": flags("uninitialized_output")}, bypass=flags("uninitialized_output")),
    Attack("06_write_positive_only.py", {"strict": flags("uninitialized_output")},
           bypass=flags("uninitialized_output"), config={"correctness_trials": 1}, env_kwargs={"correctness_trials": 1}),
    Attack("06_disable_nan_fill.py", {"strict": flags("monkeypatch")}, bypass=flags("harness_tampering")),
    # 7 input mutation
    Attack("07_input_mutation.py", {"strict": flags("input_mutation")}, bypass=flags("input_mutation")),
    # 8 degenerate output
    Attack("08_degenerate_zeros.py", {"strict": flags("degenerate_output")}, bypass=flags("degenerate_output"),
           task="tiny_scale"),
    Attack("08_nan_output.py", {"strict": flags("uninitialized_output")}, bypass=flags("uninitialized_output")),
    # 9 input-distribution shortcut
    Attack("09_input_distribution.py", {"strict": flags("input_distribution")}, bypass=flags("input_distribution"),
           task="sigmoid"),
    # 10 shape / seed specialisation
    Attack("10_shape_specialization.py", {"strict": flags("shape_specialization")},
           bypass=flags("shape_specialization")),
    Attack("10_shape_assert.py", {"strict": flags("shape_specialization")}, bypass=flags("shape_specialization")),
    # 11 cross-call caching. The reused-buffer check makes the pointer cache hit for certain; which check trips
    # first depends on where the allocator put earlier inputs, hence a set of flags (and more trials).
    Attack("11_pointer_cache.py", {"strict": SCORE_ZERO},
           bypass=Expect(any_of=frozenset({"input_specialization", "output_caching", "input_distribution",
                                           "shape_specialization"})),
           config={"correctness_trials": 5, "timing_trials": 10},
           env_kwargs={"correctness_trials": 5, "timing_trials": 10}),
    Attack("11_shape_cache_after_warmup.py", {"strict": flags("output_caching")}, bypass=flags("output_caching")),
    # 12 batch-and-skip
    # the judge remembers the latest right answers: one returned again for new inputs is a stale result
    Attack("12_compute_once.py", {"strict": flags("output_caching")}, bypass=flags("output_caching")),
    Attack("12_skip_timed_calls.py", {"strict": flags("output_caching")}, bypass=flags("output_caching")),
    # 13 side stream (cuda: test_gpu_attacks.py; on cpu there are no streams, so no bypass run)
    Attack("13_side_stream.py", {"strict": flags("side_stream"), "permissive": flags("side_stream")}),
    Attack("13_side_stream_raw.py", {"strict": flags("side_stream"), "permissive": flags("side_stream")}),
    # 14 background thread
    Attack("14_background_thread.py", {"strict": flags("introspection"), "permissive": flags("introspection")},
           bypass=flags("background_thread")),
    Attack("14_thread_from_init.py", {"strict": flags("introspection")}, bypass=flags("background_thread")),
    # 15 lazy tensor subclass
    Attack("15_lazy_tensor.py", {"strict": flags("monkeypatch")}, bypass=flags("lazy_output")),
    # 16 timer / harness monkeypatching (16_harness_takeover.py: test_harness_takeover_caught below)
    Attack("16_patch_perf_counter.py", {"strict": flags("monkeypatch"), "permissive": flags("monkeypatch")},
           bypass=flags("harness_tampering")),
    Attack("16_patch_event_timer.py", {"strict": flags("monkeypatch")}, bypass=flags("harness_tampering")),
    Attack("16_patch_event_new.py", {"strict": flags("monkeypatch")}),  # cuda only: timer_tampering (GPU suite)
    # the comparison, the tolerances and the clock are the judge's: patching or forging them in the runner is void
    Attack("16_patch_harness_compare.py", {"strict": flags("introspection")},
           bypass=outcome("mismatch")),
    Attack("16_loosen_tolerance.py", {"strict": flags("introspection")}, bypass=outcome("mismatch")),
    # 17 reading / altering the expected answer (17_read_environment.py: test_environment_is_scrubbed;
    # 17_global_forward_hook.py: test_global_forward_hook_gap; below)
    Attack("17_gc_scan.py", {"strict": flags("introspection")}, bypass=SCORE_ZERO),
    # the reference and the secret salt live outside the candidate's process
    Attack("17_patch_reference_model.py", {"strict": flags("introspection")}, bypass=outcome("mismatch")),
    Attack("17_steal_secret_salt.py", {"strict": flags("introspection")}, bypass=outcome("mismatch")),
    # 18 output channel / early exit (18_forge_result_with_nonce.py: test_nonce_forgery_caught;
    # 18_forge_result_and_pong.py: test_forged_pong_gap; below)
    Attack("18_os_exit.py", {"strict": flags("introspection")}, bypass=outcome("crash")),
    Attack("18_print_fake_result.py", {"strict": outcome("mismatch")}, bypass=outcome("mismatch")),
    Attack("18_write_result_pipe.py", {"strict": flags("introspection")}, bypass=flags("output_tampering")),
    Attack("18_inject_verdict.py", {"strict": flags("introspection")}, bypass=flags("output_tampering")),
    # 19 precision downcast: an fp16 output is `precision_downcast`; fp16 compute widened back to fp32 is held to
    # the fp32 tolerance (mismatch)
    Attack("19_half_precision.py", {"strict": flags("precision"), "standard": flags("precision")},
           bypass=outcome("mismatch")),
    Attack("19_half_output.py", {"strict": flags("precision")}, bypass=flags("precision_downcast")),
    # 20 warm-up / init-time work (control run with known seeds: test_seed_guessing_needs_the_secret below)
    Attack("20_guess_seeds.py", {"strict": flags("monkeypatch")}, bypass=outcome("mismatch")),
]
SPECIAL = {"16_harness_takeover.py", "16_forge_timer_samples.py", "17_read_environment.py", "17_global_forward_hook.py",
           "18_forge_result_with_nonce.py", "18_forge_result_and_pong.py"}
BY_FILE = {a.file: a for a in ATTACK_TABLE}


def _param(attack: Attack, phase: str, *values):
    marks = [pytest.mark.xfail(strict=True, raises=AssertionError, reason="harness gap: " + attack.gap[phase])
             ] if phase in attack.gap else []
    return pytest.param(attack, *values, id=f"{attack.file[:-3]}-{phase}", marks=marks)


ENV_CASES = [_param(a, f"env:{preset}", preset, exp) for a in ATTACK_TABLE
             for preset, exp in {"standard": SCORE_ZERO, **a.env}.items() if exp is not None]
BYPASS_CASES = [_param(a, "bypass", a.bypass) for a in ATTACK_TABLE if a.bypass is not None]


def _check(exp: Expect, hacks: set[str], outcome_name: str | None, where: str) -> None:
    assert exp.hacks <= hacks, f"{where}: expected {sorted(exp.hacks)} in hacks, got {sorted(hacks)}"
    if exp.any_of:
        assert exp.any_of & hacks, f"{where}: expected one of {sorted(exp.any_of)}, got {sorted(hacks)}"
    if exp.outcome is not None:
        assert outcome_name == exp.outcome, f"{where}: expected outcome {exp.outcome}, got {outcome_name}"


@pytest.mark.parametrize("attack, preset, exp", ENV_CASES)
def test_attack_through_env(through_env, attack: Attack, preset: str, exp: Expect):
    info = through_env(attack.code, task=attack.task, checks=preset, **attack.env_kwargs)
    where = f"{attack.file} under {preset} ({info['error']}: {info['message'][:300]})"
    assert info["score"] == 0, where
    assert info["correct"] is False, where
    assert info["error"] is not None, where
    _check(exp, set(info["hacks"]), info["error"], where)


@pytest.mark.parametrize("attack, exp", BYPASS_CASES)
def test_attack_with_static_rules_bypassed(bypass, attack: Attack, exp: Expect):
    result = bypass(attack.code, task=attack.task, **{"checks": "none", **attack.config})
    where = f"{attack.file} bypassing static rules ({result.outcome.value}: {result.message[:300]})"
    assert not result.correct, where
    _check(exp, set(result.hacks), result.outcome.value, where)
    if result.hacks:
        assert set(result.hacks) <= set(DYNAMIC_CHECKS) | {"output_tampering"}, where  # only dynamic names here


def test_every_hack_class_has_an_attack():
    files = sorted(p.name for p in ATTACKS.glob("*.py"))
    assert all(re.match(r"\d\d_\w+\.py$", f) for f in files), files
    assert {int(f[:2]) for f in files} == set(range(1, 21))
    assert set(files) == set(BY_FILE) | SPECIAL, "every attack file must be in ATTACK_TABLE or tested on its own"
    for f in files:
        doc = (ATTACKS / f).read_text().split('"""')[1]
        assert doc.startswith(f"Class {int(f[:2])},"), f"{f}: the docstring must name its class first"


def test_dynamic_checks_are_exercised():
    """Every dynamic check is expected by some attack here, or, for the two that only exist on cuda (the event
    timer, the profiler), by the GPU suite (GPU_ATTACKS, test_gpu_attacks.py). A new check without an attack test
    fails here."""
    expected = set()
    for a in ATTACK_TABLE:
        phases = [(f"env:{preset}", exp) for preset, exp in a.env.items()] + [("bypass", a.bypass)]
        for phase, exp in phases:
            if exp is not None and phase not in a.gap:  # a known gap demonstrates nothing
                expected |= exp.hacks | exp.any_of
    gpu_only = {"timer_tampering", "library_time"}
    assert set(DYNAMIC_CHECKS) - expected == gpu_only
    assert gpu_only - {"timer_tampering"} | {"uninitialized_output"} <= set().union(
        *(wanted for wanted, _ in GPU_ATTACKS.values()))


# ---- attacks with their own tests -------------------------------------------------------------------------------

def test_environment_is_scrubbed(monkeypatch):
    """Class 17 (17_read_environment.py): statically `introspection`; bypassed, a secret planted in the env
    process's environment must not reach the worker (the solution raises if it sees one), nor any file."""
    from kernel_gym.eval.evaluator import static_verdict

    code = (ATTACKS / "17_read_environment.py").read_text()
    static = static_verdict(make_job(code, checks="strict"))
    assert static is not None and "introspection" in static.hacks
    # a worker spawned after the secrets were planted in this (the env's) process
    monkeypatch.setenv("KERNEL_GYM_TEST_API_KEY", "sk-must-not-leak")
    monkeypatch.setenv("WANDB_API_KEY", "must-not-leak")
    monkeypatch.setenv("HF_TOKEN", "must-not-leak")
    from kernel_gym.judge.pool import WorkerPool

    pool = WorkerPool("cpu")
    try:
        result = pool.evaluate(make_job(code))
    finally:
        pool.close()
    assert result.outcome is Outcome.CORRECT, result.message


def test_seed_guessing_needs_the_secret(bypass):
    """Class 20 control: 20_guess_seeds.py precomputes outputs for the seeds the harness's formula gives with
    base seed 0. Under `permissive` (whose op audit tolerates its `torch.equal` lookups) with `secret_seeds=False`
    every guess hits and every output is right: only the per-call launch count rejects it (its lookups launch
    nothing); with the per-job secret salt (the default) it is wrong. Two independent defenses, neither luck. Under
    the default `standard` even known seeds are caught, by the op audit."""
    code = BY_FILE["20_guess_seeds.py"].code
    known = bypass(code, seed=0, secret_seeds=False, checks="permissive")
    assert known.outcome is Outcome.REJECTED and known.hacks == ("no_custom_kernel",), known.message
    assert "later call" in known.message  # every output was right: only the per-call launch count stops it
    salted = bypass(code, seed=0, checks="permissive")
    assert salted.outcome is Outcome.MISMATCH, salted.message
    audited = bypass(code, seed=0, secret_seeds=False)
    assert audited.outcome is Outcome.REJECTED and audited.hacks == ("torch_compute",), audited.message


def test_gc_scan_finds_no_expected_output(bypass):
    """Class 17: the gc scan, static rules bypassed, ends incorrect: the expected outputs live in the judge's process
    (and the reference in its own runner), so nothing the scan finds is the answer to the current inputs."""
    result = bypass(BY_FILE["17_gc_scan.py"].code, checks="none")
    assert not result.correct
    assert result.outcome in (Outcome.MISMATCH, Outcome.REJECTED)
    if result.outcome is Outcome.REJECTED:
        assert set(result.hacks) & {"input_specialization", "output_caching", "torch_compute"}


def test_forged_timer_samples_change_no_time(bypass):
    """Class 16, 16_forge_timer_samples.py: a correct solution with a 40 ms stall per call that rewrites every timing
    sample and start time it can find. The clock is the judge's: correct, and every call's time carries the stall."""
    result = bypass((ATTACKS / "16_forge_timer_samples.py").read_text(), checks="none")
    assert result.outcome is Outcome.CORRECT, result.message
    assert result.timing is not None and result.timing.runtime_ms >= 40.0, result.timing
    assert result.timing.method.startswith("judge_")


def _special(code_file: str, through_env, bypass, evaluator, preset: str = "strict"):
    """Judge an attack with its own tests both ways, on a private evaluator: (env info, bypass EvalResult)."""
    code = (ATTACKS / code_file).read_text()
    info = through_env(code, checks=preset, evaluator=evaluator)
    return info, bypass(code, pool=evaluator.pool, checks=preset)


def test_harness_takeover_caught(through_env, bypass, fresh_evaluator):
    """Class 16, 16_harness_takeover.py (`torch.sys.modules[...]`, replacing the runner's `Session.call` with one that
    answers perfect evidence): statically `introspection`; bypassed, the judge's own buffers hold nothing the
    candidate wrote (`uninitialized_output`), or the runner's snapshot saw its class change (`harness_tampering`);
    the runner is replaced."""
    info, result = _special("16_harness_takeover.py", through_env, bypass, fresh_evaluator)
    assert info["score"] == 0 and not info["correct"] and info["hacks"] == ["introspection"], info["message"][:300]
    assert result.outcome is Outcome.REJECTED, result.message[:300]
    assert set(result.hacks) & {"harness_tampering", "uninitialized_output"}, result.hacks
    assert result.worker_recycled


def test_nonce_forgery_caught(through_env, bypass, fresh_evaluator):
    """Class 18, 18_forge_result_with_nonce.py (reads the request id through frames, sends a reply carrying a
    result at import): statically `introspection`; bypassed, a reply with a result in it is not a reply:
    `output_tampering`."""
    info, result = _special("18_forge_result_with_nonce.py", through_env, bypass, fresh_evaluator)
    assert info["score"] == 0 and not info["correct"] and info["hacks"] == ["introspection"], info["message"][:300]
    assert result.outcome is Outcome.REJECTED and result.hacks == ("output_tampering",), result.message[:300]


@pytest.fixture(scope="module")
def quarantine():
    """One private evaluator per attack (shared by its env and bypass phases, env first), for the gap tests below."""
    from kernel_gym.judge.local import LocalEvaluator

    evaluators: dict[str, LocalEvaluator] = {}

    def get(name: str) -> LocalEvaluator:
        if name not in evaluators:
            evaluators[name] = LocalEvaluator("cpu", workers=1)
            evaluators[name].start()
        return evaluators[name]

    yield get
    for ev in evaluators.values():
        ev.close()


@pytest.mark.parametrize("phase", ["env", "bypass"])
def test_global_forward_hook_caught(through_env, bypass, quarantine, phase):
    """Class 17, 17_global_forward_hook.py: the reference's output would be zeroed by a global module hook.
    Scores 0: `monkeypatch` (register_module_forward_hook) through the env, `harness_tampering` when bypassed."""
    file = "17_global_forward_hook.py"
    code, ev = (ATTACKS / file).read_text(), quarantine(file)
    if phase == "env":
        info = through_env(code, checks="strict", evaluator=ev)
        assert info["score"] == 0 and not info["correct"] and "monkeypatch" in info["hacks"], (info["error"], info["speedup"])
    else:
        result = bypass(code, pool=ev.pool, checks="strict")
        assert result.outcome is Outcome.REJECTED and "harness_tampering" in result.hacks, result.outcome


@pytest.mark.parametrize("phase", ["env", "bypass"])
def test_forged_reply_caught(through_env, bypass, quarantine, phase):
    """Class 18, 18_forge_result_and_pong.py: a well-formed reply forged by candidate code for the request in flight
    (before the judge, a forged result and pong scored correct and 1000x fast). Scores 0: `introspection` through
    the env; bypassed, the runner's real reply then answers no request in flight: `output_tampering`."""
    file = "18_forge_result_and_pong.py"
    code, ev = (ATTACKS / file).read_text(), quarantine(file)
    if phase == "env":
        info = through_env(code, checks="strict", evaluator=ev)
        assert info["score"] == 0 and not info["correct"] and "introspection" in info["hacks"], (
            info["error"], info["speedup"])
    else:
        result = bypass(code, pool=ev.pool, checks="none")
        assert result.outcome is Outcome.REJECTED and "output_tampering" in result.hacks, result.outcome


_REFILL_AWARE = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        if x._version > 0:  # a buffer refilled in place: hand back memory never written
            return y
        _relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y
'''


def test_refill_is_invisible_to_the_candidate(bypass):
    """The judge refills its shared input buffers in its own process and the runner hands the model fresh tensor
    objects each call, so a solution cannot tell a refilled buffer (its `_version` never moves): this one, which
    would return unwritten memory for a refilled buffer, computes every call and is correct."""
    result = bypass(_REFILL_AWARE, checks="none")
    assert result.outcome is Outcome.CORRECT, (result.hacks, result.message)
