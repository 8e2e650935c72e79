"""The TRL adapter driven by TRL's own GRPOTrainer: `trainer.train()` calls our `rollout_func` as in training.

The model is a tiny random-init Llama and the tokenizer a real `PreTrainedTokenizerFast` with a ChatML template whose
byte-level BPE vocabulary is trained on the spot (no model hub is reachable). Generation is scripted (the rollout's
`generate` hook) except in the test of TRL's own generation path, where the random model writes garbage that comes
back as format-error feedback.
"""

from __future__ import annotations

import json
import logging

import pytest

pytest.importorskip("trl", reason="TRL is not installed (pip install 'kernel-gym[trl]'; .ci/run installs it)")

from chat_helpers import chat_tokenizer  # noqa: E402
from trl import GRPOConfig, GRPOTrainer  # noqa: E402

from kernel_gym.errors import ConfigError  # noqa: E402
from kernel_gym.integrations import trl as adapter  # noqa: E402
from kernel_gym.rewards import aggregate  # noqa: E402

NO_CODE = "I think a fused kernel would help, but I forgot the code."


@pytest.fixture(scope="module")
def tokenizer(repo_root):
    hf = chat_tokenizer(repo_root, extra_texts=((repo_root / "kernel_gym" / "feedback" / "templates" / "prompt.j2").read_text(),))
    hf.padding_side = "left"
    return hf


def _model(tokenizer):
    from kernel_gym.integrations.tiny_model import tiny_llama

    return tiny_llama(tokenizer)


class Script:
    """The rollout's `generate` hook: turn k's call answers scripts[episode][k]; summary requests get SUMMARY(i)."""

    def __init__(self, tokenizer, scripts):
        self.tokenizer, self.scripts, self.turn, self.calls = tokenizer, scripts, 0, []

    def __call__(self, prompt_ids, trainer):
        texts = [self.tokenizer.decode(ids) for ids in prompt_ids]
        self.calls.append(texts)
        if texts and all("Summarize it in at most" in t for t in texts):
            answers = [f"SUMMARY({self.turn}.{i}): the policy's own words." for i in range(len(texts))]
        else:
            answers = [self.scripts[i][self.turn] for i in range(len(texts))]
            self.turn += 1
        ids = [self.tokenizer(a, add_special_tokens=False)["input_ids"] + [self.tokenizer.eos_token_id]
               for a in answers]
        return ids, None


class Recorder:
    """Wraps the rollout to keep what it returned to the trainer (and so to the reward function and the loss)."""

    def __init__(self, rollout):
        self.rollout, self.outputs, self.__name__ = rollout, [], "Recorder"

    def __call__(self, prompts, trainer):
        out = self.rollout(prompts, trainer)
        self.outputs.append((list(prompts), out))
        return out


def _train(tmp_path, tokenizer, rollout, *, batch, generations, completion_len=64, dataset=None, losses=None,
           **config):
    """One GRPO step of TRL's own trainer over `rollout`; `losses`: a list that receives each compute_loss call's
    inputs (the advantages the loss used among them)."""
    args = GRPOConfig(output_dir=str(tmp_path / "out"), per_device_train_batch_size=batch,
                      num_generations=generations, max_completion_length=completion_len, max_steps=1,
                      learning_rate=1e-3, beta=0.0, logging_steps=1, report_to="none", save_strategy="no",
                      use_cpu=True, bf16=False, seed=0, dataloader_num_workers=0, **config)
    recorder = Recorder(rollout)
    trainer = GRPOTrainer(model=_model(tokenizer), reward_funcs=adapter.kernel_reward, args=args,
                          train_dataset=dataset or adapter.kernel_dataset(tasks=["level1/relu"], max_turns=2,
                                                                          device="cpu"),
                          processing_class=tokenizer, rollout_func=recorder)
    if losses is not None:
        compute_loss = trainer.compute_loss

        def recorded(model, inputs, *args, **kwargs):
            losses.append(dict(inputs))
            return compute_loss(model, inputs, *args, **kwargs)

        trainer.compute_loss = recorded
    trainer.train()
    return trainer, recorder


@pytest.mark.timeout(600)
def test_turns_mode_one_sample_per_turn_with_its_return(tmp_path, tokenizer, evaluator, respond, solution):
    good = respond(solution("level1/relu"), "The op is memory-bound, so one fused elementwise pass is enough.")
    script = Script(tokenizer, [[NO_CODE, good], [good, NO_CODE]])
    rollout = adapter.KernelRefineRollout(max_turns=2, mode="turns", evaluator=evaluator, generate=script,
                                          policy_summaries=True)
    trainer, recorder = _train(tmp_path, tokenizer, rollout, batch=4, generations=4)
    [(prompts, out)] = recorder.outputs
    assert len(out["completion_ids"]) == 4 and out["logprobs"] is None and "env_mask" not in out
    for episode in range(2):  # slots 2e, 2e+1: one episode's turns 1 and 2
        slots = [2 * episode, 2 * episode + 1]
        scores = [out["kernel_score"][s] for s in slots]
        assert [out["kernel_turn"][s] for s in slots] == [1, 2]
        assert [out["kernel_reward"][s] for s in slots] == pytest.approx(aggregate(scores, 0.4, "sum"))
    assert out["kernel_correct"] == [False, True, True, False]
    assert out["kernel_infra_failure"] == [False] * 4
    assert out["kernel_error"][0] == "format_error" and out["kernel_score"][0] == 0.0 < out["kernel_score"][1]
    # turn 2's prompt is the env's observation: turn 1's feedback (the format error) and the policy's summary
    second = tokenizer.decode(out["prompt_ids"][1])
    assert second.startswith("<|im_start|>user\n") and second.endswith("<|im_start|>assistant\n")
    assert "FORMAT ERROR" in second and "Reasoning (summary): SUMMARY(1.0): the policy's own words." in second
    assert tokenizer.decode(out["completion_ids"][0], skip_special_tokens=True) == NO_CODE
    assert json.loads(prompts[0])["task"] == "level1/relu"
    # the trainer's reward is the rollout's returns (GRPO then normalizes them within the group)
    logged = next(entry for entry in trainer.state.log_history if "reward" in entry)
    assert logged["reward"] == pytest.approx(sum(out["kernel_reward"]) / 4, rel=1e-5)
    assert logged["kernel/correct"] == pytest.approx(0.5)
    # turn 1: responses, then one batched summary call; turn 2: responses only, as both reasonings were summarized
    # on turn 1 (the cache is keyed by text)
    assert len(script.calls) == 3 and all("Summarize it in at most" in t for t in script.calls[1])


@pytest.mark.timeout(600)
def test_per_turn_index_advantages_reach_grpos_loss(tmp_path, tokenizer, evaluator, respond, solution):
    """advantage="per_turn_index" through TRL's own GRPO step: each slot's reward is its return normalized among
    the same turn of its group's episodes, and with scale_rewards="none" GRPO's loss uses exactly those as the
    advantages (it subtracts the group's mean, which is 0)."""
    from kernel_gym.integrations.advantage import normalize

    good = respond(solution("level1/relu"), "The op is memory-bound, so one fused elementwise pass is enough.")
    script = Script(tokenizer, [[NO_CODE, good], [good, NO_CODE]])
    rollout = adapter.KernelRefineRollout(max_turns=2, mode="turns", evaluator=evaluator, generate=script,
                                          advantage="per_turn_index")
    losses: list[dict] = []
    _, recorder = _train(tmp_path, tokenizer, rollout, batch=4, generations=4, losses=losses, scale_rewards="none")
    [(_, out)] = recorder.outputs
    returns = [[out["kernel_return"][2 * e + t] for t in range(2)] for e in range(2)]
    expected = [a for row in normalize(returns, "per_turn_index") for a in row]
    assert out["kernel_reward"] == pytest.approx(expected)
    assert expected[0] < 0 < expected[2] and expected[1] > 0 > expected[3]  # turn 1: ep 1 ahead; turn 2: ep 0
    used = [float(a) for inputs in losses for a in inputs["advantages"].flatten()]
    assert sorted(used) == pytest.approx(sorted(expected), abs=1e-5)


@pytest.mark.timeout(600)
def test_episode_mode_one_sample_with_feedback_masked(tmp_path, tokenizer, evaluator, respond, solution):
    good = respond(solution("level1/relu"))
    script = Script(tokenizer, [[NO_CODE, good], [NO_CODE, "still nothing"]])
    rollout = adapter.KernelRefineRollout(max_turns=2, mode="episode", evaluator=evaluator, generate=script,
                                          env_kwargs={"gamma": 0.5})
    trainer, recorder = _train(tmp_path, tokenizer, rollout, batch=2, generations=2, completion_len=4096)
    [(_, out)] = recorder.outputs
    first, other = out["completion_ids"][0], out["completion_ids"][1]
    mask = out["env_mask"][0]
    assert len(mask) == len(first) and 0 in mask and mask[0] == 1 and mask[-1] == 1
    feedback = tokenizer.decode([t for t, m in zip(first, mask) if m == 0])
    assert "Result of turn 1:" in feedback and "<|im_start|>user" in feedback and feedback.endswith(
        "<|im_start|>assistant\n")
    response = tokenizer.decode([t for t, m in zip(first, mask) if m == 1], skip_special_tokens=True)
    assert response.startswith(NO_CODE) and "class ModelNew" in response
    score = out["kernel_score"][0]
    assert score > 0 and out["kernel_reward"][0] == pytest.approx(aggregate([0.0, score], 0.5, "sum")[0])
    assert out["kernel_reward"][1] == 0.0 and out["kernel_turn"] == [2, 2] and out["kernel_error"][1] == "format_error"
    assert len(other) == len(out["env_mask"][1])
    logged = next(entry for entry in trainer.state.log_history if "reward" in entry)
    assert logged["reward"] == pytest.approx(out["kernel_reward"][0] / 2, rel=1e-5)


@pytest.mark.timeout(600)
def test_trainer_generation_path_garbage_becomes_feedback(tmp_path, tokenizer, evaluator):
    """No scripted hook: TRL's own generation (transformers' generate on the tiny model) writes the responses."""
    rollout = adapter.KernelRefineRollout(max_turns=2, mode="turns", evaluator=evaluator)
    _, recorder = _train(tmp_path, tokenizer, rollout, batch=2, generations=2, completion_len=12)
    [(_, out)] = recorder.outputs
    assert out["kernel_error"] == ["format_error", "format_error"] and out["kernel_reward"] == [0.0, 0.0]
    assert all(1 <= len(ids) <= 12 for ids in out["completion_ids"])
    assert "Result" in tokenizer.decode(out["prompt_ids"][1]) or "format" in tokenizer.decode(
        out["prompt_ids"][1]).lower()


def test_configuration_errors_are_clear(tokenizer):
    rollout = adapter.KernelRefineRollout(max_turns=3, mode="turns")

    class Trainer:
        processing_class, num_generations, num_generations_eval = tokenizer, 4, None

    with pytest.raises(ConfigError, match="multiples of max_turns"):
        rollout(["level1/relu"] * 4, Trainer())
    with pytest.raises(ConfigError, match="mode must be"):
        adapter.KernelRefineRollout(mode="trajectory")
    with pytest.raises(ConfigError, match="policy_summaries needs mode='turns'"):
        adapter.KernelRefineRollout(mode="episode", policy_summaries=True)
    assert adapter.parse_label([{"role": "user", "content": '{"task": "level1/relu", "gamma": 1}'}]) == {
        "task": "level1/relu", "gamma": 1}
    with pytest.raises(ConfigError):
        adapter.parse_label("")


@pytest.mark.timeout(600)
def test_example_script_builds_and_trains_one_step(tmp_path, tokenizer, evaluator, repo_root):
    """scripts/train_trl.py's trainer, with the tiny model in place of --model (its dataset: level1's train split)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("train_trl", repo_root / "scripts" / "train_trl.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    args = script.parse_args(["--use-cpu", "--device", "cpu", "--max-turns", "2", "--num-generations", "2",
                              "--batch-size", "2", "--max-completion-length", "8", "--max-steps", "1",
                              "--output-dir", str(tmp_path / "out")])
    trainer = script.build(args, model=_model(tokenizer), tokenizer=tokenizer, evaluator=evaluator)
    assert len(trainer.train_dataset) > 10 and trainer.rollout_func.mode == "turns"
    trainer.train()
    assert any("reward" in entry for entry in trainer.state.log_history)


@pytest.mark.timeout(300)
def test_smoke_path_trains_one_step_on_cpu_without_the_hub(repo_root, tmp_path):
    """`scripts/train_trl.py --smoke` as a user runs it, with the Hub unreachable: a tiny random model and tokenizer
    built here, the model's own generations through the env, one optimizer step that moves the weights."""
    import os
    import subprocess
    import sys
    import time

    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TRL_EXPERIMENTAL_SILENCE": "1"}
    start = time.monotonic()
    run = subprocess.run([sys.executable, str(repo_root / "scripts" / "train_trl.py"), "--smoke", "--output-dir",
                          str(tmp_path / "out")], capture_output=True, text=True, env=env, timeout=240)
    assert run.returncode == 0, run.stderr[-3000:]
    line = run.stdout.strip().splitlines()[-1]
    assert line.startswith("kernel-gym: TRL smoke run passed: one GRPO step on the CPU"), run.stdout[-2000:]
    assert float(line.rsplit("weights moved by ", 1)[1].rstrip(")")) > 0
    assert time.monotonic() - start < 120  # about 15 s on this 2-core machine


def test_the_reward_function_logs_infrastructure_failures():
    logged = {}
    rewards = adapter.kernel_reward(["a", "b"], kernel_reward=[1.3, 0.0], log_metric=logged.__setitem__,
                                    kernel_correct=[True, False], kernel_infra_failure=[False, True])
    assert rewards == [1.3, 0.0]
    assert logged == {"kernel/correct": 0.5, "kernel/infra_failure": 0.5}


def test_a_group_of_one_episode_is_warned_once(tokenizer, caplog):
    """num_generations == max_turns: each GRPO group holds one episode, so its advantages compare an episode's turns
    with one another; said once (a WARNING), not silently."""
    rollout = adapter.KernelRefineRollout(max_turns=2, mode="turns")

    class Trainer:
        processing_class, num_generations, num_generations_eval = tokenizer, 2, None

    with caplog.at_level(logging.WARNING, logger="kernel_gym.integrations.trl"):
        for _ in range(2):
            with pytest.raises(ConfigError, match="differ"):  # (stops right after the group check)
                rollout._start(["level1/relu", "level1/tanh"], Trainer(), None, [])
    warned = [r for r in caplog.records if "single episode" in r.getMessage()]
    assert len(warned) == 1, caplog.text
