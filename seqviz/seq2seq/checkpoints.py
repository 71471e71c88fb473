"""Seq2seq checkpoint folders: config, safetensors weights, both vocabularies, the card.

    config.json        {"model_type": "seq2seq", ...Seq2SeqConfig}
    model.safetensors  the weights (float32)
    src_vocab.json     {"kind": "unit"|"char", "tokens": [...]}
    tgt_vocab.json     the same for the target side
    card.json          how it was trained; BLEU by source length; alignment hit rate
    heldout.json       the generated test pairs the card's numbers were measured on
    snapshots/         optional step-<n>.safetensors (float16) from earlier in training

Loading goes through the same guarded readers as the language models (never unpickles);
``seqviz.load`` reaches it through ``Seq2Seq.from_pretrained`` (``seqviz.registry``).
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from seqviz.checkpoints import CheckpointError, fill_from_folder, read_config, read_json, save_weights, write_config
from seqviz.data.tokenizers import TokenizerError
from seqviz.seq2seq.config import Seq2SeqConfig
from seqviz.seq2seq.data import Pair
from seqviz.seq2seq.model import Seq2Seq
from seqviz.seq2seq.vocab import Vocab

FILES = ("config.json", "model.safetensors", "src_vocab.json", "tgt_vocab.json", "card.json")


def save_seq2seq(model: Seq2Seq, folder, card: dict | None = None) -> Path:
    """Write a checkpoint folder; the card defaults to ``model.card``."""
    folder = Path(folder)
    if model.src_vocab is None or model.tgt_vocab is None:
        raise ValueError("a seq2seq model needs both vocabularies to be saved")
    folder.mkdir(parents=True, exist_ok=True)
    write_config(folder, model.config)
    for name, vocab in (("src_vocab.json", model.src_vocab), ("tgt_vocab.json", model.tgt_vocab)):
        (folder / name).write_text(json.dumps(vocab.to_dict(), ensure_ascii=False) + "\n")
    save_weights(model, folder / "model.safetensors")
    card = dict(card if card is not None else model.card)
    card.setdefault("parameters", model.num_parameters())
    (folder / "card.json").write_text(json.dumps(card, indent=2, ensure_ascii=False) + "\n")
    return folder


def _vocab(path: Path, size: int, side: str) -> Vocab:
    try:
        vocab = Vocab.from_dict(read_json(path))
    except TokenizerError as e:
        raise CheckpointError(path, f"invalid vocabulary: {e}") from None
    if len(vocab) != size:
        raise CheckpointError(path, f"{side} vocabulary has {len(vocab)} tokens but the config says {size}")
    return vocab


def load_seq2seq(path, snapshot: int | None = None) -> Seq2Seq:
    """A seq2seq folder on the CPU, eval mode, no gradients, with its card (``seqviz.load`` opens any)."""
    folder = Path(path)
    if folder.is_file():
        raise CheckpointError(folder, "a seq2seq checkpoint is a folder (config.json, model.safetensors, "
                              "src_vocab.json, tgt_vocab.json)")
    config = read_config(folder / "config.json", Seq2SeqConfig)
    src = _vocab(folder / "src_vocab.json", config.src_vocab_size, "source")
    tgt = _vocab(folder / "tgt_vocab.json", config.tgt_vocab_size, "target")
    with torch.device("meta"):  # no memory until the weights are known to fit the config
        model = Seq2Seq(config, src, tgt)
    return fill_from_folder(model, folder, snapshot)


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
