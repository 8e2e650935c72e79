"""Run kernel-gym episodes through verifiers (0.3.x) against any OpenAI-compatible endpoint (vLLM, a hosted model),
and print each rollout's per-turn scores, returns R_t and the rubric's reward (R_1).

    vllm serve Qwen/Qwen2.5-Coder-7B-Instruct --port 8000 &
    OPENAI_API_KEY=none python examples/verifiers/eval_kernel_gym.py --base-url http://127.0.0.1:8000/v1 \
        --model Qwen/Qwen2.5-Coder-7B-Instruct --suite level1 --limit 4 --max-turns 4 --device cuda

`kernel_gym.integrations.verifiers.load_environment` is also what a Prime environments-hub package re-exports.
"""

from __future__ import annotations

import argparse
import asyncio


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--api-key-var", default="OPENAI_API_KEY")
    parser.add_argument("--suite", default="level1")
    parser.add_argument("--split", default="eval")
    parser.add_argument("--limit", type=int, default=4)
    parser.add_argument("--max-turns", type=int, default=4)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--evaluator", default=None, help="'local', 'ray[:address]' or 'http(s)://host:port'")
    parser.add_argument("--followup", default="feedback", choices=["feedback", "observation"])
    args = parser.parse_args()

    from verifiers.legacy.types import ClientConfig

    from kernel_gym.integrations.verifiers import load_environment

    env = load_environment(suite=args.suite, split=args.split, max_turns=args.max_turns,
                           env_kwargs={"device": args.device}, evaluator=args.evaluator, followup=args.followup)
    client = ClientConfig(api_base_url=args.base_url, api_key_var=args.api_key_var)
    results = asyncio.run(env.generate(env.get_dataset(n=args.limit), client=client, model=args.model,
                                       state_columns=["kernel_gym"]))
    for rollout in results["outputs"]:
        record = rollout.get("kernel_gym") or {}
        print(f"{record.get('task')}: scores {record.get('scores')} returns "
              f"{[round(r, 3) for r in record.get('returns', [])]} reward {rollout['reward']:.3f}")


if __name__ == "__main__":
    main()
