"""Train on kernel-gym with SkyRL: SkyRL's own PPO entrypoint, with the "kernel_gym" env registered in the Ray worker
that runs the trainer (and so in its generator).

Needs SkyRL's trainer on a GPU machine (`pip install "skyrl[skyrl-train]==0.4.0"`, Python >= 3.12) and kernel-gym;
the dataset comes from `python examples/skyrl/make_dataset.py --suite level1 --out data/kernel_gym`. For example:

    python examples/skyrl/main_kernel_gym.py \
      data.train_data="['data/kernel_gym/train.parquet']" data.val_data="['data/kernel_gym/validation.parquet']" \
      trainer.policy.model.path=Qwen/Qwen2.5-Coder-7B-Instruct \
      environment.env_class=kernel_gym generator.max_turns=4 generator.use_conversation_multi_turn=true \
      '+environment.skyrl_gym.kernel_gym={env: {device: cuda, gamma: 0.4}, evaluator: null, followup: feedback}'

Evaluation goes to the machine's judge (device cuda) or, with `evaluator: "http://host:port"`, to `kernel-gym serve`.
"""

from __future__ import annotations

import sys

import ray
from skyrl.train.config import SkyRLTrainConfig
from skyrl.train.entrypoints.main_base import BasePPOExp
from skyrl.train.utils import validate_cfg
from skyrl.train.utils.utils import initialize_ray


@ray.remote(num_cpus=1)
def kernel_gym_entrypoint(cfg: SkyRLTrainConfig):
    import kernel_gym.integrations.skyrl  # noqa: F401 - registers "kernel_gym" with skyrl_gym in this worker

    BasePPOExp(cfg).run()


def main() -> None:
    cfg = SkyRLTrainConfig.from_cli_overrides(sys.argv[1:])
    validate_cfg(cfg)
    initialize_ray(cfg)
    ray.get(kernel_gym_entrypoint.remote(cfg))


if __name__ == "__main__":
    main()
