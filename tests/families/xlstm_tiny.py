"""Tiny random transformers xLSTM folders for tests, built offline (``build_tiny_xlstm``)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import TINY_ALPHABET, save_char_tokenizer

CHUNK = 16  # transformers' chunk size here: 45 tokens are 2 chunks and 13 steps, 180 are 11 chunks and 4 steps


def tiny_config(vocab_size: int, weight_mode: str = "single"):
    """2 mLSTM blocks, hidden 64, 4 heads of 16 key x 16 value dimensions, float32 kernels, chunks of ``CHUNK``.
    Query/key and value widths are multiples of 64, as transformers' cache assumes (it rounds them up: with
    another width ``generate`` fails on the cache's shape)."""
    from transformers import xLSTMConfig

    return xLSTMConfig(vocab_size=vocab_size, hidden_size=64, num_hidden_layers=2, num_heads=4, qk_dim_factor=1.0, chunk_size=CHUNK,
                       ffn_proj_factor=1.5, weight_mode=weight_mode, tie_word_embeddings=False, use_cache=False,
                       autocast_kernel_dtype="float32", pad_token_id=None, bos_token_id=None, eos_token_id=None)


def tiny_model(vocab_size: int = 37, seed: int = 0, weight_mode: str = "single"):
    """``xLSTMForCausalLM`` with its weights moved far from transformers' init (whose gate weights are 0: every gate
    would ignore the input), so every part of the block matters; in eval mode."""
    import torch
    from transformers import xLSTMForCausalLM

    torch.manual_seed(seed)
    model = xLSTMForCausalLM(tiny_config(vocab_size, weight_mode)).eval()
    with torch.no_grad():
        for _name, p in model.named_parameters():
            p.add_(torch.randn_like(p) * 0.3)
    return model


def build_tiny_xlstm(path: Path, seed: int = 0, tokenizer: bool = True, alphabet: str = TINY_ALPHABET) -> Path:
    """``tiny_model`` saved to ``path`` (safetensors) with a character-level fast tokenizer over ``alphabet``
    (+ <unk>) unless ``tokenizer`` is False (vocabulary 37 then)."""
    vocab = {"<unk>": 0, **{c: i + 1 for i, c in enumerate(dict.fromkeys(alphabet))}}
    tiny_model(len(vocab) if tokenizer else 37, seed).save_pretrained(path, safe_serialization=True)
    if tokenizer:
        save_char_tokenizer(path, vocab)
    return path
