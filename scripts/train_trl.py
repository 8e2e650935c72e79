"""Kevin-style multi-turn GRPO on KernelRefine with TRL (checked against trl 1.16.0). Guide: docs/trainers.md.

    python scripts/train_trl.py --model Qwen/Qwen2.5-Coder-7B-Instruct --suite level1 --max-turns 4 \
        --num-generations 16 --use-vllm                          # one GPU node: vLLM colocated with training
    accelerate launch scripts/train_trl.py --use-vllm --vllm-mode server ...   # several GPUs, `trl vllm-serve` apart
    python scripts/train_trl.py --smoke      # one step on the CPU, a tiny random model built here: no GPU, no Hub

Each completion slot is one turn (`--mode turns`): its prompt is the env's observation (the task and the summarized
earlier turns), its reward the discounted return R_t; GRPO normalizes over the num_generations / max_turns episodes
of a task. `--mode episode` trains one sample per episode (feedback tokens masked) on R_1. Candidate kernels are
evaluated by KERNEL_GYM_EVALUATOR ("local" sandbox pool on this machine, "ray", or a `kernel-gym serve` URL).
"""

from __future__ import annotations

import argparse
from typing import Any

SMOKE = {"use_cpu": True, "device": "cpu", "mode": "turns", "max_turns": 2, "num_generations": 4, "batch_size": 4,
         "max_completion_length": 16, "max_steps": 1, "learning_rate": 1e-3, "use_vllm": False,
         "policy_summaries": False}
"""--smoke's settings: two episodes of two turns of one task, 16 new tokens a turn, one optimizer step on the CPU."""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="Qwen/Qwen2.5-Coder-7B-Instruct", help="model id or local folder")
    p.add_argument("--suite", default="level1", help="task suite (its train split)")
    p.add_argument("--mode", default="turns", choices=("turns", "episode"))
    p.add_argument("--max-turns", type=int, default=4)
    p.add_argument("--gamma", type=float, default=0.4)
    p.add_argument("--aggregation", default="sum", choices=("sum", "max"))
    p.add_argument("--num-generations", type=int, default=16, help="completion slots per task (turns mode: "
                                                                   "episodes x max_turns)")
    p.add_argument("--batch-size", type=int, default=16, help="per-device train batch (a multiple of max_turns)")
    p.add_argument("--max-completion-length", type=int, default=8192)
    p.add_argument("--device", default="auto", help="where candidates run: cuda, cpu or auto")
    p.add_argument("--policy-summaries", action="store_true", help="the policy summarizes its earlier turns (Kevin)")
    p.add_argument("--use-vllm", action="store_true")
    p.add_argument("--vllm-mode", default="colocate", choices=("colocate", "server"))
    p.add_argument("--learning-rate", type=float, default=1e-6)
    p.add_argument("--max-steps", type=int, default=200)
    p.add_argument("--output-dir", default="checkpoints/kernel_gym_trl")
    p.add_argument("--use-cpu", action="store_true", help="train on the CPU (smoke runs with a tiny model)")
    p.add_argument("--advantage", default=None, choices=("group_all_turns", "per_turn_index"),
                   help="the advantage's group (kernel_gym.integrations.advantage); default: group_all_turns (Kevin)")
    p.add_argument("--smoke", action="store_true",
                   help="one GRPO step on the CPU with a tiny random model and tokenizer built here (no GPU, no Hub): "
                        "checks the pipeline from generation through the env to the optimizer, learns nothing")
    return p.parse_args(argv)


def build(args: argparse.Namespace, *, model=None, tokenizer=None, evaluator=None, env_kwargs=None):
    """The GRPOTrainer for these arguments (`model`/`tokenizer` override --model, e.g. in a smoke test; `env_kwargs`:
    more `gym.make` keywords of every episode)."""
    from trl import GRPOConfig, GRPOTrainer

    from kernel_gym.integrations.trl import KernelRefineRollout, kernel_dataset, kernel_reward

    env = {"device": args.device, "gamma": args.gamma, "aggregation": args.aggregation, **(env_kwargs or {})}
    rollout = KernelRefineRollout(max_turns=args.max_turns, mode=args.mode, env_kwargs=env, evaluator=evaluator,
                                  policy_summaries=args.policy_summaries, advantage=getattr(args, "advantage", None))
    config = GRPOConfig(output_dir=args.output_dir, num_generations=args.num_generations,
                        per_device_train_batch_size=args.batch_size, max_completion_length=args.max_completion_length,
                        learning_rate=args.learning_rate, max_steps=args.max_steps, beta=0.0,  # no KL term (Kevin)
                        use_vllm=args.use_vllm, vllm_mode=args.vllm_mode, logging_steps=1, report_to="none",
                        use_cpu=args.use_cpu, bf16=not args.use_cpu, save_strategy="no" if args.use_cpu else "steps",
                        # per_turn_index hands GRPO advantages already normalized (kernel_gym.integrations.advantage)
                        scale_rewards="none" if getattr(args, "advantage", None) == "per_turn_index" else "group")
    return GRPOTrainer(model=model or args.model, reward_funcs=kernel_reward, args=config,
                       train_dataset=kernel_dataset(args.suite, max_turns=args.max_turns),
                       processing_class=tokenizer, rollout_func=rollout)


def preflight(args: argparse.Namespace) -> None:
    """What this run needs, checked before anything loads (kernel-gym doctor's checks): one line per missing item."""
    from pathlib import Path

    from kernel_gym.commands.doctor import require

    needs = ["trl", *(["vllm"] if args.use_vllm else []), *([] if args.use_cpu else ["gpu"]),
             *([] if Path(args.model).exists() else ["hub"])]  # a model id is downloaded; a local folder is not
    require(needs, f"scripts/train_trl.py (--model {args.model})")


def smoke_score(signals: Any) -> float:
    """S = response_chars / 100 (smoke runs only): the random model's answers are all format errors, which the
    real scores give 0; their lengths give them distinct rewards, so the smoke step has a gradient."""
    return signals.response_chars / 100


def smoke(args: argparse.Namespace, evaluator: Any = None) -> tuple[Any, float]:
    """--smoke: SMOKE's settings, a tiny random model and tokenizer built here (kernel_gym.integrations.tiny_model),
    one optimizer step; returns the trained GRPOTrainer and how far the step moved the weights (max abs change)."""
    import tempfile

    from kernel_gym.integrations.tiny_model import tiny_llama, tiny_tokenizer

    for key, value in SMOKE.items():
        setattr(args, key, value)
    if args.output_dir == parse_args([]).output_dir:
        args.output_dir = tempfile.mkdtemp(prefix="kernel_gym_trl_smoke_")
    tokenizer = tiny_tokenizer()
    tokenizer.padding_side = "left"
    model = tiny_llama(tokenizer)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    trainer = build(args, model=model, tokenizer=tokenizer, evaluator=evaluator, env_kwargs={"score": smoke_score})
    trainer.train()
    moved = max(float((p.detach().cpu() - before[name]).abs().max()) for name, p in trainer.model.named_parameters())
    return trainer, moved


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.smoke:
        from kernel_gym.commands.doctor import require

        require(["trl"], "scripts/train_trl.py --smoke")
        trainer, moved = smoke(args)
        logged = next(e for e in trainer.state.log_history if "reward" in e)
        print(f"kernel-gym: TRL smoke run passed: one GRPO step on the CPU (tiny random model; reward "
              f"{logged['reward']:.3f}, grad norm {logged.get('grad_norm', float('nan')):.4g}, weights moved by "
              f"{moved:.3g})")
        return
    preflight(args)
    build(args).train()


if __name__ == "__main__":
    main()
