"""Small causal language models with random weights and an in-memory tokenizer: nothing is downloaded.

For tests (each training stage proven on the CPU in seconds) and for smoke runs of the whole pipeline on a GPU
machine without a model hub. The tokenizer is byte-level (any text round-trips) with optional whole-snippet tokens:
a complete kernel as one token. With a positive `snippet_bias` on those tokens (the architecture is Phi, whose
output layer has a bias that survives saving and loading), a random model emits a whole kernel now and then, so
even a model that knows nothing gets some completions that verify and some that do not: the reward then varies
within a GRPO group and every stage has something to learn from."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from tokenizers.pre_tokenizers import ByteLevel
from transformers import PhiConfig, PhiForCausalLM, PreTrainedTokenizerFast

SPECIALS = ("<pad>", "<s>", "</s>")
# A neutral chat template: role tags and the content, nothing model-specific.
CHAT_TEMPLATE = ("{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}\n{% endfor %}"
                 "{% if add_generation_prompt %}<|assistant|>\n{% endif %}")


def byte_tokenizer(snippets: Sequence[str] = ()):
    """A byte-level tokenizer (256 byte tokens, pad/bos/eos) plus one token per snippet, with a chat template."""
    vocab = {c: i for i, c in enumerate(sorted(ByteLevel.alphabet()))}
    for s in SPECIALS:
        vocab[s] = len(vocab)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", bos_token="<s>", eos_token="</s>")
    fast.chat_template = CHAT_TEMPLATE
    if snippets:
        fast.add_tokens(list(dict.fromkeys(snippets)))
    return fast


def random_model(tokenizer, hidden: int = 32, layers: int = 2, heads: int = 2, max_positions: int = 16384,
                 seed: int = 0, snippet_bias: float = 0.0):
    """A Phi causal LM of the given size with random weights; `snippet_bias` raises the output bias of every
    added (snippet) token."""
    torch.manual_seed(seed)
    cfg = PhiConfig(vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=4 * hidden,
                    num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=heads,
                    max_position_embeddings=max_positions, pad_token_id=tokenizer.pad_token_id,
                    bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                    tie_word_embeddings=False)
    model = PhiForCausalLM(cfg)
    added = sorted(tokenizer.get_added_vocab().values())
    snippet_ids = [i for i in added if tokenizer.convert_ids_to_tokens(i) not in SPECIALS]
    if snippet_bias and snippet_ids:
        with torch.no_grad():
            model.lm_head.bias[snippet_ids] = snippet_bias
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model


def write_random_model(out_dir: str | Path, snippets: Sequence[str] = (), **kw) -> Path:
    """Save a random model and its tokenizer to `out_dir` (a path any loader accepts); returns it."""
    out = Path(out_dir)
    tok = byte_tokenizer(list(snippets))
    model = random_model(tok, **kw)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out
