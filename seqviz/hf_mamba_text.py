"""What lets a transformers Mamba stand where a recurrent LM stands: its shape and its tokenizer.

The recurrent-LM pages and views read ``model.config`` (``n_layers``, ``d_hidden``, ``cell`` ...),
``model.tokenizer`` (``encode`` -> ids, pieces, unknown; ``tokens``; ``decode``) and ``model.trace``.
``MambaShape`` gives a Mamba's sizes under LMConfig's names (cell "mamba"); ``TextTokenizer`` wraps
a transformers tokenizer in seqviz's ``Tokenizer`` interface (pieces are the user's own text,
cut at the tokens' offsets, so they join back into it). ``hf_mamba.sample`` continues a text one token at a
time with each block's recurrent state.
"""

from __future__ import annotations

from dataclasses import dataclass

from seqviz.data.tokenizers import Encoded


@dataclass(frozen=True)
class MambaShape:
    """A Mamba's sizes under the recurrent LM's config names (what the pages read of ``model.config``)."""

    n_layers: int  # blocks; layers.{i}.h is the residual stream after block i
    d_embed: int  # the embedding's width (= the residual stream's)
    d_hidden: int  # width of layers.{i}.h: the residual stream, hidden_size
    vocab_size: int  # rows of the embedding
    channels: int  # D, intermediate_size: the scan's channels (dt, z, decay per channel)
    states: int  # N, state_size: states per channel
    heads: int = 0  # Mamba-2: its heads (one A, one Δ per head); 0 for a Mamba (one A per channel and state)
    cell: str = "mamba"  # not one of seqviz's cells: the signal table has its own row
    tokenizer: str = "subword"  # a transformers tokenizer's pieces (neither one character nor one word)
    dropout: float = 0.0

    @classmethod
    def of(cls, hf_config) -> "MambaShape":
        channels = getattr(hf_config, "intermediate_size", None) or int(hf_config.expand * hf_config.hidden_size)  # Mamba-2
        heads = hf_config.num_heads if hf_config.model_type == "mamba2" else 0
        return cls(hf_config.num_hidden_layers, hf_config.hidden_size, hf_config.hidden_size, hf_config.vocab_size,
                   channels, hf_config.state_size, heads)

    @property
    def family(self) -> str:
        """Its entry in the family table (``seqviz.families``): "mamba2" where it has heads, else "mamba"."""
        return "mamba2" if self.heads else "mamba"


def read_shape(folder) -> MambaShape:
    """A Mamba folder's ``MambaShape`` from its config.json alone (no torch, no transformers)."""
    from types import SimpleNamespace

    from seqviz.files import read_json

    config = read_json(folder / "config.json")
    return MambaShape.of(SimpleNamespace(**{"intermediate_size": None, "num_heads": 0, "expand": 2, **config}))


class TextTokenizer:
    """A transformers tokenizer behind seqviz's ``Tokenizer`` interface (kind "subword")."""

    kind = "subword"

    def __init__(self, hf, vocab_size: int):
        self.hf, self.vocab_size = hf, int(vocab_size)
        self.unk_id = hf.unk_token_id
        self.special_ids = sorted({i for i in hf.all_special_ids if i is not None and i < self.vocab_size})
        known = hf.convert_ids_to_tokens(list(range(min(len(hf), self.vocab_size))))
        self.tokens = [t or f"<{i}>" for i, t in enumerate(known)] + \
            [f"<{i}>" for i in range(len(known), self.vocab_size)]  # ids the model has and the tokenizer not

    def __len__(self) -> int:
        return self.vocab_size

    def encode(self, text: str) -> Encoded:
        """Ids, and each token's piece of ``text`` (from its start to the next token's start), unknowns named."""
        enc = self.hf(text, add_special_tokens=False, return_offsets_mapping=True)
        ids, starts = list(enc["input_ids"]), [s for s, _e in enc["offset_mapping"]]
        starts = [0] + starts[1:] if starts else []
        pieces = [text[a:b] for a, b in zip(starts, starts[1:] + [len(text)])]
        kept, kept_pieces, unknown = [], [], []
        for i, piece in zip(ids, pieces):
            if i == self.unk_id or i >= self.vocab_size:
                if piece not in unknown:
                    unknown.append(piece)
                if self.unk_id is None or i >= self.vocab_size:
                    continue
            kept.append(i)
            kept_pieces.append(piece)
        return Encoded(kept, kept_pieces, unknown)

    def decode(self, ids) -> str:
        return self.hf.decode(list(ids), skip_special_tokens=True)
