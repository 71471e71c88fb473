"""A tiny random transformers RecurrentGemma saved as a checkpoint folder, built offline for the tests.

Four blocks in Griffin's order (recurrent, recurrent, attention, recurrent: so one RG-LRU block reads the attention
block's output), an attention window of 16 tokens (texts of 45 and 180 tokens run past it), two heads sharing one
key and value head (multi-query, as Griffin's), and every weight moved far from the initialisation but Λ (so every
part of a block matters while a_t stays a decay that keeps something).
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import TINY_ALPHABET, save_char_tokenizer

WINDOW = 16


def build_tiny_rgemma(path: Path, seed: int = 0, tokenizer: bool = True, alphabet: str = TINY_ALPHABET,
                      block_types=("recurrent", "recurrent", "attention"), layers: int = 4,
                      vocab_size: int | None = None) -> Path:
    """The folder ``path``: config.json, model.safetensors and (``tokenizer``) a character tokenizer over
    ``alphabet`` (+ <unk> at 0); vocabulary ``vocab_size``, else the tokenizer's, else 37."""
    import torch
    from transformers import RecurrentGemmaConfig, RecurrentGemmaForCausalLM

    vocab = {"<unk>": 0, **{c: i + 1 for i, c in enumerate(dict.fromkeys(alphabet))}}
    torch.manual_seed(seed)
    config = RecurrentGemmaConfig(
        vocab_size=vocab_size or (len(vocab) if tokenizer else 37), hidden_size=16, intermediate_size=48, num_hidden_layers=layers,
        num_attention_heads=2, num_key_value_heads=1, lru_width=24, attention_window_size=WINDOW, conv1d_width=4,
        block_types=list(block_types), pad_token_id=0, bos_token_id=None, eos_token_id=None)
    model = RecurrentGemmaForCausalLM(config).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "recurrent_param" not in name:
                p.add_(torch.randn_like(p) * 0.3)
    model.save_pretrained(path, safe_serialization=True)
    if tokenizer:
        save_char_tokenizer(path, vocab)
    return path
