"""Configuration dataclasses: the single source of truth for every model's shape."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

CELLS = ("rnn", "gru", "lstm", "mingru", "minlstm")
# Cells whose gates read only x_t (Feng et al. 2024): a linear recurrence run as a parallel scan.
MINIMAL_CELLS = ("mingru", "minlstm")
MAX_GRADIENT_TOKENS = 400  # the exact gradient matrix G has T^2 / 2 entries, each a norm over H units
TOKENIZERS = ("char", "word")


class ConfigError(ValueError):
    """A configuration that cannot describe a model."""


class JsonConfig:
    """config.json round trip shared by every config dataclass (``model_type`` + fields)."""

    model_type = ""

    def to_dict(self) -> dict:
        return {"model_type": self.model_type, **dataclasses.asdict(self)}

    @classmethod
    def from_dict(cls, data: dict):
        if not isinstance(data, dict):
            raise ConfigError("config must be a JSON object")
        data = dict(data)
        model_type = data.pop("model_type", cls.model_type)
        if model_type != cls.model_type:
            raise ConfigError(f"model_type is not {cls.model_type!r}")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:  # named by count, not by name: config.json may not be the visitor's own file
            raise ConfigError(f"{len(unknown)} unknown config field(s); a {cls.model_type} config has "
                              f"{', '.join(sorted(known))}")
        return cls(**data)


@dataclass(frozen=True)
class LMConfig(JsonConfig):
    """A recurrent language model: embedding -> stacked RNN/GRU/LSTM/minGRU/minLSTM -> linear head."""

    cell: str = "lstm"  # recurrent cell: "rnn" (tanh Elman), "gru", "lstm", "mingru" or "minlstm" (Feng et al. 2024)
    n_layers: int = 2  # stacked recurrent layers; layer i reads layer i-1's h
    d_embed: int = 64  # size of the token embedding fed to layer 0
    d_hidden: int = 256  # units per layer (h, and c for the LSTM)
    dropout: float = 0.0  # dropout between layers and before the head (training only)
    tokenizer: str = "char"  # "char" (one token per character) or "word"
    vocab_size: int = 0  # number of token ids, special tokens included

    model_type = "recurrent_lm"  # written to config.json; dispatches loading

    def __post_init__(self) -> None:
        if self.cell not in CELLS:
            raise ConfigError(f"cell must be one of {', '.join(CELLS)}, got {self.cell!r}")
        if self.tokenizer not in TOKENIZERS:
            raise ConfigError(f"tokenizer must be 'char' or 'word', got {self.tokenizer!r}")
        for name in ("n_layers", "d_embed", "d_hidden", "vocab_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
        if self.n_layers > 8 or self.d_hidden > 8192 or self.d_embed > 8192:
            raise ConfigError("model too large for seqviz (n_layers <= 8, sizes <= 8192)")
        if self.vocab_size > 2_000_000:
            raise ConfigError(f"vocab_size {self.vocab_size} is implausibly large")
        if not isinstance(self.dropout, (int, float)) or not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"dropout must be in [0, 1), got {self.dropout!r}")

