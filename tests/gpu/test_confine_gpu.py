"""A confined runner on an NVIDIA GPU: what the judge/runner split needs must still work under
kernel_gym.sandbox.confine (Landlock, seccomp, the uid drop as root).

The test process plays the judge: it makes CUDA tensors and interprocess events and hands them to a runner child
through torch's CUDA IPC; the runner confines itself, writes its output through a Triton kernel (compiled, its cache
in the job directory) under torch.profiler with CUDA activities, and records "done"; the judge checks the output.
Written without a GPU at hand (the CPU side is tests/sandbox/test_confine.py): run with `pytest -m gpu`.

`test_a_cuda_runner_is_an_unprivileged_uid_of_its_own` is the same through the real judge pool: as root, both runners
drop to uids of their own (sandbox/uids.py) and the job is still judged through CUDA IPC (the judge root, the
runner another uid) and timed.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from kernel_gym.sandbox.limits import RUNNER_USER

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[2]

RUNNER = textwrap.dedent("""
    import json, os, pickle, sys
    from pathlib import Path
    cfg = json.loads(sys.argv[1])
    data = pickle.loads(sys.stdin.buffer.read())
    res = {}

    def step(name, fn):
        try:
            res[name] = fn()
        except BaseException as exc:
            res[name] = "ERR " + repr(exc)[:400]

    if cfg["uid"] is not None:  # as a runner does at its start: what its uid must reach (sandbox/mount_ns.py)
        from kernel_gym.sandbox import mount_ns
        mount_ns.prepare("candidate")
    import torch, triton, triton.language as tl, torch.profiler
    from kernel_gym.sandbox import confine

    def conf():
        reasons = {}
        applied = confine.apply(cfg["workdir"], uid=cfg["uid"], reasons=reasons)
        return {"applied": applied, "reasons": reasons}

    events = {}
    def open_events():
        for key in ("go", "done"):
            events[key] = torch.cuda.Event.from_ipc_handle(torch.cuda.current_device(), data[key])
        return True

    if cfg["order"] == "confine_first":
        step("confine", conf)
    step("cuda_init", lambda: torch.ones(1, device="cuda").add_(1).item() == 2)
    if cfg["events_before"]:
        step("events", open_events)
    if cfg["order"] == "init_first":
        step("confine", conf)
    if not cfg["events_before"]:
        step("events", open_events)

    @triton.jit
    def double(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)

    def work():
        (fx, ax), (fy, ay) = data["x"], data["out"]
        x, y = fx(*ax), fy(*ay)
        stream = torch.cuda.current_stream()
        stream.wait_event(events["go"])
        activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        with torch.profiler.profile(activities=activities) as prof:
            double[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
            torch.cuda.synchronize()
        events["done"].record(stream)
        torch.cuda.synchronize()
        return {"kernels": sum(1 for e in prof.events() if "double" in e.name),
                "cache": any(Path(cfg["workdir"], "triton").rglob("*"))}

    step("work", work)
    step("outside", lambda: open("/tmp/kg_confined_%d" % os.getpid(), "w").close() or "WROTE")
    print(json.dumps(res))
""")


@pytest.fixture(scope="module")
def shared():
    import torch
    from torch.multiprocessing.reductions import reduce_tensor

    x = torch.randn(1 << 20, device="cuda")
    out = torch.full_like(x, float("nan"))
    go, done = torch.cuda.Event(interprocess=True), torch.cuda.Event(interprocess=True)
    go.record()
    payload = {"x": reduce_tensor(x), "out": reduce_tensor(out), "go": go.ipc_handle(), "done": done.ipc_handle()}
    return x, out, done, pickle.dumps(payload)


def run_runner(shared, order: str, uid, events_before: bool) -> dict:
    import torch

    x, out, done, payload = shared
    out.fill_(float("nan"))
    torch.cuda.synchronize()
    workdir = Path(tempfile.mkdtemp(prefix="kg_confine_gpu_"))
    workdir.chmod(0o755)
    try:
        pythonpath = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
        env = dict(os.environ, PYTHONPATH=pythonpath, HOME=str(workdir), TMPDIR=str(workdir),
                   TRITON_CACHE_DIR=str(workdir / "triton"), PYTHONDONTWRITEBYTECODE="1",
                   LOGNAME=RUNNER_USER, USER=RUNNER_USER)  # as a runner's (its uid has no passwd entry)
        cfg = {"workdir": str(workdir), "order": order, "uid": uid, "events_before": events_before}
        script = workdir / "runner.py"  # @triton.jit needs its source in a file
        script.write_text(RUNNER)
        proc = subprocess.run([sys.executable, str(script), json.dumps(cfg)], input=payload, capture_output=True,
                              env=env, timeout=300, cwd=workdir)
        assert proc.returncode == 0, proc.stderr.decode()[-4000:]
        report = json.loads(proc.stdout.decode().strip().splitlines()[-1])
        torch.cuda.current_stream().wait_event(done)
        torch.cuda.synchronize()
        report["output_ok"] = bool(torch.equal(out, x * 2))
        return report
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


CONFINE_FIRST = pytest.param("confine_first", marks=pytest.mark.xfail(
    reason="measured on H100/H200 (driver 580): CUDA cannot start under Landlock (cudaGetDeviceCount: error 304, the "
           "driver opens /dev/nvidia* for writing), which is why a runner starts CUDA and opens the judge's events "
           "before it confines itself (kernel_gym/runner/serve.py)", strict=False))


@pytest.mark.parametrize("uid", [None, "auto"])
@pytest.mark.parametrize("order", ["init_first", CONFINE_FIRST])
def test_confined_runner_computes_through_cuda_ipc(shared, order, uid):
    report = run_runner(shared, order, uid, events_before=True)
    confined = report["confine"]
    assert isinstance(confined, dict), confined
    if uid == "auto" and not any(a.startswith("uid:") for a in confined["applied"]):
        pytest.skip(f"no uid drop here: {confined['reasons'].get('uid')}")
    if not {"landlock_fs", "seccomp"} & set(confined["applied"]):
        pytest.skip(f"neither Landlock nor seccomp here: {confined['reasons']}")
    assert report["cuda_init"] is True, report
    assert report["events"] is True, report
    assert isinstance(report["work"], dict), report
    assert report["work"]["kernels"] >= 1 and report["work"]["cache"], report  # profiled, compiled into the workdir
    assert report["output_ok"], report
    if "landlock_fs" in confined["applied"] or uid == "auto":
        assert report["outside"] != "WROTE", report


@pytest.mark.xfail(reason="CUDA event IPC reportedly resolves through /dev/shm, which a confined runner cannot "
                          "write (nor, after the uid drop, open): open events before confine.apply", strict=False)
def test_ipc_events_opened_after_confinement(shared):
    report = run_runner(shared, "init_first", "auto", events_before=False)
    assert report["events"] is True, report
    assert report["output_ok"], report


SOLUTIONS = ROOT / "tests" / "solutions"
# Run once in the candidate's runner: its uid and capabilities as it sees them, and whether it can signal the judge.
PROBE = """
import json, os
status = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines() if ":" in l)
try:
    os.kill({judge}, 0)
    _signal = "ok"
except OSError as e:
    _signal = e.errno
with open({out!r}, "w") as f:
    json.dump({{"uid": int(status["Uid"].split()[1]), "cap_eff": int(status["CapEff"].strip(), 16),
               "signal_judge": _signal}}, f)
"""


@pytest.mark.timeout(600)
@pytest.mark.parametrize("forkserver", ["0", "1"])
def test_a_cuda_runner_is_an_unprivileged_uid_of_its_own(forkserver, monkeypatch, tmp_path):
    """A genuine ReLU judged on the GPU through the real pool while the judge is root: CUDA IPC tensors and events
    between the root judge and a runner of another uid, the reference runner a third uid, the result correct and
    timed; `info["isolation"]` says what was in force."""
    import errno

    from kernel_gym.eval.job import EvalConfig, job_for
    from kernel_gym.eval.result import Outcome
    from kernel_gym.judge.pool import WorkerPool
    from kernel_gym.sandbox import isolation
    from kernel_gym.tasks import load_task

    monkeypatch.setenv("KERNEL_GYM_FORKSERVER", forkserver)
    scratch = Path(tempfile.mkdtemp(prefix="kernel_gym_test_scratch_"))
    scratch.chmod(0o1777)
    monkeypatch.setenv("KERNEL_GYM_RUNNER_WRITABLE", str(scratch))
    out = scratch / "probe.json"
    code = PROBE.format(judge=os.getpid(), out=str(out)) + (SOLUTIONS / "level1_relu.py").read_text()
    task = load_task("level1/relu")
    pool = WorkerPool("cuda", size=1, gpus=[0])
    try:
        result = pool.evaluate(job_for(task, code, backend="triton", config=EvalConfig(device="cuda")))
    finally:
        pool.close()
        from kernel_gym.judge import spawner

        spawner.stop_all()
    print("isolation", json.dumps(result.isolation), "preflight", json.dumps(isolation.preflight()))
    assert result.outcome is Outcome.CORRECT, result.message
    assert result.timing is not None and result.timing.runtime_ms > 0
    seen = result.isolation
    if os.geteuid() != 0:
        pytest.skip(f"the judge is not root here: runners keep its uid ({seen})")
    report = json.loads(out.read_text())
    shutil.rmtree(scratch, ignore_errors=True)
    assert seen["uid"] not in (0, None) and seen["uid"] == report["uid"], (seen, report)
    assert seen["capabilities"] == 0 == report["cap_eff"], (seen, report)
    assert seen["reference_uid"] not in (0, None, seen["uid"]), seen
    assert seen["no_new_privs"] and seen["seccomp"] and seen["weak"] is None, seen
    assert report["signal_judge"] == errno.EPERM, report


FILLS_ITS_FOLDER = """
for _i in range(10):  # 40 MiB in 4 MiB files, at import
    with open(f"part_{_i}.bin", "wb") as _f:
        _f.write(b"x" * (4 << 20))
"""


def test_a_cuda_runners_jobs_write_in_a_folder_of_bounded_size(monkeypatch):
    """As root, a cuda runner's jobs write in a tmpfs of bounded size in a mount namespace of its own (`disk_quota`,
    20 MiB here): many files end in "No space left on device", and the next genuine job is correct."""
    from kernel_gym.eval.job import EvalConfig, job_for
    from kernel_gym.judge.pool import WorkerPool
    from kernel_gym.tasks import load_task

    if os.geteuid() != 0:
        pytest.skip("the jobs' folder is a bounded tmpfs only as root")
    monkeypatch.setenv("KERNEL_GYM_RUNNER_DISK_GB", str(20 / 1024))
    genuine = (SOLUTIONS / "level1_relu.py").read_text()
    task = load_task("level1/relu")
    pool = WorkerPool("cuda", size=1, gpus=[0])
    try:
        fills = pool.evaluate(job_for(task, FILLS_ITS_FOLDER + genuine, backend="triton", config=EvalConfig(device="cuda")))
        after = pool.evaluate(job_for(task, genuine, backend="triton", config=EvalConfig(device="cuda")))
    finally:
        pool.close()
    print("isolation", json.dumps(fills.isolation))
    assert "disk_quota" in fills.isolation["pieces"], fills.isolation
    assert not fills.correct and "No space left on device" in fills.message, (fills.outcome, fills.message[:300])
    assert after.correct, after.message[:300]


FILLS_ITS_SHM = """
import os as _os
if _os.path.exists({planted!r}):
    raise RuntimeError("saw a file of the machine's /dev/shm")
with open("/dev/shm/fill.bin", "wb") as _f:  # 40 MiB where 20 are allowed
    for _i in range(10):
        _f.write(b"x" * (4 << 20))
"""


@pytest.mark.xfail(reason="opt-in on cuda (KERNEL_GYM_RUNNER_SHM_GB): on the H100 (2026-12-07f) the reference runner "
                   "could not attach the judge's CUDA IPC buffers under a private /dev/shm (KeyError 'in' then; the "
                   "bind's own error is reported now)", strict=False)
def test_a_cuda_runners_dev_shm_is_its_own_and_bounded(monkeypatch):
    """As root, a cuda runner's /dev/shm (writable for CUDA IPC's counters) is a tmpfs of its own (`private_shm`,
    20 MiB here): it does not see the machine's files there, a write past its size ends in "No space left on device"
    and reaches nothing of the machine's, and CUDA IPC still works: the next genuine job is correct."""
    import uuid

    from kernel_gym.eval.job import EvalConfig, job_for
    from kernel_gym.judge.pool import WorkerPool
    from kernel_gym.tasks import load_task

    if os.geteuid() != 0:
        pytest.skip("a private /dev/shm needs a mount namespace of the runner's own (root)")
    monkeypatch.setenv("KERNEL_GYM_RUNNER_SHM_GB", str(20 / 1024))
    planted = Path("/dev/shm") / f"kernel_gym_test_{uuid.uuid4().hex}"
    planted.write_bytes(b"another process's file")
    genuine = (SOLUTIONS / "level1_relu.py").read_text()
    task = load_task("level1/relu")
    pool = WorkerPool("cuda", size=1, gpus=[0])
    try:
        fills = pool.evaluate(job_for(task, FILLS_ITS_SHM.format(planted=str(planted)) + genuine, backend="triton",
                                      config=EvalConfig(device="cuda")))
        after = pool.evaluate(job_for(task, genuine, backend="triton", config=EvalConfig(device="cuda")))
    finally:
        pool.close()
        planted.unlink()
    print("isolation", json.dumps(fills.isolation))
    assert not fills.correct and "No space left on device" in fills.message, (fills.outcome, fills.message[:300])
    assert "private_shm" in fills.isolation["pieces"], fills.isolation
    assert not Path("/dev/shm/fill.bin").exists()
    assert after.correct, after.message[:300]
