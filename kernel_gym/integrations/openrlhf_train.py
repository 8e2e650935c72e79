"""Launcher: OpenRLHF's `train_ppo_ray` with one experience per KernelRefine turn (Kevin's recipe).

    python -m kernel_gym.integrations.openrlhf_train [any openrlhf.cli.train_ppo_ray flags]

Why it exists: in OpenRLHF (0.11) each vLLM actor's `generate_responses` gathers one `execute()` result per sample
and the trainer's `SamplesGenerator` turns each result into exactly one Experience (one token sequence, one scalar
reward). `KernelRefineExecutor` in "turns" mode returns a *list* of per-turn samples instead. This launcher:

1. sets KERNEL_GYM_OPENRLHF_MODE=turns (unless set) and KERNEL_GYM_OPENRLHF_FLATTEN=1, and
   `--train.agent_func_path` to kernel_gym/integrations/openrlhf.py when the flags do not name one;
2. starts Ray (unless already connected) with every KERNEL_GYM_* variable and OpenRLHF's usual defaults in the
   runtime env, and with `install` below as the worker-process setup hook, so every Ray worker, including the
   trainer actor that owns the `SamplesGenerator`, applies the patch;
3. runs `openrlhf.cli.train_ppo_ray` as `__main__` (its own argument parsing and checks, unchanged).

The patch (`install`) wraps `SamplesGenerator._dispatch_prompts_to_vllm`: each object ref it returns (one prompt's
list of n executor results) is chained through a zero-CPU Ray task running `flatten_responses`, which expands
every list of turn samples into its samples, turn-major: for T turns and n samples per prompt the prompt yields
n·T responses ordered (turn 1: sample 1..n), (turn 2: sample 1..n), ... Everything downstream is stock: each
response becomes one Experience. Which samples share an advantage is kernel_gym.integrations.advantage's option
(KERNEL_GYM_ADVANTAGE, the same default in every adapter):

- "group_all_turns" (default, Kevin's recipe): every turn of the prompt's n episodes. OpenRLHF's group statistics
  (`reshape(-1, n_samples_per_prompt)`) can only group n samples, so `flatten_responses` hands each sample its
  advantage as its reward (its return normalized over the prompt's n·T turn samples; the return itself stays in
  `extra_logs["kernel/return"]`), and the launcher sets `--algo.advantage.estimator flash_reinforce`, which only
  subtracts the batch's mean (0 here) and keeps it; another estimator is refused.
- "per_turn_index": the rewards stay the returns and OpenRLHF's group estimators (group_norm by default; rloo,
  reinforce_baseline, dr_grpo) normalize each n consecutive samples: the same turn of the n episodes of a task.

Each PPO step still consumes rollout.batch_size × n_samples_per_prompt samples, so one rollout now feeds T steps
(see docs/openrlhf.md for the batch-size arithmetic).
"""

from __future__ import annotations

import logging
import os
import runpy
import sys
from pathlib import Path
from typing import Any

from kernel_gym.errors import ConfigError
from kernel_gym.integrations.advantage import (
    ENV_ADVANTAGE,
    advantage_option,
    normalize,
    single_episode_warning,
)

logger = logging.getLogger(__name__)

ENV_MODE = "KERNEL_GYM_OPENRLHF_MODE"
ENV_FLATTEN = "KERNEL_GYM_OPENRLHF_FLATTEN"
SETUP_HOOK = "kernel_gym.integrations.openrlhf_train.install"
ESTIMATOR_FLAG = "--algo.advantage.estimator"
GROUP_ESTIMATORS = ("group_norm", "rloo", "reinforce_baseline", "dr_grpo")
"""OpenRLHF's estimators with a per-prompt group (n consecutive samples): per_turn_index's."""
_RAY_DEFAULTS = {"TOKENIZERS_PARALLELISM": "true", "NCCL_DEBUG": "WARN", "RAY_ENABLE_ZERO_COPY_TORCH_TENSORS": "1"}


def flatten_responses(responses: list[Any], advantage: str | None = None) -> list[dict]:
    """One prompt's executor results -> one response per experience (lists of turn samples expanded turn-major).

    A plain dict (a "sum"-mode or stock sample) passes through. When every result is a list of the same length T,
    the order is turn-major (turn 1 of every sample, then turn 2, ...), so groups of n consecutive responses share
    task and turn; lists of unequal lengths are concatenated in sample order. With `advantage` group_all_turns
    (the default) the turn samples' rewards become their advantages over all of them (see the module docstring).
    """
    if responses and all(isinstance(r, list) for r in responses) and advantage_option(advantage) == "group_all_turns":
        responses = with_advantages(responses)
    groups = [r if isinstance(r, list) else [r] for r in responses]
    lengths = {len(g) for g in groups}
    if len(lengths) == 1:
        return [g[t] for t in range(lengths.pop()) for g in groups]
    logger.warning("kernel-gym: executor results of unequal turn counts %s; group statistics will mix turns",
                   sorted(lengths))
    return [sample for g in groups for sample in g]


def with_advantages(episodes: list[list[dict]]) -> list[list[dict]]:
    """One prompt's episodes (lists of turn samples) with each sample's reward replaced by its group_all_turns
    advantage; the return goes to `extra_logs["kernel/return"]`."""
    advantages = normalize([[float(s["reward"]) for s in samples] for samples in episodes], "group_all_turns")
    return [[{**s, "reward": a, "extra_logs": {**(s.get("extra_logs") or {}), "kernel/return": float(s["reward"]),
                                               "kernel/advantage": a}}
             for s, a in zip(samples, row)] for samples, row in zip(episodes, advantages)]


def advantage_args(argv: list[str], advantage: str, mode: str = "turns") -> list[str]:
    """The flags with the advantage estimator `advantage` needs in "turns" mode: flash_reinforce for
    group_all_turns (the rewards are advantages already), a group estimator for per_turn_index (group_norm when
    none is given); ConfigError for an estimator that would regroup or rescale them."""
    if mode != "turns":
        return list(argv)
    given = _flag(argv, ESTIMATOR_FLAG)
    n = int(_flag(argv, "--rollout.n_samples_per_prompt") or 1)
    warning = single_episode_warning(n, advantage, f"OpenRLHF --rollout.n_samples_per_prompt {n}")
    if warning:
        logger.warning(warning)
    wanted = ("flash_reinforce",) if advantage == "group_all_turns" else GROUP_ESTIMATORS
    if given is None:
        return [*argv, ESTIMATOR_FLAG, wanted[0]]
    if given not in wanted:
        raise ConfigError(f"{ESTIMATOR_FLAG} {given} with {ENV_ADVANTAGE}={advantage}: use {' or '.join(wanted)}"
                          + (" (the rewards handed to OpenRLHF are already each turn's advantage over every turn of "
                             "its task's episodes; another estimator would regroup them per n samples), or "
                             f"{ENV_ADVANTAGE}=per_turn_index with a group estimator" if advantage == "group_all_turns"
                             else " (a group estimator normalizes each turn index over the n episodes)"))
    return list(argv)


def _flag(argv: list[str], name: str) -> str | None:
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def install() -> bool:
    """Patch OpenRLHF's SamplesGenerator (in this process) to flatten per-turn samples. Idempotent.

    Returns False where OpenRLHF's trainer modules cannot be imported (e.g. a Ray worker without vLLM), which
    is harmless: only the process that runs the SamplesGenerator needs the patch.
    """
    try:
        from openrlhf.trainer.ppo_utils.samples_generator import SamplesGenerator
    except ImportError:
        return False
    if getattr(SamplesGenerator, "_kernel_gym_flatten", False):
        return True
    dispatch = SamplesGenerator._dispatch_prompts_to_vllm

    def dispatch_flattened(self, *args, **kwargs):
        advantage = advantage_option()  # this process's KERNEL_GYM_ADVANTAGE (the launcher forwards it)
        return [_flatten_task().remote(ref, advantage) for ref in dispatch(self, *args, **kwargs)]

    SamplesGenerator._dispatch_prompts_to_vllm = dispatch_flattened
    SamplesGenerator._kernel_gym_flatten = True
    return True


_FLATTEN_TASK = None


def _flatten_task():
    global _FLATTEN_TASK
    if _FLATTEN_TASK is None:
        import ray

        _FLATTEN_TASK = ray.remote(num_cpus=0)(flatten_responses)
    return _FLATTEN_TASK


def agent_path() -> str:
    """The file to pass as `--train.agent_func_path`."""
    return str(Path(__file__).with_name("openrlhf.py"))


def launch_args(argv: list[str]) -> list[str]:
    """The flags with `--train.agent_func_path` added when absent."""
    if any(a == "--train.agent_func_path" or a.startswith("--train.agent_func_path=") for a in argv):
        return list(argv)
    return [*argv, "--train.agent_func_path", agent_path()]


def runtime_env() -> dict[str, Any]:
    """Ray runtime env: OpenRLHF's defaults, every KERNEL_GYM_* variable, and the patch as setup hook."""
    env_vars = {k: os.environ.get(k, v) for k, v in _RAY_DEFAULTS.items()}
    env_vars.update({k: v for k, v in os.environ.items() if k.startswith("KERNEL_GYM_")})
    return {"env_vars": env_vars, "worker_process_setup_hook": SETUP_HOOK}


def main(argv: list[str] | None = None) -> None:
    from kernel_gym.commands.doctor import require

    argv = list(sys.argv[1:] if argv is None else argv)
    if "--help" not in argv and "-h" not in argv:  # before Ray starts: what is missing, in one line (kernel-gym doctor)
        require(["ray", "openrlhf", "vllm"], "OpenRLHF training")
    mode = os.environ.setdefault(ENV_MODE, "turns")
    os.environ[ENV_FLATTEN] = "1"
    try:
        os.environ[ENV_ADVANTAGE] = advantage = advantage_option()
        argv = advantage_args(argv, advantage, mode)
    except ConfigError as e:  # before Ray starts: one line
        raise SystemExit(f"kernel-gym: {e}") from None
    install()
    import ray

    if not ray.is_initialized():
        ray.init(runtime_env=runtime_env())
    sys.argv = ["openrlhf.cli.train_ppo_ray", *launch_args(argv)]
    runpy.run_module("openrlhf.cli.train_ppo_ray", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
