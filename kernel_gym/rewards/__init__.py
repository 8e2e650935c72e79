"""Rewards: per-turn scores (a registry) and their aggregation across the turns of an episode.

Scores, one module each: `kevin` and `correctness` (scores.py), `linear`, `milestone`, `tritonrl`, `plan_code`,
`length_shaped`. See docs/rewards.md for the formulas and their papers.
"""

from kernel_gym.rewards.aggregate import REWARD_MODES, aggregate, step_reward
from kernel_gym.rewards.length_shaped import length_shaped, task_difficulty
from kernel_gym.rewards.linear import linear_score
from kernel_gym.rewards.milestone import milestone_score
from kernel_gym.rewards.plan_code import plan_code_info, plan_code_score
from kernel_gym.rewards.scores import (
    TurnSignals,
    get_score,
    kevin_score,
    list_scores,
    register_factory,
    register_score,
    score_terms,
)
from kernel_gym.rewards.tritonrl import tritonrl_score

__all__ = ["REWARD_MODES", "TurnSignals", "aggregate", "get_score", "kevin_score", "length_shaped", "linear_score",
           "list_scores", "milestone_score", "plan_code_info", "plan_code_score", "register_factory", "register_score",
           "score_terms", "step_reward", "task_difficulty", "tritonrl_score"]
