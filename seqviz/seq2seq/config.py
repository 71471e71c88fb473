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


OUTPUT_PIECES = ("hidden", "context", "embedding")
DECODER_INPUTS = ("embedding", "relu(embedding)")
SCORES = ("additive", "general", "dot")


@dataclass(frozen=True)
class PlainSeq2SeqConfig:
    """A plain PyTorch encoder-decoder as its state dict's shapes (and the spec) say (``seqviz.seq2seq.plain``).

    Every step reads the previous decoder state s_{t-1} (attention's query), then runs the decoder's
    recurrent layers once on ``decoder_input`` (with the context c_t appended when ``feed_context``) and
    the output layer on the ``output`` pieces: the PyTorch tutorial's and bentrevett's equations alike.
    """

    layout: str  # which known layout the keys matched ("pytorch-tutorial", "bentrevett-3", ...), or "custom"
    cell: str  # "gru" or "lstm", both halves
    enc_layers: int  # stacked encoder layers
    dec_layers: int  # stacked decoder layers
    bidirectional: bool  # encoder reads both ways; annotations h_j = [fwd_j; bwd_j]
    d_src_embed: int  # source embedding size
    d_tgt_embed: int  # target embedding size
    d_encoder: int  # encoder units per direction
    d_decoder: int  # decoder state size
    score: str | None  # attention: "additive" (Bahdanau), "general" or "dot" (Luong); None: no attention
    d_attention: int  # hidden size of additive attention (0 otherwise)
    bridge: bool  # s_0 = tanh(W [fwd_n; bwd_n] + b) (bentrevett 3); False: the encoder's final states
    feed_context: bool  # the decoder's recurrent input is [decoder_input; c_t]
    decoder_input: str  # "embedding" or "relu(embedding)" (the tutorial's DecoderRNN)
    output: tuple  # what the output layer reads, in order: some of "hidden", "context", "embedding"
    src_vocab_size: int
    tgt_vocab_size: int
    source_bos: bool = False  # the start token is put before every source sentence (bentrevett)
    source_eos: bool = True  # the end token is put after every source sentence (the tutorial, bentrevett)
    max_target_len: int = 120  # free-running decoding stops here when no end token comes

    model_type = "seq2seq"

    def __post_init__(self) -> None:
        if self.cell not in SEQ2SEQ_CELLS:
            raise ConfigError(f"cell must be 'gru' or 'lstm', got {self.cell!r}")
        if self.decoder_input not in DECODER_INPUTS:
            raise ConfigError('decoder_input must be "embedding" or "relu(embedding)"')
        if self.score not in (None, *SCORES):
            raise ConfigError('the attention must be "additive", "general" or "dot"')
        if not self.output or any(p not in OUTPUT_PIECES for p in self.output) or len(set(self.output)) != len(
                self.output):
            raise ConfigError('output must list some of "hidden", "context", "embedding", each once')
        if not isinstance(self.max_target_len, int) or not 1 <= self.max_target_len <= 1000:
            raise ConfigError("max_target_len must be an integer in 1..1000")
        if self.tgt_vocab_size < 2:
            raise ConfigError("the target vocabulary needs at least a start and an end token")

    @property
    def attention(self) -> bool:
        return self.score is not None

    @property
    def d_annotation(self) -> int:
        return self.d_encoder * (2 if self.bidirectional else 1)

    def to_dict(self) -> dict:
        from dataclasses import asdict

        return {**asdict(self), "output": list(self.output)}

    def describe(self) -> str:
        cell = self.cell.upper()
        enc = (f"{self.enc_layers}-layer {'bi' if self.bidirectional else 'uni'}directional {cell} encoder "
               f"{self.d_encoder}")
        att = {"additive": f"additive attention {self.d_attention}", "general": "Luong general attention",
               "dot": "Luong dot attention", None: "no attention"}[self.score]
        start = "a bridge tanh(W [fwd; bwd])" if self.bridge else "the encoder's final states"
        return (f"{self.layout}: {enc}, {self.dec_layers}-layer {cell} decoder {self.d_decoder} starting from "
                f"{start}, {att}, decoder input {self.decoder_input}{' + context' if self.feed_context else ''}, "
                f"output layer on [{'; '.join(self.output)}], embeddings {self.d_src_embed}/{self.d_tgt_embed}")


def read_info(folder):
    """(Seq2SeqConfig, None) of a seqviz encoder-decoder folder from config.json, without torch (its two
    vocabularies come with the model)."""
    from seqviz.files import read_json

    config = {k: v for k, v in read_json(folder / "config.json").items() if k != "format_version"}
    return Seq2SeqConfig.from_dict(config), None
