"""Building the models of one shape in the runners: Model (the reference's runner, which also learns its outputs'
structure from one call: trusted) and ModelNew (the candidate's), each right after seeding with the same seed
(KernelBench's convention), from init inputs the judge made."""

from __future__ import annotations

from typing import Any


def build_reference(jr: Any, name: str, module: str, cls: str, init: list[Any], task_module: Any = None) -> None:
    """Build a reference-side model and learn its outputs' structure from one call."""
    twin = jr.oracle.twin(name) if cls == "Model" else None  # the float64 oracle's copy, made with it (oracle.py)
    reply = jr.ref.runner.request("build", deadline=jr.limits.setup_deadline(), stage=jr.stage, name=name,
                                  module=module, cls=cls, init=init, seed=jr.cfg.seed, dtype=jr.cast,
                                  **({"copy_as": twin, "copy_dtype": "float64"} if twin else {}))
    if "error" in reply:
        jr.fail(reply["error"], jr.ref)
    if twin:
        jr.oracle.twinned(name, reply.get("twin"))
    probe = jr.call(jr.ref, name, jr.inputs(jr.seed("probe"), task_module), slot="in" if name != "alt" else "in_alt")
    jr.learn_outputs(name, probe.evidence)


def build_models(jr: Any, name: str, module: Any, sizes: dict[str, Any]) -> dict[str, Any]:
    """Model and ModelNew for one shape (`name`: "main" or "alt"); ModelNew's build reply (the runner's evidence,
    for the "build" checks)."""
    init = jr.init_inputs(module)
    if name != "main":
        reply = jr.ref.runner.request("load", deadline=jr.limits.setup_deadline(), stage=jr.stage, kind="reference",
                                      name=name, source=jr.job.task_source, sizes=sizes)
        if "error" in reply:
            jr.fail(reply["error"], jr.ref)
    build_reference(jr, name, name, "Model", init, module)
    reply = jr.cand.runner.request("build", deadline=jr.limits.setup_deadline(), stage=jr.stage, name=name,
                                   module="main", cls="ModelNew", init=init, seed=jr.cfg.seed, dtype=jr.cast)
    if "error" in reply:
        jr.fail(reply["error"], jr.cand)
    return reply
