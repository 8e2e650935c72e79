"""benchmarks/bench_backends.py's CPU parts: arguments, the solutions it names, the salting of sources, the report
from a saved run; bench_judge's agreement table; the two bench-only bf16 GEMMs (tests/solutions/bf16) pass the static
rules, and the Triton one computes right (at fp16 under the interpreter: bf16 arithmetic is wrong there). Nothing
here needs a GPU; the benchmark itself runs on one (benchmarks/device_session.sh, stage `backends`)."""

from __future__ import annotations

import ast
import importlib.util
import json
import sys
import types
from pathlib import Path

import pytest

from kernel_gym.checks import run_static_checks

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def _load(name: str):
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


bb = _load("bench_backends")

SAVED = {
    "card": "NVIDIA H100 80GB HBM3", "torch": "2.11.0", "jobs": 8,
    "backends": {
        "triton": {"compile": {
            "relu": {"cold": {"n": 8, "wall_s": 9.5, "outcomes": {"correct": 8}, "compile_ms": 2150.0,
                              "compile_segments_ms": 1900.0},
                     "warm": {"n": 8, "wall_s": 6.1, "outcomes": {"correct": 8}, "compile_ms": 1200.0,
                              "compile_segments_ms": 1000.0}}}},
        "tilelang": {"skipped": "package 'tilelang' not installed"},
    },
    "agreement": [
        {"backend": "triton", "solution": "relu", "task": "level1/relu", "judge_speedup": 1.01,
         "do_bench_speedup": 1.0, "diff_pct": 1.0},
        {"backend": "cuda", "solution": "gemm_bf16", "task": "level1/matmul", "judge_speedup": 0.5,
         "do_bench_speedup": 0.45, "diff_pct": 11.1},
        {"backend": "helion", "solution": "relu", "task": "level1/relu", "error": "compile_error: boom"},
    ],
}


def test_arguments_default_to_every_backend_both_sections_eight_jobs():
    args = bb.parse_args([])
    assert args.backends == ["triton", "cuda", "helion", "cute_dsl", "tilelang"]
    assert args.sections == ["compile", "agreement"] and args.phases == ["cold", "warm"]
    assert args.jobs == 8 and args.report is None and not args.keep_caches
    args = bb.parse_args(["--backends", "tilelang", "--sections", "agreement", "--jobs", "4", "--out", "x"])
    assert args.backends == ["tilelang"] and args.sections == ["agreement"] and args.jobs == 4
    with pytest.raises(SystemExit):
        bb.parse_args(["--backends", "thunderkittens"])


def test_every_backend_has_a_relu_and_a_bf16_gemm_that_exist():
    for backend, sols in bb.SOLUTIONS.items():
        assert [s.kind for s in sols] == ["relu", "gemm_bf16"], backend
        assert all(s.path.is_file() for s in sols), backend
        assert sols[1].task == "level1/matmul" and sols[1].precision == "bf16"
    assert set(bb.PACKAGES) == set(bb.SOLUTIONS) == set(bb.AGREEMENT_FIRST)


@pytest.mark.parametrize("backend", list(bb.SOLUTIONS))
def test_salting_marks_every_kernel_and_keeps_the_code_valid(backend):
    for sol in bb.SOLUTIONS[backend]:
        code = sol.path.read_text()
        salted = bb.salt(code, backend, "7-abc")
        assert salted != code and bb.salt(code, backend, "8-abc") != salted
        ast.parse(salted)
        if backend == "cuda":
            assert "// variant 7-abc\n__global__" in salted
        else:
            decorated = [n for n in ast.walk(ast.parse(code)) if isinstance(n, ast.FunctionDef) and any(
                any(k in ast.unparse(d) for k in bb.SALTED_DECORATORS) for d in n.decorator_list)]
            assert salted.count("# variant 7-abc") == len(decorated) >= 1


def test_salted_triton_solution_still_passes_the_static_rules():
    sol = bb.SOLUTIONS["triton"][0]
    assert run_static_checks(bb.salt(sol.path.read_text(), "triton", "1-x"), "strict", backend="triton") == []


def test_a_backend_without_its_package_is_skipped_with_the_reason(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "helion" else real(name, *a))
    assert bb.missing("helion") == "package 'helion' not installed"
    assert bb.missing("triton") is None


def test_summarize_takes_medians_of_the_compile_stage():
    def result(outcome, compile_ms, message=""):
        return types.SimpleNamespace(outcome=types.SimpleNamespace(value=outcome), message=message,
                                     stage_ms={"compile": compile_ms, "compile_segments": compile_ms - 100})

    out = bb.summarize([result("correct", 1000), result("correct", 3000), result("compile_error", 2000, "nvcc")], 4.2)
    assert out["compile_ms"] == 2000 and out["compile_segments_ms"] == 1900 and out["compile_ms_range"] == [1000, 3000]
    assert out["outcomes"] == {"correct": 2, "compile_error": 1} and out["first_error"] == "nvcc"


def test_report_from_a_saved_run(tmp_path, capsys):
    text = bb.report(SAVED)
    assert "| triton | relu | 2.15 | 1.90 | 1.20 | 1.00 | 9.5 |" in text
    assert "| tilelang | — | skipped: package 'tilelang' not installed |" in text
    assert "| triton | relu | 1.010 | 1.000 | +1.0 % | yes |" in text
    assert "| cuda | gemm_bf16 | 0.500 | 0.450 | +11.1 % | **no** |" in text
    assert "| helion | relu | compile_error: boom |" in text
    assert "median |difference| 6.0 %, worst 11.1 %" in text
    saved = tmp_path / "backends.json"
    saved.write_text(json.dumps(SAVED))
    assert bb.main(["--report", str(saved)]) == 0
    assert capsys.readouterr().out == text


def test_main_skips_a_missing_backend_and_saves_what_the_sections_found(tmp_path, monkeypatch, capsys):
    calls = {}

    def compile_section(backends, jobs, phases, keep, sink):
        calls["compile"] = (backends, jobs, phases, keep)
        for b in backends:
            sink[b]["compile"] = {"relu": {p: {"compile_ms": 1000.0, "outcomes": {"correct": jobs}} for p in phases}}

    def agreement_section(backends, repeats, rows):
        calls["agreement"] = (backends, repeats)
        rows.append({"backend": backends[0], "solution": "relu", "task": "level1/relu", "judge_speedup": 1.0,
                     "do_bench_speedup": 1.0, "diff_pct": 0.0})

    monkeypatch.setattr(bb, "missing", lambda b: "package 'tilelang' not installed" if b == "tilelang" else None)
    monkeypatch.setattr(bb, "section_compile", compile_section)
    monkeypatch.setattr(bb, "section_agreement", agreement_section)
    assert bb.main(["--backends", "triton", "tilelang", "--jobs", "2", "--out", str(tmp_path)]) == 0
    assert calls == {"compile": (["triton"], 2, ["cold", "warm"], False), "agreement": (["triton"], 3)}
    data = json.loads((tmp_path / "backends.json").read_text())
    assert data["backends"]["tilelang"] == {"skipped": "package 'tilelang' not installed"}
    assert data["backends"]["triton"]["compile"]["relu"]["warm"]["compile_ms"] == 1000.0
    assert len(data["agreement"]) == 1 and "| triton | relu | 1.000 | 1.000 | +0.0 % | yes |" in capsys.readouterr().out


def test_bench_judge_agreement_table_names_rows_by_label():
    table = _load("bench_judge").agreement_table([
        {"task": "level1/relu", "label": "cute_dsl relu", "judge_runtime_ms": 1.0, "judge_baseline_ms": 2.0,
         "do_bench_runtime_ms": 1.0, "do_bench_baseline_ms": 2.02, "judge_speedup": 2.0, "do_bench_speedup": 2.02,
         "diff_pct": -1.0},
        {"task": "level1/softmax", "error": "mismatch: x"}])
    assert "| cute_dsl relu | 1.0000 / 2.0000 | 1.0000 / 2.0200 | 2.000 | 2.020 | -1.0 % |" in table
    assert "| level1/softmax | mismatch: x |" in table and "worst 1.0 %" in table


@pytest.mark.parametrize("backend", ["triton", "cuda"])
def test_the_bench_bf16_gemms_pass_the_static_rules(backend):
    code = bb.SOLUTIONS[backend][1].path.read_text()
    for preset in ("strict", "standard", "permissive"):
        assert run_static_checks(code, preset, backend=backend, task_dtype="bfloat16") == [], preset


@pytest.mark.timeout(120)
def test_the_triton_bf16_gemm_computes_right_at_fp16_on_cpu():
    import gymnasium as gym

    import kernel_gym  # noqa: F401

    env = gym.make("KernelRefine-v0", task="level1/matmul", device="cpu", precision="fp16", max_turns=1)
    try:
        env.reset(seed=0)
        code = bb.SOLUTIONS["triton"][1].path.read_text()
        info = env.step("GEMM.\n```python\n" + code + "```\n")[4]
    finally:
        env.close()
    assert info["correct"] and info["hacks"] == [], info["feedback"]
