"""A user's own held-out pairs: a TSV file (``source<TAB>target``, one pair a line), read and tokenised.

The views that measure over pairs (teacher-forced vs free-running error curves, BLEU against length,
greedy vs beam vs sampling) take these when a model keeps no ``heldout.json`` of its own, as a plain
PyTorch encoder-decoder never does. ``read_pairs`` checks the text (UTF-8; every non-blank line exactly
one tab; neither side empty) and names the line of the first problem, never its content: the file may
be any file the server can open. ``tokenize_pairs`` reads each side with the model's own tokenizers,
the same way a typed sentence and a typed reference are read, and says how much of it the
vocabularies do not know.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from seqviz.files import CheckpointError
from seqviz.seq2seq.data import Pair
from seqviz.seq2seq.vocab import UNK_ID

MAX_PAIRS_BYTES = 32 << 20  # a held-out set of 200,000 short pairs; larger files are refused before reading
DEFAULT_CAP = 1000  # pairs used at most, unless told otherwise: what the held-out study decodes (STUDY_PAIRS)


@dataclass(frozen=True)
class PairsText:
    """The pairs of one file as written, with what was left out of them."""

    name: str  # the file's name, for messages
    pairs: tuple[tuple[str, str], ...]  # (source, target) as written, in file order, at most the cap
    lines: int  # lines in the file, blank ones included
    blank: int  # blank lines skipped
    capped: int  # pairs after the first ``cap``, left out


def read_pairs(data: bytes | str, name: str = "pairs.tsv", cap: int | None = DEFAULT_CAP) -> PairsText:
    """The ``source<TAB>target`` pairs of ``data``; CheckpointError naming the line of the first malformed one,
    or when no pair is left. Blank lines are skipped; ``cap`` (None: all) keeps the first pairs only."""
    if cap is not None and int(cap) < 1:
        raise CheckpointError(name, f"the cap on pairs must be at least 1, got {cap}")
    if len(data) > MAX_PAIRS_BYTES:  # an upload: a file on disk is refused unread (``file_bytes``)
        raise CheckpointError(name, f"is {len(data):,} bytes, over the {MAX_PAIRS_BYTES >> 20} MiB limit for a pairs file")
    text = _decode(data, name) if isinstance(data, bytes) else data
    lines = text.removeprefix("\ufeff").splitlines()
    pairs, blank = [], 0
    for number, line in enumerate(lines, 1):
        if not line.strip():
            blank += 1
            continue
        fields = line.split("\t")
        if len(fields) != 2:
            found = "no tab" if len(fields) == 1 else f"{len(fields) - 1} tabs ({len(fields)} fields)"
            raise CheckpointError(name, f"line {number}: expected source<TAB>target, found {found}")
        source, target = (f.strip() for f in fields)
        for side, value in (("source", source), ("target", target)):
            if not value:
                raise CheckpointError(name, f"line {number}: the {side} is empty")
        pairs.append((source, target))
    if not pairs:
        raise CheckpointError(name, "no pair left: the file has no line source<TAB>target"
                              + (f" ({blank} blank lines)" if blank else ""))
    kept = pairs if cap is None else pairs[: int(cap)]
    return PairsText(name, tuple(kept), len(lines), blank, len(pairs) - len(kept))


def _decode(data: bytes, name: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise CheckpointError(name, f"line {line}: not UTF-8 text (byte {e.start:,}); save the file as UTF-8") from None


def file_bytes(path) -> bytes:
    """A pairs file's bytes, refused unread when it is not a file or over ``MAX_PAIRS_BYTES``."""
    path = Path(path)
    try:
        if not path.is_file():
            raise CheckpointError(path, "no such file" if not path.exists() else "is not a file")
        size = path.stat().st_size
    except OSError as e:  # a name too long for the file system, a folder it may not read ...
        raise CheckpointError(path, f"cannot be opened ({e.strerror or type(e).__name__})") from None
    if size > MAX_PAIRS_BYTES:
        raise CheckpointError(path, f"is {size:,} bytes, over the {MAX_PAIRS_BYTES >> 20} MiB limit for a pairs file")
    return path.read_bytes()


def typed_file(typed: str) -> tuple[str, bytes]:
    """(name, bytes) of the pairs file whose path a visitor typed: only inside the server's allowed folders
    (``seqviz.files.check_allowed``); ValueError (a CheckpointError, or the system's reason) otherwise."""
    from seqviz.files import check_allowed

    try:  # check_allowed resolves the path: an OSError there is a name the system refuses
        path = check_allowed(typed.strip())
    except OSError as e:
        raise ValueError(e.strerror or type(e).__name__) from None
    return path.name, file_bytes(path)


def read_pairs_file(path, cap: int | None = DEFAULT_CAP) -> PairsText:
    """``read_pairs`` of a file (``file_bytes``)."""
    return read_pairs(file_bytes(path), Path(path).name, cap)


# ------------------------------------------------------------------ in the model's own tokens
@dataclass(frozen=True)
class TokenizedPairs:
    """Pairs in the model's tokens, with how much of them its vocabularies know."""

    pairs: tuple[Pair, ...]  # the pairs the model can read, no alignment (``align`` all -1)
    kept: tuple[int, ...]  # their indices among the pairs given
    dropped: int  # pairs left out: a token outside a vocabulary that has no unknown token
    source_oov: float  # share of the source tokens the source vocabulary does not know (all pairs given)
    target_oov: float  # the same for the target side
    unknown: tuple[str, ...]  # the most frequent unknown tokens, both sides, most frequent first


def target_tokens(vocab, text: str) -> list[str]:
    """A reference as target tokens: characters for a character vocabulary (spaces only where it has a space
    token), else the words between spaces."""
    if vocab.kind == "char":
        return list(text if " " in vocab.index else text.replace(" ", ""))
    return text.split()


def _known(vocab, piece: str) -> str | None:
    return vocab.tokens[vocab.index[piece]] if piece in vocab.index else \
        vocab.tokens[vocab.index[piece.lower()]] if piece.lower() in vocab.index else None


def tokenize_pairs(model, pairs) -> TokenizedPairs:
    """``pairs`` ((source, target) texts) in the model's tokens: the source as a typed sentence is read
    (``src_vocab.encode``), the target as a typed reference (``target_tokens``). A pair with a token that
    a vocabulary without an unknown token cannot hold is left out (and counted); ValueError if none is left."""
    src_v, tgt_v = model.src_vocab, model.tgt_vocab
    if src_v is None or tgt_v is None:
        raise ValueError("this model has no vocabularies to read pairs with")
    no_unk = [getattr(v, "user_ids", [0, 0])[UNK_ID] is None for v in (src_v, tgt_v)]
    out, kept, unknown, counts = [], [], Counter(), [[0, 0], [0, 0]]  # [unknown, all] per side
    for i, (source, target) in enumerate(pairs):
        enc = src_v.encode(source)
        src = tuple(p if t == UNK_ID else src_v.tokens[t] for t, p in zip(enc.ids, enc.pieces))
        src_unknown = [p for t, p in zip(enc.ids, enc.pieces) if t == UNK_ID]
        tgt_pieces = target_tokens(tgt_v, target)
        tgt = tuple(_known(tgt_v, p) or p for p in tgt_pieces)
        tgt_unknown = [p for p in tgt_pieces if _known(tgt_v, p) is None]
        for side, (bad, tokens) in enumerate(((src_unknown, src), (tgt_unknown, tgt))):
            counts[side][0] += len(bad)
            counts[side][1] += len(tokens)
        unknown.update(src_unknown + tgt_unknown)
        if not src or not tgt or (src_unknown and no_unk[0]) or (tgt_unknown and no_unk[1]):
            continue
        out.append(Pair(src, tgt, (-1,) * len(tgt)))
        kept.append(i)
    share = [bad / total if total else 0.0 for bad, total in counts]
    if not out:
        raise ValueError(f"none of the {len(pairs):,} pairs can be read by this model: each has a token outside a "
                         "vocabulary that has no unknown token (" + ", ".join(map(repr, [u for u, _n in
                                                                                        unknown.most_common(5)])) + ")")
    return TokenizedPairs(tuple(out), tuple(kept), len(pairs) - len(out), share[0], share[1],
                          tuple(u for u, _n in unknown.most_common(8)))
