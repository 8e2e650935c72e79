"""The policy on library work, as data: what may stay a library call under each preset, when, and the one sentence the
feedback quotes. Three checks read it and no other place words it:

- the static rule `library_op` (kernel_gym/checks/rules/library_ops.py), from the source;
- the runner's op audit, judged as `torch_compute` (kernel_gym/harness/op_audit.py), from the aten ops a call ran;
- the profiler share, judged as `library_time` (kernel_gym/harness/profile.py, cuda), from the kernels that ran.

An allowance names what each check sees of it: `aten` (op audit), `kernels` (profiler: library kernels left out of
the total), and the static rule's findings by `kind`. Whether it applies follows the preset and the task's reference
(`kernel_gym.checks.task_policy.TaskPolicy`, derived from the reference's AST; None: an unknown task, where
everything `standard` ever allowed stays allowed).

    >>> from kernel_gym.checks.task_policy import task_policy
    >>> [a.name for a in allowed("standard", task_policy(load_task("level1/mse_loss").source))]
    ['allocation', 'final_reduction']
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .task_policy import EPILOGUE_REDUCTIONS

# Allocation, views, copies, metadata and fills, as aten ops: what a solution may do around its kernels in every preset.
ALLOCATION_OPS = frozenset("""
empty empty_like empty_strided new_empty new_empty_strided zeros zeros_like ones ones_like full full_like
new_zeros new_ones new_full fill fill_ zero zero_ arange scalar_tensor lift_fresh lift_fresh_copy
view _unsafe_view view_as reshape _reshape_alias as_strided as_strided_ expand expand_as permute transpose
transpose_ t t_ squeeze squeeze_ unsqueeze unsqueeze_ flatten unflatten slice select split split_with_sizes
chunk unbind narrow movedim alias detach detach_ clone contiguous copy copy_ _to_copy to _copy_from
_copy_from_and_resize resize_ set_ _local_scalar_dense item sym_size sym_stride sym_numel sym_storage_offset
is_same_size is_nonzero _has_compatible_shallow_copy_type dim size stride numel _version record_stream
unfold diagonal view_as_real view_as_complex narrow_copy unsafe_split unsafe_split_with_sizes unsafe_chunk
empty_permuted resize_as_ is_pinned _reshape_copy view_copy as_strided_copy expand_copy permute_copy
transpose_copy t_copy squeeze_copy unsqueeze_copy slice_copy select_copy split_copy unbind_copy
diagonal_copy unfold_copy alias_copy detach_copy _unsafe_view_copy is_contiguous is_complex is_floating_point
""".split())
# The heavy library GEMM/convolution ops, as aten ops.
GEMM_OPS = frozenset("""
mm addmm bmm baddbmm matmul linear _addmm_activation convolution _convolution conv1d conv2d conv3d
cudnn_convolution convolution_overrideable conv_transpose1d conv_transpose2d conv_transpose3d
cudnn_convolution_transpose mkldnn_convolution _mkldnn_convolution _convolution_mode _slow_conv2d_forward
slow_conv3d_forward thnn_conv2d slow_conv_transpose2d slow_conv_transpose3d mv dot einsum
""".split())
# A scalar scaling of a final reduction's result (`partials.sum(1) / n`, `-(...)`), as aten ops.
SCALE_OPS = frozenset({"div", "mul", "neg", "add", "sub", "rsub", "true_divide"})
# Every preset whose dynamic checks follow `standard` (`none` has no static rule but `standard`'s dynamic policy).
STANDARD_LIKE = frozenset({"standard", "none"})
ALL_PRESETS = frozenset({"strict", "kevin-strict", "standard", "permissive", "none"})


@dataclass(frozen=True)
class Allowance:
    """One kind of library work a preset lets stay beside the solution's own kernels."""

    name: str
    sentence: str
    """The one sentence every check's feedback quotes (and the prompt's rules list)."""
    kind: str
    """The static rule's finding kind it covers: "allocation", "gemm" or "reduction"."""
    aten: frozenset[str]
    """The op audit's names (aten overload packets) it covers."""
    kernels: str
    """A regex of library kernel names the profiler leaves out of the total ("" none)."""
    presets: frozenset[str]
    applies: Callable[[Any], bool]
    """Whether it applies on a task (its TaskPolicy, or None when unknown)."""
    needs_own_kernel: bool = False
    """Only beside a launch of the solution's own kernel (the static rule's condition; dynamically, the
    `no_custom_kernel` check and the ablation already require one)."""


ALLOCATION = Allowance(
    name="allocation",
    sentence="Allocation, views, copies and fills (torch.empty/zeros/full, .view/.reshape/.contiguous/.to, .copy_/"
             ".fill_, and shape queries) may always stay: they are not compute.",
    kind="allocation", aten=ALLOCATION_OPS, kernels=r"FillFunctor|fill_kernel|\bzero_kernel", presets=ALL_PRESETS,
    applies=lambda task: True)
LIBRARY_GEMM = Allowance(
    name="library_gemm",
    sentence="The task's heavy GEMM/convolution (nn.Linear, nn.Conv*, torch.matmul/mm/bmm/addmm, F.linear/conv*, "
             "cuBLAS/cuDNN) may stay a library call when the task's reference has other work beside it and your own "
             "kernels do that work; on a task that is only a GEMM/convolution it must be your own kernel.",
    kind="gemm", aten=GEMM_OPS, kernels=r"gemm|xmma|cutlass|cublas|nvjet|conv|cudnn|winograd|fprop|dgrad|wgrad",
    presets=STANDARD_LIKE, applies=lambda task: task is None or task.library_gemm, needs_own_kernel=True)
FINAL_REDUCTION = Allowance(
    name="final_reduction",
    sentence="A final reduction of your kernel's result (sum/mean/amax/amin/max/min, and a scalar scaling of it) may "
             "stay a library call when the task's reference itself ends in that reduction (cross-entropy, MSE, Huber "
             "and KL losses count as sum/mean) and is not only reductions.",
    kind="reduction", aten=EPILOGUE_REDUCTIONS, kernels=r"reduce_kernel", presets=STANDARD_LIKE,
    applies=lambda task: task is None or bool(task.final_reductions), needs_own_kernel=True)
POLICY = (ALLOCATION, LIBRARY_GEMM, FINAL_REDUCTION)
FINAL = "[final]"  # the op audit's suffix of a reduction (or scaling) recorded as the final step of a kernel's result


def allowances(preset: str) -> tuple[Allowance, ...]:
    """What the preset lets stay (`permissive` tolerates any op: it is not listed here)."""
    return tuple(a for a in POLICY if preset in a.presets)


def allowed(preset: str, task: Any = None) -> tuple[Allowance, ...]:
    """What the preset lets stay on this task."""
    return tuple(a for a in allowances(preset) if a.applies(task))


def by_kind(kind: str) -> Allowance | None:
    return next((a for a in POLICY if a.kind == kind), None)


def final_reduction_ok(op: str, preset: str, task: Any = None) -> bool:
    """May this reduction (or scaling) stay as the final step of the kernel's result here?"""
    if FINAL_REDUCTION not in allowed(preset, task):
        return False
    return op in SCALE_OPS or task is None or op in task.final_reductions


def tolerates_any(preset: str) -> bool:
    return preset == "permissive"


def aten_tolerated(preset: str, task: Any = None) -> frozenset[str]:
    """The aten ops the preset tolerates anywhere in a call on this task (final reductions are judged apart)."""
    ops = frozenset()
    for a in allowed(preset, task):
        if a is not FINAL_REDUCTION:
            ops |= a.aten
    return ops


def excluded_kernels(preset: str, task: Any = None) -> list[str]:
    """The allowances whose library kernels the profiler leaves out of the total (names, for the runner)."""
    return [a.name for a in allowed(preset, task) if a.kernels and a is not ALLOCATION]


def kernel_pattern(names: list[str] | tuple[str, ...]) -> re.Pattern | None:
    """One regex of the named allowances' library kernels (None: none)."""
    parts = [a.kernels for a in POLICY if a.name in names and a.kernels]
    return re.compile("|".join(f"(?:{p})" for p in parts), re.I) if parts else None


def explain(preset: str, kinds: set[str] | None = None) -> str:
    """The feedback's wording of the policy: the sentences of the allowances `kinds` names (for a finding of that
    kind), else the preset's whole list. The same text, whichever check fired."""
    if tolerates_any(preset):
        return "Under `permissive` PyTorch operations may stay, beside at least one kernel of your own doing real work."
    mine = allowances(preset)
    picked = [a for a in mine if kinds and a.kind in kinds] or list(mine)
    lead = f"Under `{preset}`, only this may stay a library call: " if len(mine) == 1 else (
        f"Under `{preset}`: " if kinds and len(picked) < len(mine) else
        f"Under `{preset}`, only these may stay library calls: ")
    return lead + " ".join(a.sentence for a in picked)


def op_kind(op: str) -> str:
    """The allowance kind an aten op (or a static finding's name) would fall under: "gemm", "reduction", "compute"."""
    base = op.removesuffix(FINAL).rstrip("_")
    if base in GEMM_OPS:
        return "gemm"
    if base in EPILOGUE_REDUCTIONS or (op.endswith(FINAL) and base in SCALE_OPS):
        return "reduction"
    return "compute"
