"""Preference data and model signals (CudaPerf's two-stage recipe; the reward survey's "quality" signal).

- `pairs_from_logs(paths, PairConfig(...))`: trajectory/rollout logs -> chosen/rejected pairs with evidence
  (`kernel-gym pairs LOG... --out pairs.jsonl`).
- `load_ranker(spec)`, `register_ranker(name)`: a user's pointwise or pairwise model as the `ranker` signal.
- `LLMJudge(policy, ...)`: an LLM rating whether a kernel is genuine, as the `judge` signal and a review flag.
See docs/preference.md.
"""

from kernel_gym.preference.candidates import Candidate, read_candidates
from kernel_gym.preference.judge import JudgeVerdict, LLMJudge, make_judge, parse_verdict
from kernel_gym.preference.pairs import (
    PairConfig,
    PairStats,
    compare,
    make_pairs,
    noise_band,
    pairs_from_logs,
    write_pairs,
)
from kernel_gym.preference.ranker import Ranker, RankerInput, list_rankers, load_ranker, register_ranker

__all__ = ["Candidate", "JudgeVerdict", "LLMJudge", "PairConfig", "PairStats", "Ranker", "RankerInput", "compare",
           "list_rankers", "load_ranker", "make_judge", "make_pairs", "noise_band", "pairs_from_logs", "parse_verdict",
           "read_candidates", "register_ranker", "write_pairs"]
