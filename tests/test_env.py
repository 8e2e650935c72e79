"""KernelRefineEnv end to end on the CPU backend: real sandbox workers, real Triton (interpreter) kernels."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import tomllib
import warnings

import gymnasium as gym
import pytest
from gymnasium.error import ResetNeeded

import kernel_gym  # noqa: F401 - registers KernelRefine-v0
from kernel_gym.errors import (
    ConfigError,
    KernelGymError,
    TaskFileNotFoundError,
    TaskFormatError,
    UnknownNameError,
    UnknownPresetError,
    UnknownTaskError,
)
from kernel_gym.paths import data_dir
from kernel_gym.rewards import aggregate
from kernel_gym.tasks import list_tasks
from kernel_gym.trajectory import read_log

ERRORS = {
    "format_error",
    "rejected",
    "compile_error",
    "runtime_error",
    "timeout",
    "crash",
    "oom",
    "mismatch",
    "unsupported",
}
CONTRACT_KEYS = {
    "turn": int,
    "task": str,
    "backend": (str, type(None)),
    "format_ok": bool,
    "compiled": bool,
    "correct": bool,
    "speedup": (float, type(None)),
    "runtime_ms": (float, type(None)),
    "baseline_ms": (float, type(None)),
    "score": float,
    "hacks": list,
    "error": (str, type(None)),
    "feedback": str,
}
WRONG_BODY = "tl.minimum(x, 0.0)"  # relu with min instead of max: compiles, runs, wrong values


def check_info(info: dict, reward: float, turn: int) -> None:
    """Every contract key with its type, and the invariants between them."""
    for key, types in CONTRACT_KEYS.items():
        assert key in info, f"info lacks {key!r}"
        assert isinstance(info[key], types), f"info[{key!r}] = {info[key]!r} is not {types}"
    assert info["turn"] == turn
    assert type(reward) is float and reward == info["score"]
    assert all(isinstance(h, str) for h in info["hacks"])
    assert info["feedback"].strip()
    if info["correct"]:
        assert info["error"] is None and info["format_ok"] and info["compiled"] and not info["hacks"]
        assert info["speedup"] > 0 and info["runtime_ms"] > 0 and info["baseline_ms"] > 0
    else:
        assert info["error"] in ERRORS
        assert info["speedup"] is None
    if info["hacks"]:
        assert info["score"] == 0.0 and not info["correct"]
    if not info["format_ok"]:
        assert info["error"] == "format_error" and not info["compiled"]
    json.dumps(info)  # the log and the CLI serialize it


def step(env, action: str, turn: int = 1):
    obs, reward, terminated, truncated, info = env.step(action)
    assert isinstance(obs, str) and terminated is False
    check_info(info, reward, turn)
    return obs, reward, truncated, info


# ---- outcomes ---------------------------------------------------------------------------------------------
def test_correct_solution(make_env, respond, solution):
    env = make_env(max_turns=2)
    obs, info = env.reset(seed=0)
    assert "level1/relu" in obs and info["task"] == "level1/relu" and info["device"] == "cpu"
    obs, reward, truncated, info = step(env, respond(solution("level1/relu")))
    assert info["correct"] is True and info["error"] is None and info["backend"] == "triton"
    assert isinstance(info["speedup"], float) and info["speedup"] > 0
    assert info["speedup"] == pytest.approx(info["baseline_ms"] / info["runtime_ms"], rel=1e-9)
    assert reward == info["score"] == 0.3 + info["speedup"]
    assert info["feedback"].startswith("CORRECT.")
    assert truncated is False
    assert "CORRECT." in obs and "Turn 2 of 2" in obs


def test_reset_options_task_overrides(make_env, respond, solution):
    env = make_env(task="level1/relu", max_turns=1)
    obs, info = env.reset(seed=0, options={"task": "level2/gemm_relu"})
    assert info["task"] == "level2/gemm_relu" and "level2/gemm_relu" in obs
    _, reward, truncated, info = step(env, respond(solution("level2/gemm_relu")))
    assert info["task"] == "level2/gemm_relu" and info["correct"] and reward > 0.3
    assert truncated is True


def test_wrong_values_are_a_mismatch_with_the_error(make_env, respond, relu_code):
    env = make_env()
    env.reset(seed=0)
    _, reward, _, info = step(env, respond(relu_code(body=WRONG_BODY)))
    assert info["error"] == "mismatch" and info["compiled"] is True and reward == 0.0
    feedback = info["feedback"]
    assert feedback.startswith("WRONG OUTPUT")
    assert "max abs error" in feedback and "max rel error" in feedback
    assert "output 0 at index (" in feedback and "expected" in feedback


def test_wrong_shape_is_a_mismatch_with_a_shape_message(make_env, respond, relu_code):
    env = make_env()
    env.reset(seed=0)
    _, reward, _, info = step(env, respond(relu_code(ret="y[:-1]")))
    assert info["error"] == "mismatch" and reward == 0.0
    assert "has shape (15, 256), expected (16, 256)" in info["feedback"]


def test_syntax_error_is_a_format_error(make_env, respond, relu_code):
    env = make_env()
    env.reset(seed=0)
    code = relu_code().replace("def forward(self, x):", "def forward(self, x)")
    _, reward, _, info = step(env, respond(code))
    assert info["error"] == "format_error" and info["format_ok"] is False and reward == 0.0
    assert "syntax error at line" in info["feedback"]


def test_no_code_block_is_a_format_error(make_env):
    env = make_env()
    env.reset(seed=0)
    _, _, _, info = step(env, "I would write a kernel but forgot the code.")
    assert info["error"] == "format_error" and info["backend"] is None
    assert "no fenced code block" in info["feedback"]


def test_undefined_triton_function_is_a_compile_error(make_env, respond, relu_code):
    env = make_env()
    env.reset(seed=0)
    _, _, _, info = step(env, respond(relu_code(body="tl.no_such_function(x)")))
    assert info["error"] == "compile_error" and info["compiled"] is False
    assert "no_such_function" in info["feedback"]


def test_name_error_at_import_is_a_compile_error(make_env, respond, relu_code):
    env = make_env()
    env.reset(seed=0)
    _, _, _, info = step(env, respond(relu_code(header="undefined_module_constant + 1")))
    assert info["error"] == "compile_error"
    assert "NameError" in info["feedback"] and "undefined_module_constant" in info["feedback"]


def test_exception_in_a_later_forward_call_is_a_runtime_error(make_env, respond, relu_code):
    # the first forward call runs in the compile stage; this one fails from the second call on
    env = make_env()
    env.reset(seed=0)
    extra = "if self.calls > 1:\n    raise ValueError('boom in forward')"
    _, _, _, info = step(env, respond(relu_code(extra=extra)))
    assert info["error"] == "runtime_error" and info["compiled"] is True
    assert "ValueError: boom in forward" in info["feedback"]


def test_exception_in_the_first_forward_call_is_a_runtime_error(make_env, respond, relu_code):
    env = make_env()
    env.reset(seed=0)
    _, _, _, info = step(env, respond(relu_code(extra="raise ValueError('boom in forward')")))
    assert "ValueError: boom in forward" in info["feedback"]
    assert info["error"] == "runtime_error" and info["compiled"] is True


@pytest.mark.timeout(90)
def test_huge_allocation_is_oom_and_the_next_step_works(make_env, respond, relu_code, solution):
    env = make_env(max_turns=2)
    env.reset(seed=0)
    extra = "scratch = torch.empty(1 << 50, dtype=torch.uint8)"  # a petabyte: the allocator refuses at once
    _, reward, _, info = step(env, respond(relu_code(extra=extra)), turn=1)
    assert info["error"] == "oom" and reward == 0.0, info["feedback"]
    assert "OUT OF MEMORY" in info["feedback"]
    _, _, _, info = step(env, respond(solution("level1/relu")), turn=2)
    assert info["correct"], info["feedback"]


def test_infinite_loop_times_out_and_the_next_step_works(make_env, respond, relu_code, solution):
    env = make_env(max_turns=3, compile_timeout_s=5, run_timeout_s=5)
    env.reset(seed=0)
    _, reward, _, info = step(env, respond(relu_code(extra="while True:\n    n += 1")), turn=1)
    assert info["error"] == "timeout" and reward == 0.0
    assert "did not finish within 5 s" in info["feedback"]
    assert info["worker_recycled"] is True
    _, reward, _, info = step(env, respond(solution("level1/relu")), turn=2)
    assert info["correct"] is True and reward > 0.3


@pytest.mark.timeout(90)
def test_infinite_loop_after_the_first_call_times_out_in_the_run_stage(make_env, respond, relu_code, solution):
    # (10 s: the genuine step's whole run stage must fit it on 2 loaded cores too; 3 s failed once in CI)
    env = make_env(max_turns=2, compile_timeout_s=30, run_timeout_s=10)
    env.reset(seed=0)
    _, _, _, info = step(env, respond(relu_code(extra="while self.calls > 1:\n    n += 1")), turn=1)
    assert info["error"] == "timeout" and info["compiled"] is True
    assert "did not finish within 10 s" in info["feedback"] and "compile" not in info["feedback"]
    _, _, _, info = step(env, respond(solution("level1/relu")), turn=2)
    assert info["correct"] is True, (info["error"], info["feedback"][:500], info.get("stage_ms"))


def test_os_exit_is_rejected_by_the_static_checks(make_env, respond, relu_code):
    env = make_env()
    env.reset(seed=0)
    _, reward, _, info = step(env, respond(relu_code(header="import os", extra="os._exit(0)")))
    assert info["error"] == "rejected" and "introspection" in info["hacks"] and reward == 0.0


@pytest.mark.timeout(90)
def test_os_exit_in_forward_is_a_crash_and_the_next_step_works(make_env, pool, respond, relu_code, solution):
    # every static preset rejects os._exit, so `none` (no static rule) lets it reach the runner
    env = make_env(max_turns=2, evaluator=pool, checks="none")
    env.reset(seed=0)
    _, reward, _, info = step(env, respond(relu_code(header="import os", extra="os._exit(0)")), turn=1)
    assert info["error"] == "crash" and reward == 0.0
    assert "exited with code 0" in info["feedback"]
    _, _, _, info = step(env, respond(solution("level1/relu")), turn=2)
    assert info["correct"] is True


@pytest.mark.timeout(90)
def test_segfault_in_forward_is_a_crash_and_the_next_step_works(make_env, pool, respond, relu_code, solution):
    # ctypes is rejected by every static preset, so `none` (no static rule) lets it reach the runner
    env = make_env(max_turns=2, evaluator=pool, checks="none")
    env.reset(seed=0)
    _, reward, _, info = step(env, respond(relu_code(header="import ctypes", extra="ctypes.string_at(0)")), turn=1)
    assert info["error"] == "crash" and reward == 0.0
    assert "SIGSEGV" in info["feedback"]
    assert info["infra_failure"] is False  # the solution's crash: a verdict on the kernel
    _, _, _, info = step(env, respond(solution("level1/relu")), turn=2)
    assert info["correct"] is True


def test_an_evaluator_that_fails_is_an_infrastructure_crash_and_the_next_step_works(make_env, pool, respond,
                                                                                   solution):
    """The judge's own failure (here: its runners cannot start) is no verdict on the kernel: the turn is a `crash`
    marked `infra_failure`, with a message that says so, instead of an exception that would end the rollout."""
    from kernel_gym.errors import SandboxError

    class FailsOnce:
        calls = 0

        def evaluate(self, job):
            FailsOnce.calls += 1
            if FailsOnce.calls == 1:
                raise SandboxError("runner failed to start (ChannelTimeout): ")
            return pool.evaluate(job)

        def close(self):
            pass

    env = make_env(max_turns=2, evaluator=FailsOnce())
    env.reset(seed=0)
    _, reward, _, info = step(env, respond(solution("level1/relu")), turn=1)
    assert info["error"] == "crash" and reward == 0.0 and info["infra_failure"] is True
    assert "infrastructure failed" in info["feedback"] and "not the solution" in info["feedback"]
    _, _, _, info = step(env, respond(solution("level1/relu")), turn=2)
    assert info["correct"] is True and info["infra_failure"] is False


# ---- episodes ---------------------------------------------------------------------------------------------
def test_episode_history_scores_and_returns(make_env, respond, relu_code, solution):
    env = make_env(max_turns=3)
    env.reset(seed=0)
    r1 = respond(relu_code(body=WRONG_BODY), reasoning="Turn one idea: a flat grid with BLOCK=1024 for coalescing.")
    r2 = respond("def broken(:\n    pass", reasoning="Turn two idea: fix the mask bug with a where.")
    r3 = respond(solution("level1/relu"), reasoning="Turn three idea: tl.maximum with a larger block for bandwidth.")
    obs1, s1, trunc1, info1 = step(env, r1, turn=1)
    assert "scores" not in info1 and "returns" not in info1 and not trunc1
    assert "Turn one idea" in obs1 and "Turn 2 of 3" in obs1
    obs2, s2, trunc2, info2 = step(env, r2, turn=2)
    assert not trunc2
    # the observation for turn 3 carries the summaries of turns 1 and 2
    assert "Turn one idea: a flat grid with BLOCK=1024 for coalescing." in obs2
    assert "Turn two idea: fix the mask bug with a where." in obs2
    assert "### Turn 1: mismatch" in obs2 and "Turn 3 of 3" in obs2
    assert info1["reasoning_summary"].startswith("Turn one idea")
    obs3, s3, trunc3, info3 = step(env, r3, turn=3)
    assert trunc3 is True and info3["correct"]
    assert (info1["error"], info2["error"], info3["error"]) == ("mismatch", "format_error", None)
    assert info3["scores"] == [s1, s2, s3] == [0.0, 0.0, s3]
    assert info3["returns"] == aggregate([s1, s2, s3], 0.4, "sum")
    assert info3["returns"] == pytest.approx([0.16 * s3, 0.4 * s3, s3])
    assert info3["episode_end"] == "max_turns"
    with pytest.raises(ResetNeeded, match="reset"):  # gymnasium's own error type (and a KernelGymError)
        env.step(r3)
    with pytest.raises(KernelGymError):
        env.step(r3)
    # a reset starts a new episode at turn 1
    env.reset(seed=1)
    step(env, "no code", turn=1)


def test_max_aggregation_and_gamma_are_used(make_env):
    env = make_env(max_turns=2, aggregation="max", gamma=0.8, score=lambda t: 1.0 if t.format_ok else 0.5)
    env.reset(seed=0)
    step(env, "no code", turn=1)
    _, _, truncated, info = step(env, "still no code", turn=2)
    assert truncated and info["scores"] == [0.5, 0.5]
    assert info["returns"] == aggregate([0.5, 0.5], 0.8, "max") == [0.5, 0.5]


def test_suite_tasks_are_sampled_with_the_seed(make_env):
    env = make_env(task="suite:level1")
    picks = {env.reset(seed=s)[1]["task"] for s in range(12)}
    assert picks <= set(list_tasks("level1")) and len(picks) > 1
    assert env.reset(seed=3)[1]["task"] == env.reset(seed=3)[1]["task"]


def test_split_tasks_are_sampled_from_the_split(make_env):
    env = make_env(task="split:eval")
    picks = {env.reset(seed=s)[1]["task"] for s in range(12)}
    assert picks <= set(list_tasks(split="eval")) and len(picks) > 1
    assert not picks & set(list_tasks(split="train"))


def test_unknown_task_raises_at_make(make_env):
    with pytest.raises(UnknownTaskError, match="Did you mean 'level1/relu'"):
        make_env(task="level1/rleu")
    with pytest.raises(UnknownTaskError, match="Did you mean 'level1/relu'"):
        make_env(task=["level1/softmax", "level1/rleu"])
    with pytest.raises(UnknownNameError, match="unknown suite 'level4'"):
        make_env(task="suite:level4")


def test_task_file_mistakes_raise_at_make(make_env, tmp_path):
    with pytest.raises(TaskFileNotFoundError, match="task file not found: .*nope.py"):
        make_env(task=str(tmp_path / "nope.py"))
    bad = tmp_path / "no_inputs.py"
    bad.write_text("import torch\nclass Model(torch.nn.Module):\n    pass\ndef get_init_inputs():\n    return []\n")
    with pytest.raises(TaskFormatError, match="lacks get_inputs"):
        make_env(task=str(bad))


def test_render_mode_other_than_ansi_is_refused(make_env):
    with pytest.warns(UserWarning, match="render_mode='human'"), pytest.raises(ConfigError, match="render_mode must"):
        make_env(render_mode="human")  # gymnasium only warns; the env refuses
    env = make_env(render_mode="ansi")
    assert env.reset(seed=0)[0] == env.render()


# ---- gymnasium API ----------------------------------------------------------------------------------------
def test_check_env(make_env):
    from gymnasium.utils.env_checker import check_env

    env = make_env(max_turns=3)
    assert env.unwrapped.spec.nondeterministic is True  # timings differ run to run
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # check_env warns through warnings.warn: none may be raised
        check_env(env.unwrapped)
    # what check_env's determinism check skips for a nondeterministic env, checked where it holds:
    obs_a, _ = env.reset(seed=123)
    step_a = env.step("no code here")
    obs_b, _ = env.reset(seed=123)
    step_b = env.step("no code here")
    assert obs_a == obs_b and step_a[:4] == step_b[:4]
    assert env.observation_space.contains(step_a[0]) and env.action_space.contains("any text ü ```")


@pytest.mark.timeout(120)
def test_make_with_module_prefix_in_a_fresh_process(tmp_path):
    script = textwrap.dedent("""
        import sys
        import gymnasium as gym
        assert "kernel_gym" not in sys.modules
        env = gym.make("kernel_gym:KernelRefine-v0", task="level1/relu", device="cpu", max_turns=1)
        obs, info = env.reset(seed=0)
        _, reward, _, truncated, info = env.step("no code")
        env.close()
        print(type(env.unwrapped).__name__, info["task"], info["error"], truncated)
    """)
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=110)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["KernelRefineEnv", "level1/relu", "format_error", "True"]


def _make_cpu_env():
    return gym.make("KernelRefine-v0", task="level1/relu", device="cpu", max_turns=2)


@pytest.mark.timeout(180)
def test_async_vector_env(respond, solution, closing_vector_env):
    import torch

    x = torch.randn(4_000_000)
    (x - x).abs().max()  # the parent has used torch's intra-op pool before it forks (tests/test_fork_safety.py)
    with closing_vector_env(gym.vector.AsyncVectorEnv([_make_cpu_env, _make_cpu_env], shared_memory=False)) as envs:
        obs, infos = envs.reset(seed=0)
        assert len(obs) == 2 and all("level1/relu" in o for o in obs)
        action = respond(solution("level1/relu"))
        obs, rewards, terminated, truncated, infos = envs.step((action, action))
        assert infos["correct"].tolist() == [True, True]
        assert (rewards > 0.3).all() and not terminated.any() and not truncated.any()
        assert all("CORRECT." in o for o in obs)  # real text, not shared-memory '0's


# ---- configuration ----------------------------------------------------------------------------------------
def test_preset_kevin_loads_its_file_and_arguments_override(make_env):
    values = tomllib.loads((data_dir("envs") / "kevin.toml").read_text())
    config = make_env(preset="kevin").unwrapped.config
    for key, value in values.items():
        assert getattr(config, key) == value, key
    config = make_env(preset="kevin", max_turns=3, gamma=0.8).unwrapped.config
    assert (config.max_turns, config.gamma, config.score) == (3, 0.8, values["score"])


def test_preset_values_differ_from_defaults_when_the_file_says_so(make_env):
    assert make_env().unwrapped.config.checks == "standard"
    assert make_env(preset="kevin-strict").unwrapped.config.checks == "kevin-strict"
    assert make_env(preset="kevin-strict", checks="permissive").unwrapped.config.checks == "permissive"


def test_unknown_preset_raises_with_a_hint(make_env):
    with pytest.raises(UnknownPresetError, match="Did you mean 'kevin'"):
        make_env(preset="kevn")
    with pytest.raises(UnknownPresetError, match="Did you mean 'standard'"):
        make_env(checks="standrd")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"gamma": 2.0}, "gamma"),
        ({"max_turns": 0}, "max_turns"),
        ({"aggregation": "mean"}, "aggregation"),
        ({"devcie": "cpu"}, "devcie"),
        ({"backend": "opencl"}, "backend"),
    ],
)
def test_bad_arguments_raise_config_error(make_env, kwargs, match):
    with pytest.raises(ConfigError, match=match):
        make_env(**kwargs)


# ---- trajectory log ---------------------------------------------------------------------------------------
def test_log_dir_writes_one_record_per_step(make_env, respond, solution, tmp_path):
    env = make_env(max_turns=2, log_dir=str(tmp_path))
    env.reset(seed=0)
    actions = ["no code at all", respond(solution("level1/relu"))]
    returned = [env.step(a) for a in actions]
    env.close()
    files = list(tmp_path.glob("*.jsonl"))
    assert len(files) == 1
    lines = files[0].read_text().splitlines()
    assert len(lines) == 2
    records = [json.loads(line) for line in lines]
    for i, (record, action, (obs, reward, _, _, info)) in enumerate(zip(records, actions, returned), start=1):
        assert {"task", "turn", "action", "observation", "info"} <= set(record)
        assert record["task"] == "level1/relu" and record["turn"] == i
        assert record["action"] == action and record["observation"] == obs
        assert record["info"]["score"] == reward and record["info"]["error"] == info["error"]
    assert records[1]["info"]["correct"] is True and records[1]["info"]["returns"] == returned[1][4]["returns"]


@pytest.mark.timeout(120)
def test_log_survives_a_killed_process(tmp_path, solution):
    code_file = tmp_path / "relu.py"
    code_file.write_text(solution("level1/relu"))
    log_dir = tmp_path / "logs"
    script = textwrap.dedent("""
        import sys, time, pathlib
        import gymnasium as gym
        import kernel_gym
        code = pathlib.Path(sys.argv[1]).read_text()
        env = gym.make("KernelRefine-v0", task="level1/relu", device="cpu", max_turns=5, log_dir=sys.argv[2])
        env.reset(seed=0)
        env.step("reasoning\\n```python\\n" + code + "\\n```\\n")
        env.step("no code")
        print("STEPPED", flush=True)
        time.sleep(600)
    """)
    proc = subprocess.Popen(
        [sys.executable, "-c", script, str(code_file), str(log_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        assert line.strip() == "STEPPED", proc.stderr.read() if proc.poll() is not None else line
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        proc.stdout.close()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    (path,) = log_dir.glob("*.jsonl")
    records = read_log(path)
    assert [r["turn"] for r in records] == [1, 2]
    assert len(path.read_text().splitlines()) == 2
    assert records[0]["info"]["correct"] is True and records[1]["info"]["error"] == "format_error"


def test_auto_device_follows_a_given_evaluator():
    """A CPU-only trainer with GPU evaluation workers (Ray, a service): device="auto" takes the evaluator's."""
    import gymnasium as gym

    class RemoteGPU:
        device = "cuda"

        def evaluate(self, job):  # pragma: no cover - no step here
            raise AssertionError

        def close(self):
            pass

    env = gym.make("KernelRefine-v0", task="level1/relu", device="auto", evaluator=RemoteGPU())
    assert env.unwrapped.device == "cuda"
    env.close()
    env = gym.make("KernelRefine-v0", task="level1/relu", device="cpu", evaluator=RemoteGPU())
    assert env.unwrapped.device == "cpu"  # an explicit device wins
    env.close()
