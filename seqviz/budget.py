"""How much one view may ask of a model: tokens, corpus samples and traces sized to the model's size.

The shipped models hold 0.2-1 M parameters; a checkpoint of real size (mamba-130m: 130 M, 24 blocks, 1,536 channels)
costs a hundred times more per token, and its trace of every layer is 40 kB a token (1.1 GB at 1,000 tokens). So a
view computes on a text of at most ``tokens_for(model)`` tokens and a corpus sample of at most that many, both
``WORK`` parameter-tokens (about 1.5 s of one CPU thread; the shipped models keep their 1,000 tokens and 16 x 500
characters), and keeps a model's whole trace of a text only while it stays under ``WHOLE_TRACE`` bytes (every
shipped model at 1,000 tokens): beyond, it asks for the one layer it draws (``layer_names``). Importing this module
costs neither torch nor transformers: a page sizes its text before the model is loaded (``parameters``).
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

from seqviz.families import of

WORK = 2.5e10  # parameter-tokens one view computes at most: 190 tokens of a 130 M model, every token of a small one
PAIR_WORK = 6.5e11  # parameter-token pairs of one gradient matrix: 100 tokens of a 130 M model, 400 of a small one
WHOLE_TRACE = 64 << 20  # bytes of one text's trace kept with every layer; beyond, one layer at a time
FEWEST_TOKENS = 64  # a text or a corpus sample is never sized below this (a statistic needs tokens)
FLOAT = 4  # bytes of a traced value (float32)


def parameters(model) -> int:
    """Parameters of a loaded model, or of a checkpoint folder read from its safetensors headers (no weights read,
    no torch): what a page knows before it loads the model. 0 where neither says (then nothing is sized down)."""
    if isinstance(model, str | Path):
        return _folder_parameters(Path(model))
    if hasattr(model, "num_parameters"):
        return int(model.num_parameters())
    return sum(p.numel() for p in model.parameters()) if hasattr(model, "parameters") else 0


def _folder_parameters(folder: Path) -> int:
    total = 0
    for file in sorted(folder.glob("*.safetensors")) if folder.is_dir() else ():
        try:
            with file.open("rb") as f:
                size = struct.unpack("<Q", f.read(8))[0]
                header = json.loads(f.read(min(size, 100 << 20)))
        except (OSError, ValueError, struct.error):
            return 0  # a damaged file: loading it says what is wrong
        for key, entry in header.items():
            if key != "__metadata__" and isinstance(entry, dict):
                count = 1
                for n in entry.get("shape", ()):
                    count *= int(n)
                total += count
    return total


def tokens_for(model, most: int, rows: int = 1) -> int:
    """Tokens of a text (or a corpus sample) a view reads of ``model`` (a loaded model or a folder) ``rows`` times
    (an edit and its random controls): ``most``, unless the model is so large that ``WORK`` buys fewer (never fewer
    than ``FEWEST_TOKENS``)."""
    n = parameters(model)
    return most if n <= 0 else int(max(min(most, FEWEST_TOKENS), min(most, WORK // (n * max(1, rows)))))


def pairs_for(model, most: int) -> int:
    """Tokens of a text a view reads of ``model`` where its work grows with the square of their number (the gradient
    matrix G[t, k], a backward pass from every loss to every earlier step): ``most``, or the n whose n² / 2
    parameter-pairs stay within ``PAIR_WORK`` (100 tokens of a 130 M model), never fewer than ``FEWEST_TOKENS``."""
    n = parameters(model)
    return most if n <= 0 else int(max(min(most, FEWEST_TOKENS), min(most, (2 * PAIR_WORK / n) ** 0.5)))


def widest(config) -> int:
    """The widest state a layer of the model traces: its hidden size, or a Mamba's channels."""
    return max(int(getattr(config, "d_hidden", 0) or 0), int(getattr(config, "channels", 0) or 0))


def default_leaves(model) -> list[str]:
    """The leaves of one layer a trace holds with ``names=None`` (the family's, less what it traces on request)."""
    family = of(model)
    return [leaf for leaf in family.leaves if leaf not in family.on_request]


def trace_bytes(model, tokens: int, layers: int | None = None, head: bool = True) -> int:
    """About how many bytes a trace of ``tokens`` tokens holds: ``layers`` layers (None: every one) of the default
    leaves, each at the widest state's width, and the logits."""
    cfg = model.config
    layers = cfg.n_layers if layers is None else layers
    per_token = layers * len(default_leaves(model)) * widest(cfg) + (cfg.vocab_size if head else 0)
    return int(tokens) * per_token * FLOAT


def whole(model, tokens: int) -> bool:
    """Whether one text's trace of every layer stays under ``WHOLE_TRACE`` (then it is computed once, and every
    layer, signal and position a view shows is a slice of it)."""
    return trace_bytes(model, tokens) <= WHOLE_TRACE


def layer_names(model, layer: int, head: bool = False) -> list[str]:
    """Names of a trace of one layer (its default leaves), with tokens and mask, and the head's when asked."""
    names = ["tokens", "mask", *(f"layers.{int(layer)}.{leaf}" for leaf in default_leaves(model))]
    return names + (["logits", "loss", "loss_mask"] if head else [])
