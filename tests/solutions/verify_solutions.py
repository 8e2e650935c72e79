"""Helper (not a pytest test): check every task in tasks/ against its Triton solution(s) here.

CPU (default): runs under the Triton interpreter (TRITON_INTERPRET=1 is set before triton is
imported) at the task's KERNEL_GYM["cpu"] and KERNEL_GYM["alt"] sizes.

Each task is checked at its own dtype (KERNEL_GYM["dtype"]: float32 for levels 1 and 2, bfloat16 for level 3): its
inputs must have it, and a float32 task's solution must match the reference within --atol/--rtol, while a bf16 or
fp16 task's is judged as the env judges it, by the error budget against a float64 run of the reference
(kernel_gym.judge.error_budget: at most k times the reference's own error plus the dtype's floor).

    .venv/bin/python tests/solutions/verify_solutions.py [--only level1/relu ...]

GPU: `--device cuda` compiles the kernels for real; `--full` also runs the full (module-default)
sizes and the KERNEL_GYM["full_alt"] sizes, timing reference vs solution with CUDA events.
TF32 is switched off for the references on GPU unless --tf32 is given.
"""
import argparse
import ast
import glob
import importlib.util
import os
import sys
import time

sys.dont_write_bytecode = True

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TASKS = os.path.join(ROOT, "tasks")
SOLS = os.path.dirname(os.path.abspath(__file__))


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="cpu")
    p.add_argument("--full", action="store_true", help="also run full sizes (GPU only)")
    p.add_argument("--only", nargs="*", default=None, help="task ids, e.g. level1/relu")
    p.add_argument("--atol", type=float, default=1e-4)
    p.add_argument("--rtol", type=float, default=1e-4)
    p.add_argument("--full-atol", type=float, default=1e-3,
                   help="tolerance for --full sizes (fp32 summation order differs over long K)")
    p.add_argument("--full-rtol", type=float, default=1e-3)
    p.add_argument("--tf32", action="store_true",
                   help="GPU: leave torch's TF32 defaults (cudnn conv uses TF32!) instead of disabling TF32")
    p.add_argument("--max-cpu-seconds", type=float, default=1.0)
    return p.parse_args()


ARGS = parse_args()
if ARGS.device == "cpu":
    os.environ["TRITON_INTERPRET"] = "1"

import torch  # noqa: E402

from kernel_gym.judge.error_budget import DEFAULT_K, FLOOR, budget_for  # noqa: E402

FLOATING = ("float32", "float16", "bfloat16")

if ARGS.device != "cpu" and not ARGS.tf32:
    # fp32 tasks are judged against full-precision fp32 references
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

_counter = [0]


def load_module(path):
    _counter[0] += 1
    name = f"_kg_verify_{_counter[0]}_" + os.path.basename(path)[:-3]
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # triton's jit wants an importable module for some features
    spec.loader.exec_module(mod)
    return mod


def static_checks(path):
    """Check the file layout without relying on import side effects."""
    src = open(path).read()
    tree = ast.parse(src)
    assert ast.get_docstring(tree), "missing module docstring"
    kg = None
    globals_assigned = set()
    for node in tree.body:
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    globals_assigned.add(t.id)
                    if t.id == "KERNEL_GYM":
                        kg = ast.literal_eval(node.value)
    assert kg is not None, "no KERNEL_GYM literal"
    for key in ("cpu", "alt"):
        assert key in kg and isinstance(kg[key], dict) and kg[key], f"KERNEL_GYM[{key!r}] missing"
        for g in kg[key]:
            assert g in globals_assigned, f"KERNEL_GYM[{key!r}] key {g!r} is not a module global"
    assert kg["cpu"] != kg["alt"], "cpu and alt shapes are identical"
    for g in kg.get("full_alt", {}):
        assert g in globals_assigned, f"KERNEL_GYM['full_alt'] key {g!r} is not a module global"
    assert kg.get("dtype", "float32") in FLOATING, f"dtype {kg.get('dtype')!r} is not one of {FLOATING}"
    names = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    for n in ("Model", "get_inputs", "get_init_inputs"):
        assert n in names, f"missing {n}"
    return kg


def build(task_path, sol_path, overrides, device, seed=0):
    task = load_module(task_path)
    sol = load_module(sol_path)
    for k, v in overrides.items():
        setattr(task, k, v)
    init = task.get_init_inputs()
    torch.manual_seed(seed)
    ref = task.Model(*init).to(device)
    torch.manual_seed(seed)
    new = sol.ModelNew(*init).to(device)
    torch.manual_seed(seed + 1)
    inputs = task.get_inputs()
    assert all(t.device.type == "cpu" for t in inputs if torch.is_tensor(t)), \
        "get_inputs must not pick a device"
    dtype = getattr(task, "KERNEL_GYM", {}).get("dtype", "float32")
    floating = [t for t in inputs if torch.is_tensor(t) and t.is_floating_point()]
    assert all(str(t.dtype) == f"torch.{dtype}" for t in floating), \
        f"get_inputs' floating tensors are {sorted({str(t.dtype) for t in floating})}, the task says {dtype}"
    inputs = [t.to(device) if torch.is_tensor(t) else t for t in inputs]
    return task, ref, new, inputs


def oracle_verdict(ref, inputs, out_new, out_ref, dtype):
    """A half-precision task's verdict: the error budget against a float64 copy of the reference (as the judge)."""
    import copy

    exact = copy.deepcopy(ref).double()(*[t.double() if torch.is_tensor(t) and t.is_floating_point() else t
                                          for t in inputs])
    budget, _ = budget_for(0, out_new, out_ref, exact, DEFAULT_K, FLOOR[dtype])
    report = budget.report()
    text = (f"{report['metric']} {report['candidate_error']:.3g} vs the reference's {report['reference_error']:.3g}, "
            f"limit {report['limit']:.3g}")
    return budget.ok, text


def sync(device):
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def time_forward(fn, device, reps):
    if device.startswith("cuda"):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            fn()
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) / reps / 1e3
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t0) / reps


def check_case(task_id, task_path, sol_path, label, overrides, device):
    task, ref, new, inputs = build(task_path, sol_path, overrides, device)
    with torch.no_grad():
        t0 = time.perf_counter()
        out_ref = ref(*inputs)
        sync(device)
        t_ref_first = time.perf_counter() - t0
        t0 = time.perf_counter()
        out_new = new(*inputs)
        sync(device)
        t_new_first = time.perf_counter() - t0
        problems = []
        notes = []
        if not torch.isfinite(out_ref).all():
            problems.append("reference output not finite")
        if out_ref.numel() < 2 or bool((out_ref == out_ref.reshape(-1)[0]).all()):
            problems.append("reference output constant")
        if out_new.shape != out_ref.shape:
            problems.append(f"shape {tuple(out_new.shape)} != {tuple(out_ref.shape)}")
            max_err = float("nan")
        else:
            max_err = (out_new.float() - out_ref.float()).abs().max().item()
            atol, rtol = (ARGS.full_atol, ARGS.full_rtol) if label in ("full", "falt") else (ARGS.atol, ARGS.rtol)
            dtype = str(out_ref.dtype).removeprefix("torch.")
            if out_new.dtype != out_ref.dtype:
                problems.append(f"dtype {out_new.dtype} != {out_ref.dtype}")
            elif dtype in ("float16", "bfloat16"):
                within, text = oracle_verdict(ref, inputs, out_new, out_ref, dtype)
                (notes if within else problems).append(f"error budget: {text}")
            elif not torch.allclose(out_new, out_ref, atol=atol, rtol=rtol):
                problems.append(f"mismatch max_abs_err={max_err:.3e} (atol={atol}, rtol={rtol})")
            elif label in ("full", "falt") and not torch.allclose(out_new, out_ref, atol=1e-4, rtol=1e-4):
                notes.append(f"note: passes at {atol}/{rtol} but not at 1e-4/1e-4")
        reps = 20 if device.startswith("cuda") else 3
        if device.startswith("cuda"):
            t_ref = time_forward(lambda: ref(*inputs), device, reps)
            t_new = time_forward(lambda: new(*inputs), device, reps)
        else:
            t_ref = time_forward(lambda: ref(*inputs), device, reps)
            t_new = time_forward(lambda: new(*inputs), device, reps)
            if max(t_new, t_new_first) >= ARGS.max_cpu_seconds:
                problems.append(f"too slow on CPU: {max(t_new, t_new_first):.3f}s")
    shape_str = ",".join(f"{k}={v}" for k, v in overrides.items()) or "module defaults"
    status = "PASS" if not problems else "FAIL"
    print(f"{status} {task_id:34s} {label:4s} [{shape_str}] out={tuple(out_ref.shape)} "
          f"max_err={max_err:.2e} ref={t_ref * 1e3:9.3f}ms new={t_new * 1e3:9.3f}ms "
          f"(first call new={t_new_first * 1e3:.1f}ms)"
          + ("" if not problems else "  <-- " + "; ".join(problems))
          + ("" if not notes else "  (" + "; ".join(notes) + ")"), flush=True)
    return not problems


def full_input_bytes(task_path, overrides=None):
    task = load_module(task_path)
    for k, v in (overrides or {}).items():
        setattr(task, k, v)
    with torch.device("meta"):
        inputs = task.get_inputs()
    return sum(t.numel() * t.element_size() for t in inputs if torch.is_tensor(t))


def main():
    task_files = sorted(glob.glob(os.path.join(TASKS, "level*", "*.py")))
    ok = True
    n_cases = 0
    for task_path in task_files:
        task_id = os.path.relpath(task_path, TASKS)[:-3].replace(os.sep, "/")
        if ARGS.only and task_id not in ARGS.only:
            continue
        try:
            kg = static_checks(task_path)
        except Exception as e:  # noqa: BLE001
            print(f"FAIL {task_id}: static check: {e}")
            ok = False
            continue
        mb = full_input_bytes(task_path) / 2**20
        mb_alt = full_input_bytes(task_path, kg.get("full_alt")) / 2**20
        print(f"---- {task_id}: full-size inputs {mb:.0f} MiB, full_alt {mb_alt:.0f} MiB"
              + ("  <-- over 1 GiB" if max(mb, mb_alt) > 1024 else ""))
        if max(mb, mb_alt) > 1024:
            ok = False
        level, name = task_id.split("/")
        sols = sorted(glob.glob(os.path.join(SOLS, f"{level}_{name}.py"))
                      + glob.glob(os.path.join(SOLS, f"{level}_{name}_*.py")))
        if not sols:  # most suite tasks have no hand-written solution; only those that do are verified
            print(f"skip {task_id}: no solution file")
            continue
        for sol_path in sols:
            label_id = os.path.basename(sol_path)[:-3]
            cases = [("cpu", kg["cpu"]), ("alt", kg["alt"])]
            if ARGS.full and ARGS.device != "cpu":
                cases.append(("full", {}))
                if kg.get("full_alt"):
                    cases.append(("falt", kg["full_alt"]))
            for label, ov in cases:
                n_cases += 1
                try:
                    ok &= check_case(label_id, task_path, sol_path, label, ov, ARGS.device)
                except Exception as e:  # noqa: BLE001
                    import traceback
                    traceback.print_exc()
                    print(f"FAIL {label_id} {label}: exception {type(e).__name__}: {e}")
                    ok = False
                if ARGS.device.startswith("cuda"):
                    torch.cuda.empty_cache()
    if ARGS.device != "cpu":
        print("torch", torch.__version__, "cuda.matmul.allow_tf32 =", torch.backends.cuda.matmul.allow_tf32,
              "cudnn.allow_tf32 =", torch.backends.cudnn.allow_tf32)
    print(f"{'ALL PASS' if ok else 'SOME FAILED'} ({n_cases} cases, device={ARGS.device}, "
          f"TRITON_INTERPRET={os.environ.get('TRITON_INTERPRET', '0')})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
