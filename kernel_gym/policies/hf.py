"""A Hugging Face transformers causal LM, prompted through its chat template. transformers is imported on first use,
so the core install does not need it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kernel_gym.policies.base import Policy, Request, register_policy


class HFPolicy(Policy):
    """Sampling from a transformers model.

    | argument | default | meaning |
    |---|---|---|
    | model | — | a model name or path (`AutoModelForCausalLM.from_pretrained`), or a loaded model |
    | tokenizer | None | a tokenizer, or a name or path; None loads the model's |
    | temperature, top_p | 1.0, 1.0 | sampling parameters; temperature 0 decodes greedily |
    | max_new_tokens | 4096 | completion limit |
    | system_prompt | None | a system message before each prompt |
    | batch_size | 8 | prompts per `generate` call (left-padded) |
    | device | None | where a model loaded here goes ("cuda", "cpu"); None: cuda when available |
    | dtype | "auto" | the dtype of a model loaded here |
    | chat_template_kwargs | None | extra arguments of `apply_chat_template` (e.g. `{"enable_thinking": False}`) |

    Each batch is seeded with its first request's seed (`transformers.set_seed`): a run reproduces when the batches
    are the same, which they are for the same rollout settings; `batch_size=1` makes every sample's seed its own.
    """

    batched = True

    def __init__(self, model: Any, tokenizer: Any = None, *, temperature: float = 1.0, top_p: float = 1.0,
                 max_new_tokens: int = 4096, system_prompt: str | None = None, batch_size: int = 8,
                 device: str | None = None, dtype: str = "auto", chat_template_kwargs: dict[str, Any] | None = None):
        import transformers

        self.name = f"hf:{model}" if isinstance(model, str) else f"hf:{type(model).__name__}"
        if isinstance(model, str):
            import torch

            device = device or ("cuda" if torch.cuda.is_available() else "cpu")
            tokenizer = tokenizer or model
            model = transformers.AutoModelForCausalLM.from_pretrained(model, dtype=dtype).to(device)
        if tokenizer is None:
            tokenizer = getattr(model, "name_or_path", None) or model.config.name_or_path
        if isinstance(tokenizer, str):
            tokenizer = transformers.AutoTokenizer.from_pretrained(tokenizer)
        tokenizer.padding_side = "left"  # generation continues from the right end of every row
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        self.model, self.tokenizer = model.eval(), tokenizer
        self.temperature, self.top_p, self.max_new_tokens = temperature, top_p, max_new_tokens
        self.system_prompt, self.batch_size = system_prompt, max(1, batch_size)
        self.chat_template_kwargs = dict(chat_template_kwargs or {})

    def generate(self, requests: Sequence[Request]) -> list[str]:
        out: list[str] = []
        for start in range(0, len(requests), self.batch_size):
            out.extend(self._batch(requests[start:start + self.batch_size]))
        return out

    def _batch(self, requests: Sequence[Request]) -> list[str]:
        import torch
        import transformers

        texts = [self.tokenizer.apply_chat_template(r.messages(self.system_prompt), tokenize=False,
                                                    add_generation_prompt=True, **self.chat_template_kwargs)
                 for r in requests]
        enc = self.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        enc = {k: v.to(self.model.device) for k, v in enc.items()}
        transformers.set_seed(int(requests[0].seed))
        sampling = {"do_sample": True, "temperature": self.temperature, "top_p": self.top_p} \
            if self.temperature > 0 else {"do_sample": False}
        with torch.no_grad():
            tokens = self.model.generate(**enc, max_new_tokens=self.max_new_tokens,
                                         pad_token_id=self.tokenizer.pad_token_id, **sampling)
        new = tokens[:, enc["input_ids"].shape[1]:]
        return self.tokenizer.batch_decode(new, skip_special_tokens=True)

    def close(self) -> None:
        self.model = None


@register_policy("hf")
def _from_spec(arg: str, **options: Any) -> Policy:
    """`hf:MODEL`: a model name or local path; options as HFPolicy's arguments."""
    return HFPolicy(arg, **options)
