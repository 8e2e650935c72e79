"""The OpenRLHF adapter against the real OpenRLHF package (installed with --no-deps: no vLLM, no DeepSpeed).

Only the generation engine is replaced (a scripted responder with vLLM's output shape). The tokenizer is a real
transformers tokenizer (`PreTrainedTokenizerFast`) with a ChatML chat template, but not a pretrained one: no model
hub is reachable here, so its byte-level BPE vocabulary is trained on the spot from a small corpus.
"""

from __future__ import annotations

import ast
import asyncio
import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

pytest.importorskip("openrlhf.utils.agent", reason="OpenRLHF is not installed (pip install --no-deps openrlhf "
                                                   "pylatexenc aiohttp; .ci/run does)")

from chat_helpers import chat_tokenizer  # noqa: E402
from openrlhf.utils.agent import AgentExecutorBase, AgentInstanceBase, MultiTurnAgentExecutor  # noqa: E402

from kernel_gym.integrations import openrlhf as adapter  # noqa: E402
from kernel_gym.integrations import openrlhf_train as launcher  # noqa: E402
from kernel_gym.rewards import aggregate  # noqa: E402

NO_CODE = "I think a fused kernel would help, but I forgot the code."


@pytest.fixture(scope="module")
def tokenizer(repo_root):
    return chat_tokenizer(repo_root, vocab_size=800)


class ScriptedEngine:
    """Stands in for OpenRLHF's vLLM actor: `generate(token_ids, sampling_params)` answers the next scripted text."""

    def __init__(self, tokenizer, responses):
        self.tokenizer, self.responses, self.prompts = tokenizer, list(responses), []

    summary = "SUMMARY: a one-pass kernel, masked loads"  # the answer to a summary request (policy summaries)
    summaries = 0

    async def generate(self, prompt_token_ids, sampling_params, multi_modal_data=None):
        if "Summarize it in at most" in self.tokenizer.decode(prompt_token_ids):
            self.summaries += 1
            out = types.SimpleNamespace(token_ids=[0], text=self.summary, finish_reason="stop", logprobs=None)
            return types.SimpleNamespace(outputs=[out])
        self.prompts.append(list(prompt_token_ids))
        text = self.responses.pop(0)
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"] + [self.tokenizer.eos_token_id]
        ids = ids[: sampling_params.max_tokens]
        out = types.SimpleNamespace(token_ids=ids, text=text, finish_reason="stop", logprobs=None)
        return types.SimpleNamespace(outputs=[out])


def sampling_params(max_tokens=None):
    # vLLM's SamplingParams is not installable here; the executor reads max_tokens and logprobs and deep-copies it.
    return types.SimpleNamespace(max_tokens=max_tokens, logprobs=None, temperature=1.0)


def chat_prompt(tokenizer, text):
    return tokenizer.apply_chat_template([{"role": "user", "content": text}], tokenize=False, add_generation_prompt=True)


def reset_prompt(evaluator, **kwargs):
    from kernel_gym.env import KernelRefineEnv

    env = KernelRefineEnv(evaluator=evaluator, **kwargs)
    try:
        return env.reset(seed=0)[0]
    finally:
        env.close()


# ---- API shape -----------------------------------------------------------------------------------------------------
def test_classes_build_on_openrlhf_bases():
    assert issubclass(adapter.KernelRefineAgent, AgentInstanceBase)
    assert issubclass(adapter.KernelRefineExecutor, AgentExecutorBase)
    assert adapter.AgentExecutor is adapter.KernelRefineExecutor
    MultiTurnAgentExecutor(adapter.KernelRefineAgent)  # the stock executor accepts the agent class


def test_module_file_loads_the_way_openrlhf_loads_it(monkeypatch):
    import importlib.util

    monkeypatch.delenv(adapter.ENV_MODE, raising=False)
    path = subprocess.run([sys.executable, "-m", "kernel_gym.cli", "openrlhf-agent-path"], capture_output=True,
                          text=True, check=True).stdout.strip()
    assert Path(path).resolve() == Path(adapter.__file__).resolve() and path.endswith(".py")
    spec = importlib.util.spec_from_file_location("agent_module", path)  # as OpenRLHF's _load_agent_executor does
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    executor = module.AgentExecutor()
    assert isinstance(executor, AgentExecutorBase) and executor.mode == "sum"


def test_labels_and_environment_defaults(monkeypatch):
    monkeypatch.setenv("KERNEL_GYM_MAX_TURNS", "5")
    monkeypatch.setenv("KERNEL_GYM_GAMMA", "0.8")
    monkeypatch.setenv("KERNEL_GYM_RETURN_MODE", "max")
    monkeypatch.setenv("KERNEL_GYM_ENV_KWARGS", '{"checks": "strict"}')
    kwargs, seed = adapter.env_settings(json.dumps({"task": "level1/relu", "max_turns": 2, "seed": 7}))
    assert kwargs == {"task": "level1/relu", "max_turns": 2, "gamma": 0.8, "aggregation": "max", "checks": "strict"}
    assert seed == 7
    assert adapter.parse_label("level1/relu") == {"task": "level1/relu"}
    with pytest.raises(adapter.ConfigError):
        adapter.parse_label('{"max_turns": 2}')
    with pytest.raises(adapter.ConfigError):
        adapter.executor_mode("episodes")


def test_evaluator_spec_selects_backends_lazily(monkeypatch):
    from kernel_gym.integrations import shared_evaluator as shared
    from kernel_gym.judge.local import LocalEvaluator

    made = []

    class Fake:
        def __init__(self, *args, **kwargs):
            made.append((type(self).__name__, args, kwargs))

        def close(self):
            pass

    ray_mod = types.ModuleType("kernel_gym.integrations.ray")
    ray_mod.RayEvaluator = type("RayEvaluator", (Fake,), {})
    service = types.ModuleType("kernel_gym.service")
    client = types.ModuleType("kernel_gym.service.client")
    client.ServiceEvaluator = type("ServiceEvaluator", (Fake,), {})
    monkeypatch.setitem(sys.modules, "kernel_gym.integrations.ray", ray_mod)
    monkeypatch.setitem(sys.modules, "kernel_gym.service", service)
    monkeypatch.setitem(sys.modules, "kernel_gym.service.client", client)
    try:
        monkeypatch.setenv("KERNEL_GYM_EVALUATOR", "ray://head:10001")
        first = shared.shared_evaluator("cuda")
        assert type(first).__name__ == "RayEvaluator" and shared.shared_evaluator("cuda") is first  # one per process
        monkeypatch.setenv("KERNEL_GYM_EVALUATOR", "http://evalhost:8000")
        assert type(shared.shared_evaluator("cuda")).__name__ == "ServiceEvaluator"
        monkeypatch.delenv("KERNEL_GYM_EVALUATOR")
        monkeypatch.setenv("KERNEL_GYM_EVAL_WORKERS", "3")
        assert shared.evaluator_settings() == ("local", 3)
        local = shared.evaluator_settings("local", 2)
        assert local == ("local", 2)
    finally:
        shared.close_shared_evaluators()
    assert [m[0] for m in made] == ["RayEvaluator", "ServiceEvaluator"]
    assert made[0][2] == {"address": "ray://head:10001"} and made[1][1] == ("http://evalhost:8000",)
    assert LocalEvaluator.__name__ == "LocalEvaluator"


# ---- the agent -----------------------------------------------------------------------------------------------------
def test_agent_multi_turn_episode(evaluator, respond, solution, relu_code, tokenizer):
    label = json.dumps({"task": "level1/relu", "device": "cpu", "max_turns": 3, "gamma": 0.5})
    prompt = chat_prompt(tokenizer, reset_prompt(evaluator, task="level1/relu", device="cpu", max_turns=3))
    agent = adapter.KernelRefineAgent(chat=adapter.ChatFormat(tokenizer), evaluator=evaluator)

    async def episode():
        reset = await agent.reset({"observation": prompt, "label": label})
        assert reset["observation"] == prompt
        steps = []
        for action in (NO_CODE, respond(relu_code(body="tl.minimum(x, 0.0)")), respond(solution("level1/relu"))):
            steps.append(await agent.step({"observation_text": prompt, "action_text": action, "label": label,
                                           "sampling_params": sampling_params(), "action_end": "<|im_end|>"}))
        return steps

    first, second, third = asyncio.run(episode())
    assert first["done"] is False and first["rewards"].item() == 0.0
    assert first["environment_feedback"].startswith("\n<|im_start|>user\nResult of turn 1: FORMAT ERROR")
    assert first["environment_feedback"].endswith("one ```python code block.<|im_end|>\n<|im_start|>assistant\n")
    assert "Turn 2 of 3" in first["environment_feedback"]
    assert first["extra_logs"]["kernel/error_code"] == adapter.ERROR_CODES.index("format_error")
    assert second["done"] is False and second["rewards"].item() == 0.0
    assert "WRONG OUTPUT" in second["environment_feedback"]
    assert second["extra_logs"]["kernel/compiled"] == 1.0 and second["extra_logs"]["kernel/correct"] == 0.0
    assert third["done"] is True and third["environment_feedback"] == ""
    assert third["extra_logs"]["kernel/correct"] == 1.0 and third["extra_logs"]["kernel/hacks"] == 0.0
    assert third["rewards"].item() == pytest.approx(third["info"]["score"]) and third["rewards"].item() > 0.3
    assert third["scores"].item() == pytest.approx(third["info"]["score"])
    assert third["info"]["returns"] == aggregate([0.0, 0.0, third["info"]["score"]], 0.5, "sum")
    assert agent.env is None  # closed at the end of its episode; the shared evaluator stays open
    assert evaluator.pool is not None


def test_evaluation_runs_off_the_event_loop(respond, relu_code):
    """While one episode waits on its evaluation, the event loop (vLLM's, in training) keeps running."""
    import time

    from kernel_gym.eval.result import EvalResult, Outcome

    class SlowEvaluator:  # stands in for a busy evaluation pool: 0.5 s per job
        def evaluate(self, job):
            time.sleep(0.5)
            return EvalResult(outcome=Outcome.MISMATCH, message="slow")

        def close(self):
            pass

    agent = adapter.KernelRefineAgent(evaluator=SlowEvaluator())
    label = json.dumps({"task": "level1/relu", "device": "cpu", "max_turns": 1})

    async def main():
        await agent.reset({"observation": "", "label": label})
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        ticking = asyncio.create_task(ticker())
        result = await agent.step({"observation_text": "", "action_text": respond(relu_code()), "label": label})
        ticking.cancel()
        return result, ticks

    result, ticks = asyncio.run(main())
    assert result["done"] is True and result["extra_logs"]["kernel/error_code"] == adapter.ERROR_CODES.index("mismatch")
    assert ticks >= 10


def test_chat_format_follows_the_dataset_prompt(tokenizer):
    chat = adapter.ChatFormat(tokenizer)
    chat.learn(chat_prompt(tokenizer, "the observation"), "the observation")  # the prompt wraps the observation
    assert chat.user_turn("next") == chat_prompt(tokenizer, "next")
    other = adapter.ChatFormat(tokenizer)
    other.learn(chat_prompt(tokenizer, "another task's prompt"), "this episode's observation")  # template detected
    assert other.user_turn("next") == chat_prompt(tokenizer, "next")
    plain = adapter.ChatFormat(tokenizer)
    plain.learn("the observation", "the observation")  # no chat template applied to the dataset: plain text
    assert plain.user_turn("next") == "next" and plain.followup("fb") == "\n\nfb\n\n"


def test_agent_runs_under_openrlhfs_stock_multi_turn_executor(evaluator, tokenizer):
    """OpenRLHF's own MultiTurnAgentExecutor (it creates the agent with no arguments) over a 2-turn episode."""

    class Agent(adapter.KernelRefineAgent):
        def __init__(self):
            super().__init__(evaluator=evaluator)

    raw = reset_prompt(evaluator, task="level1/relu", device="cpu", max_turns=2)
    engine = ScriptedEngine(tokenizer, [NO_CODE, NO_CODE])
    label = json.dumps({"task": "level1/relu", "device": "cpu", "max_turns": 2})
    out = asyncio.run(MultiTurnAgentExecutor(Agent).execute(raw, label, sampling_params(), 8192, tokenizer, engine))
    assert len(out["action_ranges"]) == 2 and out["reward"] == 0.0
    assert out["extra_logs"]["kernel/turn"] == 2.0
    assert out["extra_logs"]["kernel/error_code"] == adapter.ERROR_CODES.index("format_error")
    text = tokenizer.decode(out["observation_tokens"])
    assert text.startswith(raw) and "Result of turn 1: FORMAT ERROR" in text and "Result of turn 2" not in text


# ---- the executor --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["sum", "max"])
def test_turns_executor_returns_match_aggregate(mode, monkeypatch, evaluator, respond, solution, tokenizer):
    monkeypatch.setenv(adapter.ENV_FLATTEN, "1")
    monkeypatch.setenv("KERNEL_GYM_GAMMA", "0.5")
    monkeypatch.setenv("KERNEL_GYM_RETURN_MODE", mode)
    label = json.dumps({"task": "level1/relu", "device": "cpu", "max_turns": 3})
    raw = reset_prompt(evaluator, task="level1/relu", device="cpu", max_turns=3)
    prompt = chat_prompt(tokenizer, raw)
    engine = ScriptedEngine(tokenizer, [respond(solution("level1/relu")), NO_CODE, respond(solution("level1/relu"))])
    executor = adapter.KernelRefineExecutor("turns", evaluator=evaluator)
    samples = asyncio.run(executor.execute(prompt, label, sampling_params(), 4096, tokenizer, engine))

    assert isinstance(samples, list) and len(samples) == 3
    scores = [s["scores"] for s in samples]
    assert scores[0] > 0.3 and scores[1] == 0.0 and scores[2] > 0.3
    expected = aggregate(scores, 0.5, mode)
    assert [s["reward"] for s in samples] == pytest.approx(expected)
    assert [s["extra_logs"]["kernel/return"] for s in samples] == pytest.approx(expected)
    assert [s["extra_logs"]["kernel/turn"] for s in samples] == [1.0, 2.0, 3.0]
    first_prompt = tokenizer.decode(engine.prompts[0])
    assert first_prompt == prompt
    for sample, context in zip(samples, engine.prompts):
        assert sample["prompt"] == prompt and sample["label"] == label
        (start, end), = sample["action_ranges"]
        assert sample["observation_tokens"][:start] == context and end == len(sample["observation_tokens"])
    later = tokenizer.decode(engine.prompts[2])  # turn 3: a fresh conversation with the summarized history
    assert later.startswith("<|im_start|>user\n" + raw.splitlines()[0]) and later.endswith("<|im_start|>assistant\n")
    assert "## Your earlier attempts" in later and "Turn 3 of 3" in later
    (start, _), = samples[1]["action_ranges"]
    assert tokenizer.decode(samples[1]["observation_tokens"][start:]).startswith(NO_CODE)


def test_sum_executor_is_one_concatenated_sample(evaluator, respond, solution, tokenizer):
    label = json.dumps({"task": "level1/relu", "device": "cpu", "max_turns": 2})
    prompt = chat_prompt(tokenizer, reset_prompt(evaluator, task="level1/relu", device="cpu", max_turns=2))
    engine = ScriptedEngine(tokenizer, [NO_CODE, respond(solution("level1/relu"))])
    executor = adapter.KernelRefineExecutor("sum", evaluator=evaluator)
    out = asyncio.run(executor.execute(prompt, label, sampling_params(2048), 8192, tokenizer, engine))

    assert isinstance(out, dict) and len(out["action_ranges"]) == 2
    assert out["reward"] == pytest.approx(out["scores"]) and out["reward"] > 0.3  # Σ s_t = 0 + s_2
    assert out["extra_logs"]["kernel/turn"] == 2.0 and out["extra_logs"]["kernel/correct"] == 1.0
    tokens = out["observation_tokens"]
    (s1, e1), (s2, e2) = out["action_ranges"]
    assert tokenizer.decode(tokens[:s1]) == prompt and e2 == len(tokens)
    assert tokens[e1 - 1] == tokenizer.eos_token_id
    between = tokenizer.decode(tokens[e1:s2])  # the feedback as a user turn, the end-of-turn token not repeated
    assert between.startswith("\n<|im_start|>user\nResult of turn 1: FORMAT ERROR")
    assert between.endswith("<|im_end|>\n<|im_start|>assistant\n")
    assert engine.prompts[1] == tokens[:s2]


def test_turns_mode_with_policy_summaries(monkeypatch, evaluator, respond, solution, tokenizer):
    """Kevin's self-summaries: KERNEL_GYM_POLICY_SUMMARIES=1 asks llm_engine for each turn's summary, and the next
    turn's prompt (the env's observation) carries it; sum mode refuses the setting."""
    monkeypatch.setenv(adapter.ENV_FLATTEN, "1")
    monkeypatch.setenv(adapter.ENV_SUMMARIES, "1")
    label = json.dumps({"task": "level1/relu", "device": "cpu", "max_turns": 2})
    prompt = chat_prompt(tokenizer, reset_prompt(evaluator, task="level1/relu", device="cpu", max_turns=2))
    engine = ScriptedEngine(tokenizer, [respond(solution("level1/relu"), reasoning="A fused relu with masked loads."),
                                        respond(solution("level1/relu"))])
    samples = asyncio.run(adapter.KernelRefineExecutor("turns", evaluator=evaluator).execute(
        prompt, label, sampling_params(), 4096, tokenizer, engine))
    assert len(samples) == 2 and engine.summaries >= 1
    assert ScriptedEngine.summary in tokenizer.decode(engine.prompts[1])
    with pytest.raises(adapter.ConfigError, match="turns"):
        asyncio.run(adapter.KernelRefineExecutor("sum", evaluator=evaluator).execute(
            prompt, label, sampling_params(), 4096, tokenizer, ScriptedEngine(tokenizer, [])))


def test_turns_mode_refuses_to_run_without_the_launcher(monkeypatch, tokenizer):
    monkeypatch.delenv(adapter.ENV_FLATTEN, raising=False)
    executor = adapter.KernelRefineExecutor("turns")
    with pytest.raises(adapter.ConfigError, match="openrlhf_train"):
        asyncio.run(executor.execute("p", '{"task": "level1/relu"}', sampling_params(), 64, tokenizer, None))


# ---- the launcher --------------------------------------------------------------------------------------------------
def test_flatten_responses_is_turn_major():
    per_sample = [[{"s": s, "t": t, "reward": 1.0 * t + s} for t in range(3)] for s in range(2)]
    for advantage in ("per_turn_index", "group_all_turns"):
        flat = launcher.flatten_responses(per_sample, advantage)
        assert [(r["t"], r["s"]) for r in flat] == [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)]
    assert [r["reward"] for r in launcher.flatten_responses(per_sample, "per_turn_index")] == [0, 1, 1, 2, 2, 3]
    assert launcher.flatten_responses([{"a": 1}, {"a": 2}]) == [{"a": 1}, {"a": 2}]  # sum mode passes through
    assert len(launcher.flatten_responses([[{"reward": 1}], [{"reward": 2}, {"reward": 3}]])) == 3


def test_launcher_settings(monkeypatch):
    monkeypatch.setenv("KERNEL_GYM_GAMMA", "0.8")
    env = launcher.runtime_env()
    assert env["worker_process_setup_hook"] == launcher.SETUP_HOOK and env["env_vars"]["KERNEL_GYM_GAMMA"] == "0.8"
    module, func = launcher.SETUP_HOOK.rsplit(".", 1)
    assert getattr(sys.modules[module], func) is launcher.install
    args = launcher.launch_args(["--rollout.n_samples_per_prompt", "4"])
    assert args[-2:] == ["--train.agent_func_path", launcher.agent_path()]
    assert Path(launcher.agent_path()).resolve() == Path(adapter.__file__).resolve()
    assert launcher.launch_args(["--train.agent_func_path", "x.py"]) == ["--train.agent_func_path", "x.py"]


# ---- data and the launch script ------------------------------------------------------------------------------------
def test_openrlhf_data_labels_round_trip_into_env_resets(tmp_path, evaluator):
    from kernel_gym.cli import main
    from kernel_gym.env import KernelRefineEnv
    from kernel_gym.tasks import list_tasks

    out = tmp_path / "prompts.jsonl"
    assert main(["openrlhf-data", "--suite", "level1", "--out", str(out), "--max-turns", "2",
                 "--env", "device=cpu", "--env", "checks=strict"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    # the train split by default: no held-out task in training data
    assert len(rows) == len(list_tasks("level1", "train")) and all(set(r) == {"prompt", "label"} for r in rows)
    for row in rows:
        kwargs, seed = adapter.env_settings(row["label"])  # what the agent builds its env from
        assert kwargs["max_turns"] == 2 and kwargs["device"] == "cpu" and kwargs["checks"] == "strict"
        env = KernelRefineEnv(evaluator=evaluator, **kwargs)
        try:
            assert env.reset(seed=seed)[0] == row["prompt"]
        finally:
            env.close()
    assert main(["openrlhf-data", "--suite", "nosuchsuite", "--out", str(tmp_path / "x.jsonl")]) == 2


def _openrlhf_parser():
    """OpenRLHF's own train_ppo_ray argument parser: its `__main__` block up to parse_args, executed alone
    (the module's top-level imports need vLLM and DeepSpeed; the parser itself needs only argparse)."""
    import argparse
    import importlib.util

    source = Path(importlib.util.find_spec("openrlhf.cli.train_ppo_ray").origin).read_text()
    module = ast.parse(source)
    namespace = {"argparse": argparse}
    for node in module.body:  # the module's imports that work without vLLM/DeepSpeed (os, datetime, ...)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            try:
                exec(compile(ast.Module(body=[node], type_ignores=[]), "train_ppo_ray_imports", "exec"), namespace)
            except ImportError:
                pass
    main_block = next(node for node in module.body if isinstance(node, ast.If)
                      and "__main__" in ast.unparse(node.test))
    body = []
    for stmt in main_block.body:
        if isinstance(stmt, ast.Assign) and "parse_args" in ast.unparse(stmt.value):
            break
        body.append(stmt)
    exec(compile(ast.Module(body=body, type_ignores=[]), "train_ppo_ray_parser", "exec"), namespace)
    return namespace["parser"]


def test_train_script_flags_parse_with_openrlhf(repo_root):
    from openrlhf.utils.config import hierarchize

    env = {**os.environ, "DRY_RUN": "1", "PYTHON": sys.executable, "N_SAMPLES": "8", "MAX_TURNS": "4"}
    flags = subprocess.run(["bash", str(repo_root / "scripts" / "train_openrlhf.sh")], capture_output=True, text=True,
                           check=True, env=env).stdout.splitlines()
    parser = _openrlhf_parser()
    args, unknown = parser.parse_known_args(flags)
    assert unknown == []
    args = hierarchize(parser.parse_args(flags))
    assert Path(args.train.agent_func_path).resolve() == Path(adapter.__file__).resolve()
    # the default advantage (group_all_turns): the launcher hands advantages that flash_reinforce keeps
    assert args.algo.advantage.estimator == "flash_reinforce" and args.rollout.n_samples_per_prompt == 8
    assert args.ds.zero_stage == 3 and args.vllm.num_engines >= 1
    assert (args.data.input_key, args.data.label_key, args.data.apply_chat_template) == ("prompt", "label", True)


_SAMPLES_GENERATOR_PROBE = r'''
import json, sys, types

# vLLM is a GPU-only install: stub the three names OpenRLHF's rollout modules import from it at module level.
vllm = types.ModuleType("vllm")
vllm.__version__ = "0"
vllm.SamplingParams = lambda **kw: types.SimpleNamespace(**kw)
vllm.inputs = types.ModuleType("vllm.inputs")
vllm.inputs.TokensPrompt = dict
vllm.utils = types.ModuleType("vllm.utils")
vllm.utils.random_uuid = lambda: "0"
sys.modules.update({"vllm": vllm, "vllm.inputs": vllm.inputs, "vllm.utils": vllm.utils})

from openrlhf.trainer.ppo_utils import samples_generator as sg
from kernel_gym.integrations import openrlhf_train as launcher

assert launcher.install() and launcher.install()  # idempotent


class Ref:  # an object ref that holds its value (no Ray cluster in this test)
    def __init__(self, value):
        self.value = value


sg.ray = types.SimpleNamespace(get=lambda r: [x.value for x in r] if isinstance(r, list) else r.value,
                               wait=lambda refs, num_returns=1, timeout=None: (refs[:num_returns], refs[num_returns:]))
launcher._FLATTEN_TASK = types.SimpleNamespace(
    remote=lambda ref, advantage: Ref(launcher.flatten_responses(ref.value, advantage)))
T = 3


def turn_sample(prompt, s, t):
    return {"prompt": prompt, "label": "L", "observation_tokens": [1, 2, 3, 4 + t], "action_ranges": [(2, 4)],
            "rollout_log_probs": None, "truncated": False, "reward": 10.0 * s + t, "scores": float(t),
            "extra_logs": {"kernel/turn": float(t + 1)}, "images": None, "mm_train_inputs": None}


def generate_responses(prompt, label, sampling_params, max_length, hf_tokenizer, num_samples, images):
    # what RolloutRayActor.generate_responses returns: one executor result (here a list of turns) per sample
    return Ref([[turn_sample(prompt, s, t) for t in range(T)] for s in range(num_samples)])


engine = types.SimpleNamespace(generate_responses=types.SimpleNamespace(remote=generate_responses),
                               get_num_unfinished_requests=types.SimpleNamespace(remote=lambda: Ref(0)))
gen = object.__new__(sg.SamplesGenerator)
gen.args = types.SimpleNamespace(rollout=types.SimpleNamespace(n_samples_per_prompt=2),
                                 algo=types.SimpleNamespace(advantage=types.SimpleNamespace(is_correction_level="off")))
gen.vllm_engines, gen.tokenizer = [engine], None
batches = iter([(["d", "d"], ["p0", "p1"], ["L", "L"], [None, None])])
experiences, consumed, _ = gen._generate_vllm(batches, num_prompts=2, dynamic_filtering=False, max_len=64,
                                              n_samples_per_prompt=2)
print(json.dumps({"consumed": consumed, "rewards": [e.rewards.item() for e in experiences],
                  "prompts": [e.prompts[0] for e in experiences],
                  "turns": [e.info["kernel/turn"].item() for e in experiences],
                  "returns": [e.info["kernel/return"].item() if "kernel/return" in e.info else None
                              for e in experiences]}))
'''


@pytest.mark.parametrize("advantage", ["per_turn_index", "group_all_turns"])
def test_launcher_patch_makes_one_experience_per_turn(advantage):
    """OpenRLHF's real SamplesGenerator._generate_vllm, patched by the launcher, with the Ray calls and the vLLM
    actor replaced by in-process values: each prompt's n episodes of T turns become n·T experiences, turn-major;
    with group_all_turns (the default) each reward is the turn's advantage over all n·T of its task."""
    pytest.importorskip("ray", reason="OpenRLHF's rollout modules import ray")
    from kernel_gym.integrations.advantage import normalize

    run = subprocess.run([sys.executable, "-c", _SAMPLES_GENERATOR_PROBE], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "KERNEL_GYM_ADVANTAGE": advantage})
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["consumed"] == 2 and out["prompts"] == ["p0"] * 6 + ["p1"] * 6
    returns = [0.0, 10.0, 1.0, 11.0, 2.0, 12.0]  # groups of n=2: same task, same turn
    if advantage == "per_turn_index":
        assert out["rewards"] == returns * 2
    else:
        (s0, s1) = normalize([[0.0, 1.0, 2.0], [10.0, 11.0, 12.0]], "group_all_turns")
        assert out["rewards"] == pytest.approx([s0[0], s1[0], s0[1], s1[1], s0[2], s1[2]] * 2, abs=1e-6)
        assert out["returns"] == returns * 2
    assert out["turns"] == [1.0, 1.0, 2.0, 2.0, 3.0, 3.0] * 2


def test_launcher_main_runs_openrlhfs_cli_with_the_patch(monkeypatch):
    ray = pytest.importorskip("ray", reason="the launcher starts Ray")
    calls = {}
    for name in (adapter.ENV_MODE, adapter.ENV_FLATTEN, "KERNEL_GYM_ADVANTAGE"):  # recorded, restored after the test
        monkeypatch.setenv(name, "recorded")
    monkeypatch.delenv(adapter.ENV_MODE)
    monkeypatch.delenv("KERNEL_GYM_ADVANTAGE")
    monkeypatch.setattr(launcher, "install", lambda: calls.setdefault("installed", True))
    from kernel_gym.commands import doctor

    monkeypatch.setitem(doctor.CHECKS, "vllm", lambda: doctor.Item("vllm", True, "vllm (simulated)", ""))
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", lambda **kwargs: calls.setdefault("ray_init", kwargs))
    monkeypatch.setattr(launcher.runpy, "run_module",
                        lambda name, run_name, alter_sys: calls.update(module=name, run_name=run_name, argv=sys.argv))
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    launcher.main(["--rollout.n_samples_per_prompt", "4"])
    assert os.environ[adapter.ENV_MODE] == "turns" and os.environ[adapter.ENV_FLATTEN] == "1"
    assert calls["installed"] and calls["module"] == "openrlhf.cli.train_ppo_ray" and calls["run_name"] == "__main__"
    assert calls["argv"][1:] == ["--rollout.n_samples_per_prompt", "4", "--algo.advantage.estimator",
                                 "flash_reinforce", "--train.agent_func_path", launcher.agent_path()]
    env = calls["ray_init"]["runtime_env"]
    assert env["worker_process_setup_hook"] == launcher.SETUP_HOOK
    assert env["env_vars"][adapter.ENV_MODE] == "turns" and env["env_vars"][adapter.ENV_FLATTEN] == "1"
    assert env["env_vars"]["KERNEL_GYM_ADVANTAGE"] == "group_all_turns"
    with pytest.raises(SystemExit, match="flash_reinforce"):  # an estimator that would regroup: before Ray starts
        launcher.main(["--rollout.n_samples_per_prompt", "4", "--algo.advantage.estimator", "group_norm"])

