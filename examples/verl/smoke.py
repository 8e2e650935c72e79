"""verl smoke run: Kevin's recipe (mode=turns) through verl's own code on the CPU, with a tiny random model built here
(no GPU, no Hub, no vLLM), in well under a minute:

    python examples/verl/smoke.py            # or: bash examples/verl/run_kevin.sh --smoke

verl's (0.9.1) own code runs: the trainer config is verl's ppo_trainer.yaml composed with run_kevin.sh's overrides;
the dataset row is written by kernel_gym.integrations.verl_data and read by verl's RLHFDataset; verl's V1 agent-loop
worker (AgentLoopWorkerTQ) builds our agent loop from examples/verl/kernel_gym_turns.yaml and plays rollout.n
episodes of one task, one row per turn with its return R_t; verl's grpo_vectorized advantage is computed over those
rows; verl's PPO policy loss (vanilla clip) drives one optimizer step of the tiny model. Stood in for, as they need
GPUs or a cluster: the generation server (vLLM/SGLang; here the tiny model's `generate` behind verl's server
interface), TransferQueue's store (a dict in this process) and verl's FSDP/Megatron actor workers (one plain torch
step on the rows). The random model only writes format errors, which real scores give 0: the smoke score
`smoke_length` (response length / 100) gives them distinct rewards, so the step has a gradient.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TASK = {"task": "level1/relu", "device": "cpu", "max_turns": 2, "score": "smoke_length"}


def smoke_length(signals: Any) -> float:
    """S = response_chars / 100 (smoke runs only: distinct rewards for a random model's format errors)."""
    return signals.response_chars / 100


def compose(model_dir: Path, n: int) -> Any:
    """verl's trainer config: ppo_trainer.yaml with run_kevin.sh's overrides (MODE=turns), the local model, short
    answers, `n` episodes per prompt."""
    import verl
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    lines = subprocess.run(["bash", str(HERE / "run_kevin.sh")], env={**os.environ, "DRY_RUN": "1", "MODE": "turns"},
                           capture_output=True, text=True, check=True).stdout.split("\n")
    overrides = [line for line in lines if line] + [
        f"actor_rollout_ref.model.path={model_dir}", f"actor_rollout_ref.rollout.n={n}",
        "data.max_prompt_length=8192", "data.max_response_length=32", "data.filter_overlong_prompts=False"]
    with initialize_config_dir(config_dir=str(Path(verl.__file__).parent / "trainer" / "config"), version_base=None):
        return hydra_compose(config_name="ppo_trainer", overrides=overrides)


def prompt_row(config: Any, model_dir: Path, folder: Path) -> dict[str, Any]:
    """One dataset row as verl's trainer hands it to the worker: written by verl_data, read by RLHFDataset."""
    from verl.protocol import DataProto
    from verl.utils import hf_tokenizer
    from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn

    from kernel_gym.integrations.verl_data import verl_rows, write_parquet

    path = write_parquet(verl_rows([{"prompt": "Write a fast ReLU.", "label": json.dumps(TASK)}]),
                         folder / "train.parquet")
    dataset = RLHFDataset(data_files=[str(path)], tokenizer=hf_tokenizer(str(model_dir)), config=config.data)
    batch = DataProto.from_single_dict(collate_fn([dataset[0]]))
    return {k: v[0] for k, v in batch.non_tensor_batch.items()}


class TinyServer:
    """verl's generation-server interface (`generate(request_id, prompt_ids=, sampling_params=)` -> TokenOutput),
    answered by the tiny model's sampling."""

    def __init__(self, model: Any, max_tokens: int = 16):
        self.model, self.max_tokens = model, max_tokens

    async def generate(self, request_id: str, *, prompt_ids: list[int], sampling_params: dict, **kwargs: Any):
        import torch
        from verl.workers.rollout.replica import TokenOutput

        limit = min(self.max_tokens, int(sampling_params.get("max_tokens") or self.max_tokens))
        with torch.no_grad():
            out = self.model.generate(torch.tensor([prompt_ids]), max_new_tokens=limit, do_sample=True,
                                      temperature=1.0, top_k=0, pad_token_id=self.model.config.pad_token_id)
        ids = out[0, len(prompt_ids):].tolist()
        return TokenOutput(token_ids=ids, log_probs=token_logprobs(self.model, prompt_ids, ids).tolist(),
                           stop_reason="completed", extra_fields={})


def token_logprobs(model: Any, prompt_ids: list[int], response_ids: list[int]) -> Any:
    """log p(response token | everything before it), one per response token (with grad when enabled)."""
    import torch

    ids = torch.tensor([list(prompt_ids) + list(response_ids)])
    logits = model(ids).logits[0, len(prompt_ids) - 1:-1].float()
    return torch.log_softmax(logits, -1).gather(-1, torch.tensor(response_ids)[:, None])[:, 0]


def rollout(config: Any, model: Any, row: dict[str, Any], n: int) -> dict[str, dict]:
    """verl's V1 worker plays `n` episodes of the row's task; returns the rows it stored, by key uid_session_turn."""
    import transfer_queue
    from verl.trainer.ppo.v1.agent_loop_tq import AgentLoopWorkerTQ

    stored: dict[str, dict] = {}

    async def batch_put(keys, fields, tags, partition_id):  # TransferQueue's store, in this process
        stored.update(zip(keys, [fields[i] for i in range(len(keys))]))

    async def kv_put(**kwargs):
        stored.setdefault("__status__", []).append(kwargs["tag"]["status"])

    transfer_queue.init = lambda *a, **k: None
    transfer_queue.async_kv_batch_put, transfer_queue.async_kv_put = batch_put, kv_put
    worker = AgentLoopWorkerTQ.__ray_metadata__.modified_class(config, llm_client=None)
    worker.llm_client = TinyServer(model)
    prompt = {**row, "uid": "u0", "global_steps": 1, "__rollout_n__": n}
    trajectory = {"step": 1, "sample_index": 0, "rollout_n": 0, "validate": False}
    asyncio.run(worker._run_prompt(prompt, {"temperature": 1.0, "logprobs": True}, trajectory))
    if stored.pop("__status__", [])[-1:] != ["finished"]:
        raise RuntimeError("verl's worker did not finish the episodes (see the log above)")
    turns = sorted((k, r["extra_fields"]["kernel_gym"].get("turn")) for k, r in stored.items())
    if turns != [(f"u0_{e}_{t}", t + 1) for e in range(n) for t in range(TASK["max_turns"])]:
        raise RuntimeError(f"expected one row per turn of {n} episodes of {TASK['max_turns']} turns, got {turns}")
    return stored


def train_step(config: Any, model: Any, stored: dict[str, dict]) -> dict[str, float]:
    """verl's grpo_vectorized advantage over the rows, verl's policy loss, one optimizer step of `model`."""
    import numpy as np
    import torch
    from verl.protocol import DataProto
    from verl.trainer.ppo import core_algos
    from verl.trainer.ppo.v1.utils import compute_advantage_for_multi_trajectories
    from verl.utils.config import omega_conf_to_dataclass

    keys = sorted(stored)
    rows = [stored[k] for k in keys]
    width = max(len(r["responses"]) for r in rows)

    def pad(name: str) -> torch.Tensor:
        return torch.stack([torch.nn.functional.pad(r[name].float(), (0, width - len(r[name]))) for r in rows])

    mask = pad("response_mask")
    data = DataProto.from_single_dict({"response_mask": mask, "token_level_rewards": pad("rm_scores"),
                                       "uid": np.array([k.split("_")[0] for k in keys], dtype=object)})
    advantages = compute_advantage_for_multi_trajectories(data, keys, adv_estimator="grpo_vectorized",
                                                          config=config.algorithm).batch["advantages"]
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    new = torch.zeros_like(mask)
    for i, r in enumerate(rows):
        lp = token_logprobs(model, r["prompts"].tolist(), r["responses"].tolist())
        new = new.index_put((torch.full((len(lp),), i), torch.arange(len(lp))), lp)
    actor = omega_conf_to_dataclass(config.actor_rollout_ref.actor)
    loss, _ = core_algos.get_policy_loss_fn("vanilla")(pad("rollout_log_probs"), new, advantages, mask,
                                                       loss_agg_mode=actor.loss_agg_mode, config=actor)
    loss.backward()
    optimizer.step()
    loss = loss.detach()
    moved = max(float((p.detach() - before[name]).abs().max()) for name, p in model.named_parameters())
    return {"rows": len(rows), "loss": float(loss), "moved": moved,
            "returns": [float(r["rm_scores"].sum()) for r in rows], "advantages": advantages[:, 0].tolist()}


def run(n: int = 2, folder: str | Path | None = None) -> dict[str, Any]:
    """The whole smoke run in `folder` (default: a new temporary folder); returns what it measured."""
    from transformers import AutoModelForCausalLM

    from kernel_gym.integrations.tiny_model import save_tiny_model
    from kernel_gym.rewards import list_scores, register_score

    if "smoke_length" not in list_scores():
        register_score("smoke_length")(smoke_length)
    folder = Path(folder or tempfile.mkdtemp(prefix="kernel_gym_verl_smoke_"))
    model_dir = save_tiny_model(folder / "model")
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    config = compose(model_dir, n)
    stored = rollout(config, model, prompt_row(config, model_dir, folder), n)
    return train_step(config, model, stored)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=2, help="episodes of the task (verl's rollout.n, the advantage's group)")
    p.add_argument("--dir", default=None, help="where the model and dataset go (default: a temporary folder)")
    args = p.parse_args(argv)
    from kernel_gym.commands.doctor import require

    require(["verl"], "examples/verl/smoke.py")
    out = run(args.n, args.dir)
    print(f"kernel-gym: verl smoke run passed: {out['rows']} turn rows of {args.n} episodes through verl's V1 worker, "
          f"grpo_vectorized advantages {[round(a, 3) for a in out['advantages']]}, one policy-loss step (loss "
          f"{out['loss']:.4f}, weights moved by {out['moved']:.3g})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
