"""A tiny random chat model built on this machine, no Hub: what the trainers' `--smoke` paths (and their tests) train.

- `tiny_tokenizer()`: a byte-level BPE tokenizer trained here in well under a second on kernel-gym's own text (the
  prompt and feedback templates, a task's source), with ChatML's special tokens and chat template; end of turn
  `<|im_end|>`, padding `<|endoftext|>`.
- `tiny_llama(tokenizer)`: a one-layer Llama (hidden size 32) with random weights for that vocabulary.
- `save_tiny_model(folder)`: both in a folder, for a trainer that loads its model by path (verl), as a Qwen2 model.

It writes garbage, which the env answers with format errors: a smoke run checks that the pipeline turns, from
generation through the env to one optimizer step, not that anything is learned.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def default_texts() -> list[str]:
    """kernel-gym's own text: its prompt and feedback templates and a task's reference source."""
    from kernel_gym.tasks import load_task

    templates = Path(__file__).resolve().parents[1] / "feedback" / "templates"
    return [p.read_text() for p in sorted(templates.glob("*.j2"))] + [load_task("level1/relu").source]


def tiny_tokenizer(texts: Iterable[str] | None = None, vocab_size: int = 1200) -> Any:
    """A `PreTrainedTokenizerFast` whose BPE vocabulary is trained here on `texts` (default: `default_texts()`)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(list(default_texts() if texts is None else texts), trainer)
    hf = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                 additional_special_tokens=["<|im_start|>"])
    hf.chat_template = CHATML
    return hf


def tiny_llama(tokenizer: Any, seed: int = 0, hidden_size: int = 32) -> Any:
    """A one-layer `LlamaForCausalLM` with random weights (seeded) for `tokenizer`'s vocabulary."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=hidden_size, intermediate_size=2 * hidden_size,
                         num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                         max_position_embeddings=32768, pad_token_id=tokenizer.pad_token_id,
                         eos_token_id=tokenizer.eos_token_id, bos_token_id=None, tie_word_embeddings=False)
    return LlamaForCausalLM(config)


def save_tiny_model(folder: str | Path, tokenizer: Any = None, seed: int = 0, hidden_size: int = 16) -> Path:
    """A local model folder: `tokenizer` (default: `tiny_tokenizer()`) and a one-layer Qwen2 with random weights."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    folder = Path(folder)
    tokenizer = tokenizer or tiny_tokenizer()
    tokenizer.save_pretrained(folder)
    torch.manual_seed(seed)
    config = Qwen2Config(vocab_size=len(tokenizer), hidden_size=hidden_size, intermediate_size=2 * hidden_size,
                         num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
                         pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
                         architectures=["Qwen2ForCausalLM"], tie_word_embeddings=False)
    Qwen2ForCausalLM(config).save_pretrained(folder)
    return folder
