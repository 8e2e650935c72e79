"""Preference data and model signals (CudaPerf's two-stage recipe; the reward survey's "quality" signal).

- `pairs_from_logs(paths, PairConfig(...))`: trajectory/rollout logs -> chosen/rejected pairs with evidence
  (`kernel-gym pairs LOG... --out pairs.jsonl`).
- `load_ranker(spec)`, `register_ranker(name)`: a user's pointwise or pairwise model as the `ranker` signal.
- `LLMReviewer(policy, ...)`: an LLM rating whether a kernel is genuine, as the `judge` signal and a review flag
  (given to the env as `judge=`; not the trusted judge of kernel_gym/judge/). `LLMJudge` is its deprecated old name.
See docs/preference.md.
"""

import warnings
from typing import Any

from kernel_gym.preference.candidates import Candidate, read_candidates
from kernel_gym.preference.llm_review import LLMReviewer, ReviewVerdict, make_reviewer, parse_verdict
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

__all__ = ["Candidate", "LLMReviewer", "PairConfig", "PairStats", "Ranker", "RankerInput", "ReviewVerdict", "compare",
           "list_rankers", "load_ranker", "make_pairs", "make_reviewer", "noise_band", "pairs_from_logs",
           "parse_verdict", "read_candidates", "register_ranker", "write_pairs"]


def __getattr__(name: str) -> Any:
    if name == "LLMJudge":  # the old name, in user code that followed docs/preference.md before the rename
        warnings.warn("kernel_gym.preference.LLMJudge is deprecated: use LLMReviewer (the word 'judge' is the trusted "
                      "judge's, kernel_gym/judge/)", DeprecationWarning, stacklevel=2)
        return LLMReviewer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
