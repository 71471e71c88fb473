"""A transformers Mamba trained by seqviz's language-model loop, on seqviz's own vocabulary.

``MambaTrainee`` answers the loop as ``RecurrentLM`` does (``model(x, state) -> (logits, state)``,
``num_parameters``, ``save_pretrained``) and runs each block with ``hf_mamba.mamba_block``'s equations
(the trace's; pinned to transformers' forward by the parity tests) through a scan autograd follows:
transformers' own CPU path (no ``mamba_ssm`` kernels) took 20 s a step here. The folder it writes is a
plain transformers Mamba (``config.json``, ``model.safetensors``) plus seqviz's ``vocab.json`` and card,
so ``seqviz.load`` and transformers both open it. No state is carried from one window to the next.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from torch import nn

from seqviz.data.tokenizers import Tokenizer


class MambaTrainee(nn.Module):
    """``MambaForCausalLM`` (untied head: safetensors keeps no shared tensors) behind the LM loop's interface."""

    def __init__(self, tokenizer: Tokenizer, hidden: int, layers: int, state_size: int = 16, expand: int = 2,
                 conv_kernel: int = 4):
        super().__init__()
        from transformers import MambaConfig, MambaForCausalLM

        config = MambaConfig(vocab_size=len(tokenizer), hidden_size=hidden, num_hidden_layers=layers,
                             state_size=state_size, expand=expand, conv_kernel=conv_kernel, use_cache=False,
                             tie_word_embeddings=False, pad_token_id=None, bos_token_id=None, eos_token_id=None)
        self.model, self.tokenizer = MambaForCausalLM(config), tokenizer
        self.architecture = (f"{layers}-layer Mamba, hidden {hidden}, {config.intermediate_size} channels x "
                             f"{state_size} states, {tokenizer.kind}-level")

    def forward(self, x: torch.Tensor, state=None) -> tuple[torch.Tensor, None]:
        from seqviz.hf_mamba import mamba_block
        from seqviz.introspect.mamba_gradients import loop_scan

        backbone = self.model.backbone
        h = backbone.embeddings(x)
        for block in backbone.layers:
            h, _parts = mamba_block(block, h, frozenset(), scan=loop_scan)
        return self.model.lm_head(backbone.norm_f(h)), None

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def save_pretrained(self, folder, card: dict) -> Path:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(folder, safe_serialization=True)
        (folder / "vocab.json").write_text(json.dumps(self.tokenizer.to_dict(), ensure_ascii=False) + "\n")
        (folder / "card.json").write_text(json.dumps(card, indent=2, ensure_ascii=False) + "\n")
        return folder
