"""A transformers xLSTM trained by seqviz's language-model loop, on seqviz's own vocabulary.

``XLSTMTrainee`` answers the loop as ``RecurrentLM`` does (``model(x, state) -> (logits, state)``,
``num_parameters``, ``save_pretrained``) and runs ``xLSTMForCausalLM``'s own forward: transformers' native
torch chunkwise mLSTM (``mlstm_chunkwise_native_autograd``: the matrix memory materialised once per chunk, the
outputs within a chunk in parallel; Beck et al. 2025, "xLSTM 7B", section 3) runs on the CPU without the
``xlstm`` package's kernels, fast enough to train here. The config's ``mode`` stays "inference" (transformers'
default, which ``generate`` needs): that path runs the same chunkwise kernel over whole chunks and steps through
a remainder shorter than a chunk, with autograd, so any window length trains. The folder it writes is a plain
transformers xLSTM (``config.json``, ``model.safetensors``) plus seqviz's ``vocab.json`` and card, so
``seqviz.load`` and transformers both open it. No state is carried from one window to the next (as the Mamba).
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from torch import nn

from seqviz.data.tokenizers import Tokenizer


def xlstm_config(vocab_size: int, hidden: int, layers: int, heads: int = 4, ffn_factor: float = 1.5,
                 chunk_size: int = 64):
    """An ``xLSTMConfig`` of seqviz's small shape: mLSTM blocks only (transformers' xLSTM has no sLSTM),
    query/key half as wide as the residual stream (transformers' default), a gated feed-forward
    ``ffn_factor`` × hidden wide (rounded up to 64), untied head (safetensors keeps no shared tensors), and
    float32 throughout (the kernel's bfloat16 autocast is a GPU setting the native kernels ignore)."""
    from transformers import xLSTMConfig

    return xLSTMConfig(vocab_size=vocab_size, hidden_size=hidden, num_hidden_layers=layers, num_heads=heads,
                       ffn_proj_factor=ffn_factor, chunk_size=chunk_size, use_cache=False,
                       tie_word_embeddings=False, autocast_kernel_dtype="float32", pad_token_id=None,
                       bos_token_id=None, eos_token_id=None)


class XLSTMTrainee(nn.Module):
    """``xLSTMForCausalLM`` behind the LM loop's interface."""

    def __init__(self, tokenizer: Tokenizer, hidden: int, layers: int, heads: int = 4, ffn_factor: float = 1.5):
        super().__init__()
        from transformers import xLSTMForCausalLM

        config = xlstm_config(len(tokenizer), hidden, layers, heads, ffn_factor)
        self.model, self.tokenizer = xLSTMForCausalLM(config), tokenizer
        # the card's phrases (seqviz.card_lines, read in both languages); the heads' memory shape is the config's
        self.architecture = f"{layers}-layer xLSTM, hidden {hidden}, {tokenizer.kind}-level"

    def forward(self, x: torch.Tensor, state=None) -> tuple[torch.Tensor, None]:
        return self.model(input_ids=x, use_cache=False).logits, None

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def save_pretrained(self, folder, card: dict) -> Path:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(folder, safe_serialization=True)
        (folder / "vocab.json").write_text(json.dumps(self.tokenizer.to_dict(), ensure_ascii=False) + "\n")
        (folder / "card.json").write_text(json.dumps(card, indent=2, ensure_ascii=False) + "\n")
        return folder
