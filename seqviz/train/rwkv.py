"""A transformers RWKV-4 trained by seqviz's language-model loop, on seqviz's own vocabulary.

``RwkvTrainee`` answers the loop as ``train.mamba.MambaTrainee`` does (``model(x, state) -> (logits, state)``,
``num_parameters``, ``save_pretrained``) and runs each block with ``hf_rwkv``'s equations (the trace's; pinned to
transformers' forward by the parity tests): the WKV as a time loop autograd follows, as transformers' CPU path (which
writes each step into a preallocated output instead). The folder it writes is a plain transformers RWKV (``config.json``,
``model.safetensors``) plus seqviz's ``vocab.json`` and card, so ``seqviz.load`` and transformers both open it. No
state is carried from one window to the next; ``rescale_every`` is 0 (no inference-time halving of the stream).
"""

from __future__ import annotations

import torch

from seqviz.data.tokenizers import Tokenizer
from seqviz.train.mamba import MambaTrainee


class RwkvTrainee(MambaTrainee):
    """``RwkvForCausalLM`` (untied head) behind the LM loop's interface; ``save_pretrained`` is the Mamba's."""

    def __init__(self, tokenizer: Tokenizer, hidden: int, layers: int, intermediate: int | None = None,
                 context: int = 1024):
        torch.nn.Module.__init__(self)
        from transformers import RwkvConfig, RwkvForCausalLM

        config = RwkvConfig(vocab_size=len(tokenizer), hidden_size=hidden, num_hidden_layers=layers,
                            intermediate_size=intermediate or 4 * hidden, context_length=context, rescale_every=0,
                            use_cache=False, tie_word_embeddings=False, bos_token_id=None, eos_token_id=None)
        self.model, self.tokenizer = RwkvForCausalLM(config), tokenizer
        # the card's phrases (seqviz.card_lines, read in every language); the channel mix's width is in config.json
        self.architecture = f"{layers}-layer RWKV-4, hidden {hidden}, {tokenizer.kind}-level"

    def forward(self, x: torch.Tensor, state=None) -> tuple[torch.Tensor, None]:
        from seqviz.hf_rwkv import rwkv_block

        rwkv = self.model.rwkv
        h = rwkv.embeddings(x)
        for block in rwkv.blocks:
            h, _parts, _carry = rwkv_block(block, h)
        return self.model.head(rwkv.ln_out(h)), None
