"""A local chat tokenizer for the trainers' tests (OpenRLHF, TRL, verl): no download."""

from __future__ import annotations

CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def chat_tokenizer(repo_root, vocab_size: int = 1200, extra_texts: tuple = ()):
    """A byte-level BPE tokenizer trained here (no download) on project text, with ChatML special tokens and template:
    what the trainers' tests give OpenRLHF, TRL and verl in place of a model's tokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    corpus = [(repo_root / "tests" / "solutions" / "level1_relu.py").read_text(), (repo_root / "README.md").read_text(),
              *extra_texts]
    tok.train_from_iterator(corpus, trainer)
    hf = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                 additional_special_tokens=["<|im_start|>"])
    hf.chat_template = CHATML
    return hf
