"""Policies: what answers the env, behind one small interface.

    policy.generate([Request(prompt=..., task=..., turn=..., trajectory=..., config=..., seed=...), ...]) -> [str, ...]

- `ScriptedPolicy`: a callable, a list of responses by turn, a dict by task, or a folder of solution files.
- `ReplayPolicy`: responses read from a JSONL/JSON file, keyed by task / turn / trajectory / config, or a list.
- `OpenAIPolicy`: any OpenAI-compatible chat-completions server (vLLM, SGLang, ...), with the standard library.
- `HFPolicy`: a Hugging Face transformers model with its chat template (transformers is imported on first use).

`make_policy("replay:FILE" | "scripted:..." | "openai:URL" | "hf:MODEL", **options)` builds one from a spec.
"""

from kernel_gym.policies.base import Policy, PolicyError, Request, as_text, list_policies, make_policy, register_policy
from kernel_gym.policies.hf import HFPolicy
from kernel_gym.policies.openai_compat import OpenAIPolicy
from kernel_gym.policies.replay import ReplayPolicy
from kernel_gym.policies.scripted import ScriptedPolicy

__all__ = ["HFPolicy", "OpenAIPolicy", "Policy", "PolicyError", "ReplayPolicy", "Request", "ScriptedPolicy", "as_text",
           "list_policies", "make_policy", "register_policy"]
