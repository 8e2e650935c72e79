"""Observation text from jinja2 templates: the task prompt, earlier turns, and the newest feedback."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import jinja2

from kernel_gym.checks import library_policy
from kernel_gym.eval.result import EvalResult
from kernel_gym.feedback.hints import HintContext, hints_for
from kernel_gym.signals.summary import profile_text

_ENV = jinja2.Environment(loader=jinja2.PackageLoader("kernel_gym.feedback", "templates"), autoescape=False,
                          keep_trailing_newline=False, undefined=jinja2.StrictUndefined)

RULES_BY_PRESET = {
    "strict": "- Every computation in forward() runs in your own kernels; PyTorch may only allocate outputs, reshape/view,\n"
              "  and read shapes (torch.empty/empty_like, .view, .reshape, .contiguous, .shape, ...).",
    "kevin-strict": "- Every computation in forward() runs in your own kernels; PyTorch may only allocate, view and read shapes.\n"
                    "- The code may not contain `pass`, `try`, `except` or `torch.nn.functional` anywhere.",
    # the policy's own sentences (kernel_gym.checks.library_policy), as every check's feedback quotes them
    "standard": "- Your own kernels do the work; no other PyTorch compute in forward().\n" + "\n".join(
        "- " + a.sentence for a in library_policy.allowances("standard")),
    "permissive": "- PyTorch operations may stay, but at least one kernel of your own must run and carry real work.",
}


def render_prompt(task: Any, *, backend: str, checks: str, device: str, scoring: str, atol: float, rtol: float) -> str:
    rules = RULES_BY_PRESET.get(checks, RULES_BY_PRESET["standard"])
    template = "prompt_c.j2" if task.metadata.get("format") == "c" else "prompt.j2"  # C→CUDA tasks: the C source
    return _ENV.get_template(template).render(task=task, backend=backend, rules=rules, device=device,
                                                 scoring=scoring, atol=f"{atol:g}", rtol=f"{rtol:g}").strip() + "\n"


def feedback_fields(result: EvalResult, dtype: str = "float32") -> dict[str, Any]:
    accuracy = accuracy_line(result.correctness, dtype) if result.outcome.value in ("correct", "mismatch") else ""
    fields = {"outcome": result.outcome.value, "message": result.message, "hacks": list(result.hacks),
              "hack_details": list(result.hack_details), "profile": profile_text(result.signals), "accuracy": accuracy}
    if result.timing is not None:
        t = result.timing
        fields.update(runtime_ms=t.runtime_ms, baseline_ms=t.baseline_ms, speedup=t.speedup, trials=t.trials,
                      method=t.method, runtime_cv=t.runtime_cv, baseline_cv=t.baseline_cv,
                      at_resolution=int(result.signals.get("readings_at_resolution", 0)),
                      resolution_ms=t.resolution_ms)
    return fields


# How the accuracy line names the reference's precision (the job's dtype: the task's own or its `precision=`)
PRECISION_NAMES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64"}


def accuracy_line(info: dict[str, Any] | None, dtype: str = "float32") -> str:
    """The feedback's sentence on accuracy: the error budget used (kernel_gym.judge.oracle) and where the solution
    stood in it, so a policy learns what "close enough" means. `dtype`: the job's, which the reference ran at."""
    if not info:
        return ""
    if info.get("rule") == "fixed" or info.get("candidate_error") is None:
        why = info.get("why") or "no float64 oracle"
        return f"Accuracy: judged by the fixed tolerance ({why})."
    ratio = info.get("ratio")
    ratio_text = f"{ratio:.3g}x the reference's own error" if ratio is not None else "the reference is exact here"
    return (f"Accuracy (error against a float64 oracle, {info['metric']} of output {info['output']}): yours "
            f"{info['candidate_error']:.3g}, the {PRECISION_NAMES.get(dtype, dtype)} reference's "
            f"{info['reference_error']:.3g} ({ratio_text}); the "
            f"budget is k={info['k']:g} x the reference's error + {info['floor']:g} = {info['limit']:.3g}.")


def render_feedback(result: EvalResult, *, code: str | None = None, dtype: str = "float32",
                    allow_precision: bool = False) -> str:
    """The feedback text for one result; with the candidate's `code` (and the task's dtype contract), plain hints
    for honest failures are added (kernel_gym.feedback.hints: e.g. TF32 `tl.dot` on a float32 task)."""
    fields = feedback_fields(result, dtype)
    fields["hints"] = hints_for(result, HintContext(code, dtype, allow_precision))
    return _ENV.get_template("feedback.j2").render(r=fields).strip()


def status_line(result: EvalResult) -> str:
    """A one-line verdict for the history."""
    if result.correct and result.timing is not None:
        return f"correct, speedup {result.timing.speedup:.3g}x ({result.timing.runtime_ms:.4g} ms)"
    if result.hacks:
        return "rejected (" + ", ".join(result.hacks) + ")"
    return result.outcome.value.replace("_", " ")


@dataclass(frozen=True)
class TurnView:
    """One earlier turn as the observation shows it."""

    turn: int
    status: str
    summary: str
    code: str | None
    feedback: str
    had_code: bool = True


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 20].rstrip() + " ... [trimmed]"


def render_observation(prompt: str, turns: list[TurnView], *, max_turns: int, max_chars: int,
                       keep_kernels: int | None = None) -> str:
    """Render within max_chars: first older kernels go, then older feedback shrinks, then the oldest turns go."""
    if not turns:
        return prompt
    history, latest = list(turns[:-1]), turns[-1]
    if keep_kernels is not None:
        cut = max(0, len(history) - max(0, keep_kernels - 1))
        history = [replace(t, code=None) if i < cut else t for i, t in enumerate(history)]
    omitted = 0

    def render() -> str:
        return _ENV.get_template("observation.j2").render(prompt=prompt.rstrip(), history=history, latest=latest,
                                                          max_turns=max_turns, omitted=omitted).strip() + "\n"

    text = render()
    for i in range(len(history)):  # oldest kernels first
        if len(text) <= max_chars:
            return text
        history[i] = replace(history[i], code=None)
        text = render()
    for i in range(len(history)):
        if len(text) <= max_chars:
            return text
        history[i] = replace(history[i], feedback=_short(history[i].feedback, 300), summary=_short(history[i].summary, 200))
        text = render()
    while history and len(text) > max_chars:
        history.pop(0)
        omitted += 1
        text = render()
    if len(text) > max_chars:
        latest = replace(latest, feedback=_short(latest.feedback, max(500, max_chars // 4)))
        text = render()
    return text
