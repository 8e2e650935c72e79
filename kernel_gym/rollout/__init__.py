"""Agent evaluation: K trajectories x T turns per task over many tasks, at equal budget, resumable.

    from kernel_gym.rollout import evaluate
    result = evaluate("replay:responses.jsonl", "level1", "128x1,32x4,16x8", out="runs/eval", env={"device": "cuda"})
    print(result.table())                      # correctness, mean speedup, fast_p, best@k per configuration

`kernel-gym rollout` is the command line of `evaluate`; `kernel-gym report DIR` plots a finished (or running) one.
"""

from kernel_gym.rollout.budget import DEFAULT_CONFIGS, Budget, parse_budgets, resolve_tasks
from kernel_gym.rollout.driver import RolloutConfig, RolloutResult, evaluate
from kernel_gym.rollout.log import read_records, trajectories

__all__ = ["DEFAULT_CONFIGS", "Budget", "RolloutConfig", "RolloutResult", "evaluate", "parse_budgets", "read_records",
           "resolve_tasks", "trajectories"]
