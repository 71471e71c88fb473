"""Character and word tokenizers with a JSON vocabulary, padding and unknown-token handling."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


PAD, UNK = "<pad>", "<unk>"
SPECIALS = (PAD, UNK)
PAD_ID, UNK_ID = 0, 1
# Words are runs of letters/apostrophes; every other non-space character is its own token.
WORD_RE = re.compile(r"[A-Za-z']+|[^\sA-Za-z']")


def _special(token: str) -> bool:
    """A bracketed special token such as <pad>, <unk>, <eos>: allowed in a character vocabulary."""
    return token in SPECIALS or (len(token) > 2 and token[0] == "<" and token[-1] == ">")


class TokenizerError(ValueError):
    """A vocabulary file that cannot be used."""


@dataclass
class Encoded:
    """Token ids of one text plus what the tokenizer could not represent."""

    ids: list[int]
    pieces: list[str]  # the text of each token as the user wrote it
    unknown: list[str] = field(default_factory=list)  # distinct pieces mapped to <unk>


class Tokenizer:
    """Maps text to ids over a fixed vocabulary. ``kind`` is "char" or "word"."""

    def __init__(self, kind: str, tokens: list[str]):
        if kind not in ("char", "word"):
            raise TokenizerError("tokenizer kind must be 'char' or 'word'")
        if not isinstance(tokens, list) or not tokens:
            raise TokenizerError("vocabulary must be a non-empty list of tokens")
        if not all(isinstance(t, str) and t for t in tokens):
            raise TokenizerError("vocabulary entries must be non-empty strings")
        if len(set(tokens)) != len(tokens):
            seen: dict[str, int] = {}
            dup = next((seen[t], i) for i, t in enumerate(tokens) if seen.setdefault(t, i) != i)
            raise TokenizerError(f"vocabulary has duplicate entries (tokens {dup[0]} and {dup[1]} are the same)")
        if kind == "char" and any(len(t) != 1 and not _special(t) for t in tokens):
            bad = next(i for i, t in enumerate(tokens) if len(t) != 1 and not _special(t))
            raise TokenizerError(f"a character vocabulary must hold single characters (token {bad} is longer)")
        self.kind = kind
        self.tokens = list(tokens)
        self.index = {t: i for i, t in enumerate(self.tokens)}
        # Vocabularies built by seqviz start with <pad>, <unk>; a user's may have neither.
        self.unk_id = self.index.get(UNK)
        self.special_ids = [self.index[t] for t in SPECIALS if t in self.index]

    def __len__(self) -> int:
        return len(self.tokens)

    @classmethod
    def train(cls, kind: str, text: str, max_size: int | None = None, min_count: int = 1) -> "Tokenizer":
        """Build a vocabulary from text, most frequent first (ties broken alphabetically)."""
        counts = Counter(text) if kind == "char" else Counter(w.lower() for w in WORD_RE.findall(text))
        ranked = sorted((t for t, n in counts.items() if n >= min_count), key=lambda t: (-counts[t], t))
        if max_size is not None:
            ranked = ranked[: max(0, max_size - len(SPECIALS))]
        return cls(kind, list(SPECIALS) + ranked)

    def split(self, text: str) -> list[str]:
        return list(text) if self.kind == "char" else WORD_RE.findall(text)

    def encode(self, text: str) -> Encoded:
        pieces = self.split(text)
        ids, kept, unknown = [], [], []
        for piece in pieces:
            i = self.index.get(piece)
            if i is None and self.kind == "word":
                i = self.index.get(piece.lower())
            if i is None:
                if piece not in unknown:
                    unknown.append(piece)
                if self.unk_id is None:
                    continue  # nothing to map it to: dropped, and reported in `unknown`
                i = self.unk_id
            ids.append(i)
            kept.append(piece)
        return Encoded(ids, kept, unknown)

    def decode(self, ids) -> str:
        pieces = [self.tokens[i] if 0 <= i < len(self.tokens) else UNK for i in list(ids)]
        return "".join(pieces) if self.kind == "char" else " ".join(pieces)

    def to_dict(self) -> dict:
        return {"kind": self.kind, "tokens": self.tokens}

    @classmethod
    def from_dict(cls, data) -> "Tokenizer":
        """From any vocabulary ``parse_vocab`` reads; a kind-less one is "char" when every token is one character."""
        vocab = parse_vocab(data)
        kind = vocab["kind"]
        if kind is None:
            kind = "char" if all(isinstance(t, str) and (len(t) == 1 or t in SPECIALS) for t in vocab["tokens"]) \
                else "word"
        return cls(kind, vocab["tokens"])


VOCAB_FORMAT = 2  # config.json's "format_version": vocab.json is {"kind", "tokens"[, "counts"]}


def parse_vocab(data) -> dict:
    """Any vocabulary seqviz reads, as ``{"kind": str | None, "tokens": [...], "counts": [...] | None}``.

    Accepted: seqviz's ``{"kind": ..., "tokens": [...], "counts": [...]}`` (counts optional), a plain
    JSON list of tokens in id order, a ``{"token": id}`` mapping (ids 0..n-1), and word2vec folders
    written before format 2 (``{"words": [...], "counts": [...]}``).
    """
    if isinstance(data, list):
        return {"kind": None, "tokens": data, "counts": None}
    if not isinstance(data, dict):
        raise TokenizerError("a vocabulary is a JSON list of tokens, or an object with 'tokens'")
    if "tokens" in data or "words" in data:
        tokens = data.get("tokens", data.get("words"))
        if not isinstance(tokens, list):
            raise TokenizerError("'tokens' must be a list of strings in id order")
        kind = data.get("kind", "word" if "words" in data else None)
        return {"kind": kind, "tokens": tokens, "counts": data.get("counts")}
    if data and all(isinstance(v, int) and not isinstance(v, bool) for v in data.values()):
        ids = sorted(data.values())
        if ids != list(range(len(ids))):
            raise TokenizerError("a {token: id} vocabulary must use every id from 0 to its size - 1 once")
        tokens = [""] * len(ids)
        for token, i in data.items():
            tokens[i] = token
        return {"kind": None, "tokens": tokens, "counts": None}
    raise TokenizerError("expected a list of tokens, {'kind': ..., 'tokens': [...]} or {token: id}")


def read_vocab(path) -> dict:
    """``parse_vocab`` of a JSON file (size-capped, UTF-8); TokenizerError naming the problem."""
    import json
    from pathlib import Path

    path = Path(path)
    if path.stat().st_size > 64 << 20:
        raise TokenizerError("vocabulary file is over 64 MiB")
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise TokenizerError("not a UTF-8 JSON file") from None
    return parse_vocab(data)


def pad_batch(sequences: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad id lists into ``ids [batch, time]`` and a boolean ``mask [batch, time]``."""
    import torch  # here, not at the top: reading a vocabulary needs no torch (the app's first view)

    if not sequences:
        raise ValueError("cannot pad an empty batch")
    width = max(len(s) for s in sequences)
    ids = torch.full((len(sequences), width), PAD_ID, dtype=torch.long)
    mask = torch.zeros((len(sequences), width), dtype=torch.bool)
    for row, seq in enumerate(sequences):
        ids[row, : len(seq)] = torch.as_tensor(seq, dtype=torch.long)
        mask[row, : len(seq)] = True
    return ids, mask


def read_inputs(tokenizer, inputs, what: str = "model"):
    """(ids [B, T], mask [B, T], pieces or None) of a text, texts, id lists (right-padded: a causal model's real
    positions never see the pads) or an id tensor, as every language model's ``trace`` reads them; ``tokenizer``
    None takes ids only (``what`` names the model in that refusal)."""
    import torch

    if isinstance(inputs, torch.Tensor):
        ids = inputs.long().reshape(-1, inputs.shape[-1])
        return ids, torch.ones_like(ids, dtype=torch.bool), None
    inputs = [inputs] if isinstance(inputs, str) else list(inputs)
    if not inputs:
        raise ValueError("nothing to trace: the input is empty")
    pieces = None
    if all(isinstance(x, str) for x in inputs):
        if tokenizer is None:
            raise ValueError(f"this {what} folder has no tokenizer; pass token ids instead of text")
        encoded = [tokenizer.encode(x) for x in inputs]
        seqs, pieces = [e.ids for e in encoded], [e.pieces for e in encoded]
    else:
        seqs = [list(map(int, s)) for s in inputs]
        if tokenizer is not None:
            pieces = [[tokenizer.tokens[i] if 0 <= i < len(tokenizer.tokens) else "?" for i in s] for s in seqs]
    if any(len(s) == 0 for s in seqs):
        raise ValueError("nothing to trace: the input has no tokens")
    return (*pad_batch(seqs), pieces)
