"""A local chat tokenizer for the trainers' tests (OpenRLHF, TRL, verl): no download."""

from __future__ import annotations

from kernel_gym.integrations.tiny_model import tiny_tokenizer


def chat_tokenizer(repo_root, vocab_size: int = 1200, extra_texts: tuple = ()):
    """kernel_gym.integrations.tiny_model's tokenizer (BPE trained here, ChatML special tokens and template), trained
    on project text: what the trainers' tests give OpenRLHF, TRL and verl in place of a model's tokenizer."""
    corpus = [(repo_root / "tests" / "solutions" / "level1_relu.py").read_text(), (repo_root / "README.md").read_text(),
              *extra_texts]
    return tiny_tokenizer(corpus, vocab_size=vocab_size)
