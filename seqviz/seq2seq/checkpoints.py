"""Seq2seq checkpoint folders: the readers and writers ``Seq2Seq``'s save and load are made of, and held-out pairs.

    config.json        {"model_type": "seq2seq", ...Seq2SeqConfig}
    model.safetensors  the weights (float32)
    src_vocab.json     {"kind": "unit"|"char", "tokens": [...]}
    tgt_vocab.json     the same for the target side
    card.json          how it was trained; BLEU by source length; alignment hit rate
    heldout.json       the generated test pairs the card's numbers were measured on
    snapshots/         optional step-<n>.safetensors (float16) from earlier in training

Loading goes through the same guarded readers as the language models (never unpickles);
``Seq2Seq.from_pretrained`` / ``save_pretrained`` (``seqviz.seq2seq.model``) use this module, which
imports no model.
"""

from __future__ import annotations

import json
from pathlib import Path

from seqviz.files import CheckpointError, read_config, read_json
from seqviz.data.tokenizers import TokenizerError
from seqviz.seq2seq.config import Seq2SeqConfig
from seqviz.seq2seq.data import Pair
from seqviz.seq2seq.vocab import Vocab

FILES = ("config.json", "model.safetensors", "src_vocab.json", "tgt_vocab.json", "card.json")


def read_parts(folder: Path) -> tuple[Seq2SeqConfig, Vocab, Vocab]:
    """The config and both vocabularies of a folder, checked against each other (``Seq2Seq._from_pretrained``)."""
    config = read_config(folder / "config.json", Seq2SeqConfig)
    src = _vocab(folder / "src_vocab.json", config.src_vocab_size, "source")
    tgt = _vocab(folder / "tgt_vocab.json", config.tgt_vocab_size, "target")
    return config, src, tgt


def write_vocabs(folder: Path, src: Vocab | None, tgt: Vocab | None) -> None:
    """src_vocab.json and tgt_vocab.json (``Seq2Seq._save_pretrained``)."""
    if src is None or tgt is None:
        raise ValueError("a seq2seq model needs both vocabularies to be saved")
    for name, vocab in (("src_vocab.json", src), ("tgt_vocab.json", tgt)):
        (folder / name).write_text(json.dumps(vocab.to_dict(), ensure_ascii=False) + "\n")


def _vocab(path: Path, size: int, side: str) -> Vocab:
    try:
        vocab = Vocab.from_dict(read_json(path))
    except TokenizerError as e:
        raise CheckpointError(path, f"invalid vocabulary: {e}") from None
    if len(vocab) != size:
        raise CheckpointError(path, f"{side} vocabulary has {len(vocab)} tokens but the config says {size}")
    return vocab


def save_heldout(pairs: list[Pair], folder, task: str) -> Path:
    """The test pairs beside the weights, so BLEU by length can be recomputed exactly and fast."""
    path = Path(folder) / "heldout.json"
    rows = [{"src": list(p.src), "tgt": list(p.tgt), "align": list(p.align)} for p in pairs]
    path.write_text(json.dumps({"task": task, "pairs": rows}, ensure_ascii=False, separators=(",", ":")) + "\n")
    return path


def load_heldout(folder) -> list[Pair]:
    """The folder's held-out pairs ([] when it has none); CheckpointError if the file is malformed."""
    path = Path(folder) / "heldout.json"
    if not path.exists():
        return []
    rows = read_json(path).get("pairs")
    try:
        pairs = [Pair(tuple(r["src"]), tuple(r["tgt"]), tuple(int(a) for a in r["align"])) for r in rows]
    except (TypeError, KeyError, ValueError):
        raise CheckpointError(path, "expected {'pairs': [{'src': [...], 'tgt': [...], 'align': [...]}]}") from None
    if any(len(p.tgt) != len(p.align) or not all(isinstance(t, str) for t in p.src + p.tgt) for p in pairs):
        raise CheckpointError(path, "every pair needs string tokens and one alignment per target token")
    return pairs
