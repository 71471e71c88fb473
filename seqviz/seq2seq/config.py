"""Seq2SeqConfig: the shape of an encoder-decoder, validated when it is built."""

from __future__ import annotations

from dataclasses import dataclass

from seqviz.config import ConfigError, JsonConfig

SEQ2SEQ_CELLS = ("gru", "lstm")


@dataclass(frozen=True)
class Seq2SeqConfig(JsonConfig):
    """An RNN encoder-decoder, with Bahdanau attention (2015) or without (Cho et al. 2014).

    Without attention the decoder sees one fixed vector, the encoder's final state,
    at every step: the "RNNencdec" baseline of Bahdanau et al. 2015, fig. 2.
    """

    cell: str = "gru"  # recurrent cell of encoder and decoder: "gru" or "lstm"
    bidirectional: bool = True  # encoder reads the source both ways; annotations h_j = [fwd_j; bwd_j]
    attention: bool = True  # Bahdanau additive attention; False = fixed context (the bottleneck)
    d_embed: int = 48  # source and target embedding size
    d_encoder: int = 64  # encoder units per direction (h_j has 2x this when bidirectional)
    d_decoder: int = 128  # decoder state size (s_t)
    d_attention: int = 32  # size of the additive-attention hidden layer (W_s s, W_h h_j live here)
    dropout: float = 0.0  # dropout on embeddings and decoder outputs (training only)
    src_vocab_size: int = 0  # source token ids, special tokens included
    tgt_vocab_size: int = 0  # target token ids, special tokens included (<bos>, <eos> among them)
    max_target_len: int = 120  # greedy decoding stops here when no <eos> comes

    model_type = "seq2seq"  # written to config.json; dispatches loading

    def __post_init__(self) -> None:
        if self.cell not in SEQ2SEQ_CELLS:
            raise ConfigError(f"cell must be 'gru' or 'lstm', got {self.cell!r}")
        for name in ("bidirectional", "attention"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"{name} must be true or false, got {getattr(self, name)!r}")
        for name in ("d_embed", "d_encoder", "d_decoder", "d_attention", "src_vocab_size",
                     "tgt_vocab_size", "max_target_len"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
        if max(self.d_embed, self.d_encoder, self.d_decoder, self.d_attention) > 4096:
            raise ConfigError("model too large for seqviz (sizes <= 4096)")
        if max(self.src_vocab_size, self.tgt_vocab_size) > 1_000_000:
            raise ConfigError("vocabulary size is implausibly large (> 1,000,000)")
        if self.tgt_vocab_size < 4:
            raise ConfigError("the target vocabulary needs at least <pad>, <unk>, <bos>, <eos>")
        if self.max_target_len > 1000:
            raise ConfigError(f"max_target_len must be <= 1000, got {self.max_target_len}")
        if not isinstance(self.dropout, (int, float)) or isinstance(self.dropout, bool) \
                or not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"dropout must be in [0, 1), got {self.dropout!r}")

    @property
    def d_annotation(self) -> int:
        """Size of one encoder annotation h_j (and of the context vector c_t)."""
        return self.d_encoder * (2 if self.bidirectional else 1)

    def describe(self) -> str:
        enc = f"{'bi' if self.bidirectional else 'uni'}directional {self.cell.upper()} encoder {self.d_encoder}"
        att = f"Bahdanau attention {self.d_attention}" if self.attention else "no attention (fixed context)"
        return f"{enc}, {self.cell.upper()} decoder {self.d_decoder}, {att}, embedding {self.d_embed}"
