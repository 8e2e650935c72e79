"""The verl adapter against the real verl package (0.9.1, installed with --no-deps: no vLLM, no FSDP/Megatron).

Episodes run through verl's own code that calls an agent loop in training: the config is verl's `ppo_trainer.yaml`
composed with examples/verl/run_kevin.sh's overrides; the dataset is read by verl's `RLHFDataset`; the agent loop
is found in verl's registry from our agent-loop YAML and built by `hydra.utils.instantiate` inside verl's
`AgentLoopWorker` (trajectory mode) and `AgentLoopWorkerTQ` (turns mode, verl's V1 trainer). Replaced: the
generation server (a scripted one with verl's `generate` interface, returning verl `TokenOutput`s) and, in turns
mode, TransferQueue's storage calls (a recorder). The tokenizer is a real `PreTrainedTokenizerFast` with a ChatML
template whose BPE vocabulary is trained here (no model hub is reachable), saved with a tiny Qwen2 config so that
verl's `HFModelConfig` loads it from a local path.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("verl.experimental.agent_loop", reason="verl is not installed (scripts/install.sh adds it)")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from chat_helpers import chat_tokenizer  # noqa: E402
from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopWorker, _agent_loop_registry  # noqa: E402
from verl.workers.rollout.replica import TokenOutput  # noqa: E402

from kernel_gym.errors import ConfigError  # noqa: E402
from kernel_gym.integrations import verl as adapter  # noqa: E402
from kernel_gym.integrations.verl_data import verl_rows, write_parquet  # noqa: E402
from kernel_gym.rewards import aggregate  # noqa: E402

NO_CODE = "I think a fused kernel would help, but I forgot the code."
SCRIPT = "examples/verl/run_kevin.sh"


@pytest.fixture(scope="module")
def model_dir(repo_root, tmp_path_factory) -> Path:
    """A local 'model' folder: a BPE tokenizer trained here (ChatML template) and a tiny Qwen2 config."""
    from transformers import Qwen2Config

    hf = chat_tokenizer(repo_root)
    path = tmp_path_factory.mktemp("verl_model")
    hf.save_pretrained(path)
    Qwen2Config(vocab_size=len(hf), hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                num_key_value_heads=1, architectures=["Qwen2ForCausalLM"]).save_pretrained(path)
    return path


def script_overrides(repo_root: Path, mode: str) -> list[str]:
    out = subprocess.run(["bash", str(repo_root / SCRIPT)], env={**os.environ, "DRY_RUN": "1", "MODE": mode},
                         capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if line]


def compose(overrides: list[str]):
    import verl
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    with initialize_config_dir(config_dir=str(Path(verl.__file__).parent / "trainer" / "config"), version_base=None):
        return hydra_compose(config_name="ppo_trainer", overrides=overrides)


def run_config(repo_root, model_dir, mode, **extra):
    """verl's config as the launch script sets it, pointed at the local model, with room for whole episodes."""
    overrides = script_overrides(repo_root, mode) + [
        f"actor_rollout_ref.model.path={model_dir}", "data.max_prompt_length=4096",
        "data.max_response_length=16384",
        # verl filters long prompts in a forked process pool (datasets' map), which dies when forked from a test
        # process that has started Ray, runner processes and threads; the filter is verl's, not the adapter's
        "data.filter_overlong_prompts=False", *[f"{k}={v}" for k, v in extra.items()]]
    return compose(overrides)


class ScriptedServer:
    """verl's server manager, scripted: `generate(request_id, prompt_ids=..., sampling_params=...)` -> TokenOutput."""

    def __init__(self, tokenizer, responses):
        self.tokenizer, self.responses, self.prompts, self.params = tokenizer, list(responses), [], []

    summary = "SUMMARY: a one-pass kernel, masked loads"  # the answer to a summary request (policy_summaries)

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
        if "Summarize it in at most" in self.tokenizer.decode(prompt_ids):
            self.summaries = getattr(self, "summaries", 0) + 1
            ids = self.tokenizer(self.summary, add_special_tokens=False)["input_ids"] + [self.tokenizer.eos_token_id]
            return TokenOutput(token_ids=ids, log_probs=None, stop_reason="completed", extra_fields={})
        self.prompts.append(list(prompt_ids))
        self.params.append(dict(sampling_params))
        ids = self.tokenizer(self.responses.pop(0), add_special_tokens=False)["input_ids"]
        ids = (ids + [self.tokenizer.eos_token_id])[: sampling_params.get("max_tokens") or None]
        return TokenOutput(token_ids=ids, log_probs=[-0.5] * len(ids), stop_reason="completed",
                           extra_fields={"min_global_steps": 3, "max_global_steps": 3})


def dataset_batch(config, model_dir, tmp_path, labels):
    """Rows written by verl_data, read back by verl's RLHFDataset and collated as verl's trainer does."""
    from verl.protocol import DataProto
    from verl.utils import hf_tokenizer
    from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn

    records = [{"prompt": "Write a fast ReLU.", "label": json.dumps(label)} for label in labels]
    path = write_parquet(verl_rows(records), tmp_path / "train.parquet")
    dataset = RLHFDataset(data_files=[str(path)], tokenizer=hf_tokenizer(str(model_dir)), config=config.data)
    return DataProto.from_single_dict(collate_fn([dataset[i] for i in range(len(dataset))]),
                                      meta_info={"global_steps": 1, "validate": False})


@pytest.fixture
def use_evaluator(monkeypatch, evaluator):
    """The agent loop asks `shared_evaluator(device, spec, workers)`: answer with the session's CPU evaluator."""
    calls = []

    def shared(device, spec=None, workers=None):
        calls.append((device, spec, workers))
        return evaluator

    monkeypatch.setattr(adapter, "shared_evaluator", shared)
    return calls


# ---- the launch script and config -----------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["turns", "trajectory"])
def test_launch_flags_exist_in_verls_config(repo_root, mode):
    """Every override of run_kevin.sh is a key of verl's own config (hydra refuses unknown keys), and the rollout
    section the agent-loop worker reads converts to verl's dataclass."""
    from hydra.errors import ConfigCompositionException
    from verl.utils.config import omega_conf_to_dataclass

    overrides = script_overrides(repo_root, mode)
    added = [o for o in overrides if o.startswith("+")]
    assert added == [next(o for o in overrides if o.startswith("+ray_kwargs.ray_init.runtime_env.env_vars."))]
    config = compose(overrides)
    assert config.actor_rollout_ref.rollout.agent.agent_loop_config_path.endswith(f"kernel_gym_{mode}.yaml")
    assert config.actor_rollout_ref.rollout.agent.default_agent_loop == adapter.AGENT_NAME
    assert config.algorithm.adv_estimator == ("grpo_vectorized" if mode == "turns" else "grpo")
    assert config.trainer.use_v1 is True
    rollout = omega_conf_to_dataclass(config.actor_rollout_ref.rollout)
    assert rollout.agent.agent_loop_config_path == config.actor_rollout_ref.rollout.agent.agent_loop_config_path
    with pytest.raises(ConfigCompositionException):
        compose([*overrides, "actor_rollout_ref.rollout.agent.agent_loop_config=typo"])


def test_agent_yaml_entries_resolve_to_the_agent_loop(repo_root):
    from hydra.utils import get_class
    from omegaconf import OmegaConf

    assert _agent_loop_registry[adapter.AGENT_NAME] == {"_target_": "kernel_gym.integrations.verl.KernelRefineAgentLoop"}
    for mode in adapter.MODES:
        (entry,) = OmegaConf.load(repo_root / "examples" / "verl" / f"kernel_gym_{mode}.yaml")
        assert entry.name == adapter.AGENT_NAME and entry.mode == mode
        assert get_class(entry._target_) is adapter.KernelRefineAgentLoop
        assert issubclass(adapter.KernelRefineAgentLoop, AgentLoopBase)


def test_turns_mode_refuses_configs_that_would_lose_per_turn_returns(repo_root, model_dir):
    import hydra
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap

    def build(config, mode="turns", **extra):
        from verl.utils import hf_tokenizer

        return hydra.utils.instantiate({"_target_": "kernel_gym.integrations.verl.KernelRefineAgentLoop",
                                        "mode": mode, "name": "kernel_gym", **extra},
                                       trainer_config=DictConfigWrap(config), server_manager=None,
                                       tokenizer=hf_tokenizer(str(model_dir)), processor=None, dataset_cls=None,
                                       data_config=DictConfigWrap(config.data), hf_model_type="qwen2")

    from hydra.errors import InstantiationException

    assert build(run_config(repo_root, model_dir, "turns")).mode == "turns"
    # hydra wraps what __init__ raises; the ConfigError's message is what a verl user reads
    with pytest.raises(InstantiationException, match="ConfigError.*grpo_vectorized"):
        build(run_config(repo_root, model_dir, "turns", **{"algorithm.adv_estimator": "grpo"}))
    with pytest.raises(InstantiationException, match="ConfigError.*use_v1"):
        build(run_config(repo_root, model_dir, "turns", **{"trainer.use_v1": False}))
    with pytest.raises(InstantiationException, match="ConfigError.*mode"):
        build(run_config(repo_root, model_dir, "trajectory"), mode="episodes")
    # one advantage option in every adapter: verl's group is the prompt's uid (group_all_turns, the default)
    assert build(run_config(repo_root, model_dir, "turns")).advantage == "group_all_turns"
    with pytest.raises(InstantiationException, match="ConfigError.*per_turn_index.*uid"):
        build(run_config(repo_root, model_dir, "turns"), advantage="per_turn_index")


def test_an_agent_yaml_loaded_before_the_adapter_is_imported_keeps_its_settings(repo_root):
    """verl's worker loads the agent-loop YAML into its registry at start and imports the adapter at the first
    instantiation; the import used to replace the YAML's entry with a bare target, so every later episode ran with
    the defaults (mode=trajectory, device auto): found by the smoke run with rollout.n=2."""
    import importlib

    from omegaconf import OmegaConf

    (entry,) = OmegaConf.load(repo_root / "examples" / "verl" / "kernel_gym_turns.yaml")
    saved = _agent_loop_registry[adapter.AGENT_NAME]
    _agent_loop_registry[adapter.AGENT_NAME] = entry  # what verl's worker does at its start
    try:
        importlib.reload(adapter)  # the import at the first instantiation
        assert _agent_loop_registry[adapter.AGENT_NAME] is entry
    finally:
        _agent_loop_registry[adapter.AGENT_NAME] = saved


@pytest.mark.timeout(300)
def test_smoke_run_trains_one_step_on_cpu_without_the_hub(repo_root):
    """`run_kevin.sh --smoke` as a user runs it, with the Hub unreachable: verl's V1 worker plays 2 episodes of 2
    turns with a tiny random model built here, verl's advantage and policy loss drive one step that moves the
    weights."""
    env = {**os.environ, "PYTHON": sys.executable, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    run = subprocess.run(["bash", str(repo_root / SCRIPT), "--smoke"], capture_output=True, text=True, env=env,
                         timeout=240, cwd=repo_root)
    assert run.returncode == 0, run.stderr[-3000:]
    line = run.stdout.strip().splitlines()[-1]
    assert line.startswith("kernel-gym: verl smoke run passed: 4 turn rows of 2 episodes"), run.stdout[-2000:]
    assert float(line.rsplit("weights moved by ", 1)[1].rstrip(")")) > 0


def test_labels():
    assert adapter.parse_label('{"task": "level1/relu", "max_turns": 2}') == {"task": "level1/relu", "max_turns": 2}
    assert adapter.parse_label({"task": "level1/relu"}) == {"task": "level1/relu"}
    assert adapter.parse_label("level1/relu") == {"task": "level1/relu"}
    with pytest.raises(ConfigError):
        adapter.parse_label(None)


# ---- whole episodes through verl's workers ------------------------------------------------------------------------
def test_trajectory_mode_through_verls_agent_loop_worker(repo_root, model_dir, tmp_path, use_evaluator, respond,
                                                         solution, relu_code):
    """verl's stock multi-turn row: one sample, answers masked in, feedback masked out, reward = Σ s_t at the end."""
    config = run_config(repo_root, model_dir, "trajectory")
    label = {"task": "level1/relu", "device": "cpu", "max_turns": 3, "gamma": 0.5}
    batch = dataset_batch(config, model_dir, tmp_path, [label])
    answers = [NO_CODE, respond(relu_code(body="tl.minimum(x, 0.0)")), respond(solution("level1/relu"))]
    worker = AgentLoopWorker(config, llm_client=None)
    server = worker.llm_client = ScriptedServer(worker.tokenizer, answers)

    out = asyncio.run(worker.generate_sequences(batch))

    assert use_evaluator == [("cpu", None, 1)]  # the YAML: evaluator null (-> $KERNEL_GYM_EVALUATOR), 1 worker
    assert len(out) == 1 and not server.responses
    scores = list(out.non_tensor_batch["turn_scores"][0])
    assert scores[:2] == [0.0, 0.0] and scores[2] > 0.3
    rm = out.batch["rm_scores"][0]
    assert rm.sum().item() == pytest.approx(sum(scores)) and torch.count_nonzero(rm) == 1
    extra = out.non_tensor_batch["kernel_gym"][0]
    assert extra["complete"] and extra["returns"] == pytest.approx(aggregate(scores, 0.5, "sum"))
    assert [t["error"] for t in extra["turns"]] == ["format_error", "mismatch", ""]
    assert out.non_tensor_batch["kernel/correct"][0] == 1.0 and out.non_tensor_batch["__num_turns__"][0] == 6

    tok = worker.tokenizer
    mask, ids = out.batch["response_mask"][0].bool(), out.batch["responses"][0]
    trained, shown = tok.decode(ids[mask]), tok.decode(ids[~mask & (out.batch["attention_mask"][0, -len(ids):] == 1)])
    assert NO_CODE in trained and "class ModelNew" in trained  # the answers are trained on
    assert "Result of turn 1: FORMAT ERROR" in shown and "Result of turn 2" in shown  # feedback is not
    assert "FORMAT ERROR" not in trained and "Turn 3 of 3" in shown
    # each generation continues the conversation: the prompt of turn 2 is turn 1's tokens plus the feedback
    assert server.prompts[1][: len(server.prompts[0])] == server.prompts[0]
    assert server.params[1]["max_tokens"] < server.params[0]["max_tokens"] == config.data.max_response_length


def test_turns_mode_through_verls_v1_worker(repo_root, model_dir, tmp_path, monkeypatch, use_evaluator, respond,
                                            solution):
    """Kevin's recipe on verl's V1 worker: one row per turn, each with its own return R_t, and verl's
    grpo_vectorized advantage normalizes those returns row by row."""
    import transfer_queue
    from verl.protocol import DataProto
    from verl.trainer.ppo.v1.agent_loop_tq import AgentLoopWorkerTQ
    from verl.trainer.ppo.v1.utils import compute_advantage_for_multi_trajectories

    stored = {}

    async def batch_put(keys, fields, tags, partition_id):  # TransferQueue's storage, recorded
        stored.update(zip(keys, [fields[i] for i in range(len(keys))]))

    async def kv_put(**kwargs):
        stored.setdefault("__status__", []).append(kwargs["tag"]["status"])

    monkeypatch.setattr(transfer_queue, "init", lambda *a, **k: None)
    monkeypatch.setattr(transfer_queue, "async_kv_batch_put", batch_put)
    monkeypatch.setattr(transfer_queue, "async_kv_put", kv_put)

    config = run_config(repo_root, model_dir, "turns")
    label = {"task": "level1/relu", "device": "cpu", "max_turns": 3, "gamma": 0.4}
    batch = dataset_batch(config, model_dir, tmp_path, [label])
    answers = [NO_CODE, respond(solution("level1/relu")), respond(solution("level1/relu"))]
    worker = AgentLoopWorkerTQ.__ray_metadata__.modified_class(config, llm_client=None)
    server = worker.llm_client = ScriptedServer(worker.tokenizer, answers)
    prompt = {k: v[0] for k, v in batch.non_tensor_batch.items()}
    prompt.update(uid="u1", global_steps=1, __rollout_n__=1)
    trajectory = {"step": 1, "sample_index": 0, "rollout_n": 0, "validate": False}

    asyncio.run(worker._run_prompt(prompt, {"temperature": 1.0, "logprobs": True}, trajectory))

    assert stored.pop("__status__") == ["running", "finished"] and not server.responses
    assert sorted(stored) == ["u1_0_0", "u1_0_1", "u1_0_2"]
    rows = [stored[f"u1_0_{i}"] for i in range(3)]
    scores = [row["extra_fields"]["kernel_gym"]["score"] for row in rows]
    assert scores[0] == 0.0 and scores[1] > 0.3 and scores[2] > 0.3
    returns = aggregate(scores, 0.4, "sum")
    assert [row["rm_scores"].sum().item() for row in rows] == pytest.approx(returns)
    assert [row["extra_fields"]["kernel_gym"]["return"] for row in rows] == pytest.approx(returns)
    tok = worker.tokenizer
    # each turn is a fresh conversation: the env's observation, which carries the earlier turns' feedback
    assert "FORMAT ERROR" not in tok.decode(rows[0]["prompts"]) and "FORMAT ERROR" in tok.decode(rows[1]["prompts"])
    assert tok.decode(rows[0]["responses"]).startswith(NO_CODE) and bool(rows[0]["response_mask"].all())
    assert all(row["rollout_log_probs"].shape == row["responses"].shape for row in rows)

    # verl's advantage over these rows (one group: one prompt's episode): per row with grpo_vectorized ...
    keys = sorted(stored)
    width = max(len(row["responses"]) for row in rows)

    def pad(name, value=0):
        return torch.stack([torch.nn.functional.pad(row[name], (0, width - len(row[name])), value=value)
                            for row in rows])

    def data():
        return DataProto.from_single_dict({"response_mask": pad("response_mask"), "rm_scores": pad("rm_scores"),
                                           "token_level_rewards": pad("rm_scores"),
                                           "uid": np.array(["u1"] * 3, dtype=object)})

    adv = compute_advantage_for_multi_trajectories(data(), keys, adv_estimator="grpo_vectorized", config=config.algorithm)
    first = adv.batch["advantages"][:, 0].tolist()
    expected = (torch.tensor(returns) - torch.tensor(returns).mean()) / (torch.tensor(returns).std() + 1e-6)
    assert first == pytest.approx(expected.tolist(), abs=1e-4)
    # ... while "grpo" would give every turn the last one's advantage (why turns mode refuses it)
    adv = compute_advantage_for_multi_trajectories(data(), keys, adv_estimator="grpo", config=config.algorithm)
    assert len(set(adv.batch["advantages"][:, 0].tolist())) == 1


def test_turns_mode_with_policy_summaries(repo_root, model_dir, tmp_path, monkeypatch, use_evaluator, respond,
                                          solution, relu_code):
    """Kevin's self-summaries: with `policy_summaries: true` each turn's reasoning is summarized by one more request
    to verl's server, and the next turn's prompt (the env's observation) carries that summary."""
    import transfer_queue
    import yaml
    from verl.trainer.ppo.v1.agent_loop_tq import AgentLoopWorkerTQ

    stored = {}

    async def batch_put(keys, fields, tags, partition_id):
        stored.update(zip(keys, [fields[i] for i in range(len(keys))]))

    async def kv_put(**kwargs):
        pass

    monkeypatch.setattr(transfer_queue, "init", lambda *a, **k: None)
    monkeypatch.setattr(transfer_queue, "async_kv_batch_put", batch_put)
    monkeypatch.setattr(transfer_queue, "async_kv_put", kv_put)
    entries = yaml.safe_load((repo_root / "examples" / "verl" / "kernel_gym_turns.yaml").read_text())
    entries[0]["policy_summaries"] = True
    agent_yaml = tmp_path / "agent.yaml"
    agent_yaml.write_text(yaml.safe_dump(entries))
    config = run_config(repo_root, model_dir, "turns",
                        **{"actor_rollout_ref.rollout.agent.agent_loop_config_path": str(agent_yaml)})
    batch = dataset_batch(config, model_dir, tmp_path, [{"task": "level1/relu", "device": "cpu", "max_turns": 2}])
    answers = [respond(relu_code(body="tl.minimum(x, 0.0)"), reasoning="I will write a fused relu with masked loads."),
               respond(solution("level1/relu"))]
    worker = AgentLoopWorkerTQ.__ray_metadata__.modified_class(config, llm_client=None)
    server = worker.llm_client = ScriptedServer(worker.tokenizer, answers)
    prompt = {k: v[0] for k, v in batch.non_tensor_batch.items()}
    prompt.update(uid="u1", global_steps=1, __rollout_n__=1)
    asyncio.run(worker._run_prompt(prompt, {"temperature": 1.0}, {"step": 1, "sample_index": 0, "rollout_n": 0,
                                                                  "validate": False}))
    rows = [stored[f"u1_0_{i}"] for i in range(2)]
    assert server.summaries >= 1 and not server.responses
    assert ScriptedServer.summary in worker.tokenizer.decode(rows[1]["prompts"])  # turn 2 shows turn 1's summary

