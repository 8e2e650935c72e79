"""Rewards: per-turn scores (a registry) and their aggregation across the turns of an episode."""

from kernel_gym.rewards.aggregate import aggregate
from kernel_gym.rewards.scores import TurnSignals, get_score, kevin_score, list_scores, register_score

__all__ = ["TurnSignals", "aggregate", "get_score", "kevin_score", "list_scores", "register_score"]
