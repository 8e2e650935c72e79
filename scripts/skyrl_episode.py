"""One KernelRefine episode through SkyRL's own rollout code: `SkyRLGymGenerator.generate` -> `agent_loop` ->
`skyrl_gym.make("kernel_gym", ...)` (skyrl 0.4.0, Python >= 3.12: .venv-skyrl, made by scripts/skyrl_python.sh).
The model is a scripted inference engine: it answers each of the generator's calls with the next of the responses
read from stdin (a JSON list of strings), tokenized by kernel-gym's tiny BPE tokenizer, EOS appended.

    echo '["no code here", "still none"]' | PYTHONPATH=. .venv-skyrl/bin/python scripts/skyrl_episode.py \\
        http://127.0.0.1:8000 [--task level1/relu] [--score correctness]

EVALUATOR: a `kernel-gym serve` URL (evaluation in the server's interpreter, so this one needs no Triton), or
"local". Prints one JSON object: the per-turn rewards SkyRL's generator put on the token that ends each of the
model's turns, rewards found on other tokens, the prompts the engine was given (decoded), the rollout's kernel
metrics and stop reasons. tests/integrations/test_skyrl_loop.py compares them with `gym.make`'s episode.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any


def scripted_engine(tokenizer: Any, texts: list[str]) -> Any:
    """An `InferenceEngineInterface` that answers each generate() call with the next canned text (token ids + EOS)."""
    from skyrl.backends.skyrl_train.inference_servers.base import InferenceEngineInterface

    class ScriptedEngine(InferenceEngineInterface):
        def __init__(self):
            self.queue, self.prompts, self.finished = list(texts), [], []

        @property
        def model_name(self) -> str:
            return "scripted"

        async def generate(self, input_batch, model=None):
            self.prompts.append(list(input_batch["prompt_token_ids"][0]))
            text = self.queue.pop(0)
            ids = tokenizer.encode(text, add_special_tokens=False) + [tokenizer.eos_token_id]
            return {"responses": [text], "response_ids": [ids], "stop_reasons": ["stop"], "response_logprobs": None,
                    "prompt_logprobs": None, "rollout_expert_indices": None, "rollout_sample_support": None}

        async def finish_session(self, session_id):
            self.finished.append(session_id)

        # the rest of the interface: a generator's rollout never calls these
        def get_endpoint_url(self):
            raise NotImplementedError

        async def chat_completion(self, request_payload):
            raise NotImplementedError

        async def render_chat_completion(self, request_payload):
            raise NotImplementedError

        async def completion(self, request_payload):
            raise NotImplementedError

        async def wake_up(self, *args, **kwargs):
            raise NotImplementedError

        async def sleep(self, *args, **kwargs):
            raise NotImplementedError

        async def update_named_weights(self, request):
            raise NotImplementedError

        async def load_lora_adapter(self, lora_name, lora_path):
            raise NotImplementedError

        async def teardown(self):
            pass

        async def reset_prefix_cache(self, reset_running_requests=False):
            pass

        async def pause_generation(self):
            pass

        async def resume_generation(self):
            pass

        async def get_world_size(self):
            return 1, 1

    return ScriptedEngine()


def turn_ends(loss_mask: list[int]) -> list[int]:
    """The index of each model turn's last token (its EOS) in a multi-turn response: the loss mask's 1 -> 0 edges and
    its final 1 (observation tokens are masked out)."""
    return [i for i, m in enumerate(loss_mask) if m == 1 and (i + 1 == len(loss_mask) or loss_mask[i + 1] == 0)]


def skyrl_episode(texts: list[str], label: dict[str, Any], env_config: dict[str, Any]) -> dict[str, Any]:
    """The episode through `SkyRLGymGenerator.generate`, one trajectory, at most len(texts) turns."""
    from skyrl.train.config import GeneratorConfig, SamplingParams, SkyRLGymConfig
    from skyrl.train.generators.skyrl_gym_generator import SkyRLGymGenerator

    from kernel_gym.integrations import skyrl as adapter
    from kernel_gym.integrations.tiny_model import tiny_tokenizer

    tokenizer = tiny_tokenizer()
    engine = scripted_engine(tokenizer, texts)
    generator_cfg = GeneratorConfig(max_turns=len(texts), max_input_length=1_000_000,
                                    sampling_params=SamplingParams(max_generate_length=4096, logprobs=None))
    # SkyRL reads an env's section as `getattr(skyrl_gym_cfg, env_class)`: the YAML's environment.skyrl_gym.kernel_gym
    gym_cfg = SkyRLGymConfig(max_env_workers=1)
    setattr(gym_cfg, adapter.ENV_ID, env_config)
    generator = SkyRLGymGenerator(generator_cfg, gym_cfg, engine, tokenizer)
    batch = {"prompts": [[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "placeholder"}]],
             "env_classes": [adapter.ENV_ID], "env_extras": [{"extra_info": {adapter.LABEL_KEY: label}}]}
    out = asyncio.run(generator.generate(batch, disable_tqdm=True))
    token_rewards, ends = out["rewards"][0], turn_ends(out["loss_masks"][0])
    return {"rewards": [token_rewards[i] for i in ends],
            "rewards_elsewhere": [[i, r] for i, r in enumerate(token_rewards) if r != 0 and i not in ends],
            "prompts": [tokenizer.decode(ids) for ids in engine.prompts],
            "stop_reasons": out["stop_reasons"], "sessions_finished": len(engine.finished),
            "rollout_metrics": {k: v for k, v in (out["rollout_metrics"] or {}).items() if "kernel" in k}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("evaluator", help='a `kernel-gym serve` URL, or "local"')
    parser.add_argument("--task", default="level1/relu")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--score", default="correctness", help="deterministic by default, for comparisons")
    args = parser.parse_args()
    texts = json.load(sys.stdin)
    env_config = {"env": {"device": "cpu", "score": args.score}, "evaluator": args.evaluator, "eval_workers": 1}
    result = skyrl_episode(texts, {"task": args.task, "seed": args.seed}, env_config)
    print(json.dumps({"python": sys.version.split()[0], **result}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
