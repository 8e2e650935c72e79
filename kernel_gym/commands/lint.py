"""`kernel-gym lint`: the static anti-hack rules alone on one solution file; nothing is compiled or executed.

    kernel-gym lint --task level1/matmul --solution sol.py [--checks standard] [--backend auto] [--json]

For filtering datasets or generations before any GPU time is spent. A `.py` file is a solution (all of it is code);
any other file is a whole model response (its last fenced code block is linted, as the env reads it; none is a format
error); `--solution-format code|response` says which instead (kernel_gym/solution_file.py). The verdict is the one
`eval` would give at its static stage: the same rules, preset and task policy (a library GEMM/conv is allowed only
beside other work of the task; see docs/anti-hacking.md). Exit code 0 whenever linting ran, whatever the verdict
(`--exit-code`: 1 when a rule fired); 2 for a usage error (missing file, unknown task or preset).

`--json` prints one object: {"task", "checks", "backend", "ok", "hacks": [rule names], "violations": [{"rule",
"line", "message"}], "error": null or the response's format error, "task_policy": {"library_gemm",
"epilogue_reduction", "single_gemm", "final_reductions"}}. The policy is kernel_gym.checks.library_policy's, the same
data the op audit and the profiler share of `eval` read, so lint and eval agree on it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from kernel_gym.backends import CHOICES


def register(sub: argparse._SubParsersAction) -> None:
    from kernel_gym.solution_file import FORMATS

    parser = sub.add_parser("lint", help="static anti-hack rules on a solution file (nothing executed)",
                            description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", required=True, help="a suite id (level1/relu) or a KernelBench-format .py path")
    parser.add_argument("--solution", required=True, help="a solution .py file (code), or a model response (.md, .txt, "
                                                          "...) whose last ``` block is the code")
    parser.add_argument("--solution-format", default="auto", choices=FORMATS,
                        help="auto: a .py file is code, any other file a model response")
    parser.add_argument("--checks", default="standard", help="anti-hack preset (strict, kevin-strict, standard, ...)")
    parser.add_argument("--backend", default="auto", choices=CHOICES)
    parser.add_argument("--json", action="store_true", help="print the verdict as one JSON object")
    parser.add_argument("--exit-code", action="store_true", help="exit with 1 when a rule fired")
    parser.set_defaults(func=run)


def lint(code_or_response: str, *, task: Any, checks: str = "standard", backend: str = "auto",
         response: bool = False) -> dict[str, Any]:
    """The static verdict for a solution's code (or, with `response`, a model response: its last fenced block, as
    the env reads it) on a loaded `Task`, as a JSON-ready dict."""
    from kernel_gym.actions import detect_backend, parse_action
    from kernel_gym.checks import get_preset, run_static_checks, task_policy

    get_preset(checks)  # an unknown preset is a usage error (UnknownPresetError)
    code, error = code_or_response, None
    if response:
        parsed = parse_action(code_or_response, backend=backend)
        code, error = parsed.code or "", parsed.error
    found = backend if backend != "auto" else (detect_backend(code) or "auto")
    violations = run_static_checks(code, checks, backend=found, task_dtype=task.dtype,
                                   allow_precision=task.allow_precision, task_source=task.source)
    policy = task_policy(task.source)
    return {"task": task.id, "checks": checks, "backend": found, "ok": not violations and error is None,
            "hacks": list(dict.fromkeys(v.rule for v in violations)),
            "violations": [{"rule": v.rule, "line": v.line, "message": v.message} for v in violations],
            "error": error,
            "task_policy": {"library_gemm": policy.library_gemm, "epilogue_reduction": policy.epilogue_reduction,
                            "single_gemm": policy.single_gemm, "final_reductions": sorted(policy.final_reductions)}}


def run(args: argparse.Namespace) -> int:
    from kernel_gym.errors import KernelGymError
    from kernel_gym.solution_file import is_code
    from kernel_gym.tasks import load_task

    path = Path(args.solution)
    if not path.is_file():
        print(f"kernel-gym lint: no such solution file: {path}", file=sys.stderr)
        return 2
    try:
        task = load_task(args.task)
        verdict = lint(path.read_text(errors="replace"), task=task, checks=args.checks, backend=args.backend,
                       response=not is_code(path, args.solution_format))
    except KernelGymError as e:
        print(f"kernel-gym lint: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(verdict))
    elif verdict["ok"]:
        print(f"ok: no static rule of `{args.checks}` fired ({verdict['task']}, backend {verdict['backend']})")
    else:
        if verdict["error"]:
            print(f"format error: {verdict['error']}")
        for v in verdict["violations"]:
            print(f"{path}:{v['line'] or 0}: [{v['rule']}] {v['message']}")
    return 1 if args.exit_code and not verdict["ok"] else 0
