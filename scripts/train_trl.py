"""Kevin-style multi-turn GRPO on KernelRefine with TRL (checked against trl 1.16.0). Guide: docs/trainers.md.

    python scripts/train_trl.py --model Qwen/Qwen2.5-Coder-7B-Instruct --suite level1 --max-turns 4 \
        --num-generations 16 --use-vllm                          # one GPU node: vLLM colocated with training
    accelerate launch scripts/train_trl.py --use-vllm --vllm-mode server ...   # several GPUs, `trl vllm-serve` apart

Each completion slot is one turn (`--mode turns`): its prompt is the env's observation (the task and the summarized
earlier turns), its reward the discounted return R_t; GRPO normalizes over the num_generations / max_turns episodes
of a task. `--mode episode` trains one sample per episode (feedback tokens masked) on R_1. Candidate kernels are
evaluated by KERNEL_GYM_EVALUATOR ("local" sandbox pool on this machine, "ray", or a `kernel-gym serve` URL).
"""

from __future__ import annotations

import argparse


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
    return p.parse_args(argv)


def build(args: argparse.Namespace, *, model=None, tokenizer=None, evaluator=None):
    """The GRPOTrainer for these arguments (`model`/`tokenizer` override --model, e.g. in a smoke test)."""
    from trl import GRPOConfig, GRPOTrainer

    from kernel_gym.integrations.trl import KernelRefineRollout, kernel_dataset, kernel_reward

    env = {"device": args.device, "gamma": args.gamma, "aggregation": args.aggregation}
    rollout = KernelRefineRollout(max_turns=args.max_turns, mode=args.mode, env_kwargs=env, evaluator=evaluator,
                                  policy_summaries=args.policy_summaries)
    config = GRPOConfig(output_dir=args.output_dir, num_generations=args.num_generations,
                        per_device_train_batch_size=args.batch_size, max_completion_length=args.max_completion_length,
                        learning_rate=args.learning_rate, max_steps=args.max_steps, beta=0.0,  # no KL term (Kevin)
                        use_vllm=args.use_vllm, vllm_mode=args.vllm_mode, logging_steps=1, report_to="none",
                        use_cpu=args.use_cpu, bf16=not args.use_cpu, save_strategy="no" if args.use_cpu else "steps")
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


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    preflight(args)
    build(args).train()


if __name__ == "__main__":
    main()
