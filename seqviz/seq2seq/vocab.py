"""Source and target vocabularies of a seq2seq model: grammar units or characters, as JSON.

Kind ``"unit"`` holds whole grammar units (公园, 吃, yesterday). Text with spaces is
split on them; a run of Chinese without spaces is segmented by forward maximum
matching against the vocabulary (the classic dictionary segmenter), so 我昨天在公园
and 我 昨天 在 公园 give the same tokens. Kind ``"char"`` (the date task) has one
token per character. Whatever the vocabulary cannot represent becomes ``<unk>`` and
is listed in ``Encoded.unknown``: shown to the user, never silently dropped.
"""

from __future__ import annotations

from collections import Counter

from seqviz.data.tokenizers import Encoded, TokenizerError

PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<bos>", "<eos>"
SPECIALS = (PAD, UNK, BOS, EOS)
PAD_ID, UNK_ID, BOS_ID, EOS_ID = 0, 1, 2, 3
NEVER_EMITTED = (PAD_ID, BOS_ID)  # ids free-running decoding may not choose
KINDS = ("unit", "char")


class Vocab:
    """Token <-> id for one side of a translation task; ids 0-3 are the specials."""

    def __init__(self, kind: str, tokens: list[str]):
        if kind not in KINDS:
            raise TokenizerError("vocabulary kind must be 'unit' or 'char'")
        if not isinstance(tokens, list) or not all(isinstance(t, str) and t for t in tokens):
            raise TokenizerError("vocabulary must be a list of non-empty strings")
        if tuple(tokens[:4]) != SPECIALS:
            raise TokenizerError(f"a seq2seq vocabulary starts with {', '.join(SPECIALS)}")
        if len(set(tokens)) != len(tokens):
            dup = [t for t, n in Counter(tokens).items() if n > 1][:5]
            raise TokenizerError(f"vocabulary has duplicate entries: {dup}")
        if kind == "char" and any(len(t) != 1 for t in tokens[4:]):
            raise TokenizerError("a character vocabulary must hold single characters")
        self.kind, self.tokens = kind, list(tokens)
        self.index = {t: i for i, t in enumerate(self.tokens)}
        self.longest = max(len(t) for t in self.tokens[4:]) if len(tokens) > 4 else 1

    def __len__(self) -> int:
        return len(self.tokens)

    @classmethod
    def build(cls, kind: str, sequences) -> "Vocab":
        """From token sequences: most frequent first, ties alphabetical (deterministic)."""
        counts = Counter(t for seq in sequences for t in seq)
        ranked = sorted((t for t in counts if t not in SPECIALS), key=lambda t: (-counts[t], t))
        return cls(kind, list(SPECIALS) + ranked)

    def split(self, text: str) -> list[tuple[str, bool]]:
        """Text -> [(piece, known)] without dropping anything but whitespace (unit kind)."""
        if self.kind == "char":
            return [(ch, ch in self.index) for ch in text]
        pieces: list[tuple[str, bool]] = []
        for chunk in text.split():
            if chunk in self.index or chunk.lower() in self.index:
                pieces.append((chunk, True))
                continue
            pieces.extend(self._segment(chunk))
        return pieces

    def _segment(self, chunk: str) -> list[tuple[str, bool]]:
        """Forward maximum matching; consecutive unmatched characters form one unknown piece."""
        out, i, unknown = [], 0, ""
        while i < len(chunk):
            for size in range(min(self.longest, len(chunk) - i), 0, -1):
                piece = chunk[i: i + size]
                if piece in self.index or piece.lower() in self.index:
                    break
            else:
                unknown += chunk[i]
                i += 1
                continue
            if unknown:
                out.append((unknown, False))
                unknown = ""
            out.append((piece, True))
            i += size
        if unknown:
            out.append((unknown, False))
        return out

    def encode(self, text) -> Encoded:
        """A string (segmented) or a list of tokens -> ids, the pieces, and the unknown pieces."""
        pieces = [(t, t in self.index) for t in text] if isinstance(text, (list, tuple)) else self.split(text)
        ids, kept, unknown = [], [], []
        for piece, known in pieces:
            i = self.index.get(piece, self.index.get(piece.lower())) if known else None
            if i is None:
                i = UNK_ID
                if piece not in unknown:
                    unknown.append(piece)
            ids.append(i)
            kept.append(piece)
        return Encoded(ids, kept, unknown)

    @property
    def end(self) -> str:
        """The end token as this vocabulary spells it (``<eos>``, a plain model's ``EOS``, ``</s>``, ``[SEP]``): the
        token at ``EOS_ID``, which ends the output in every view whatever it is called."""
        return self.tokens[EOS_ID]

    def strings(self, ids) -> list[str]:
        return [self.tokens[i] if 0 <= i < len(self.tokens) else UNK for i in ids]

    def decode(self, ids) -> str:
        """Ids -> text, stopping at <eos> and leaving out <bos>/<pad>."""
        out = []
        for tok in self.strings(ids):
            if tok == EOS:
                break
            if tok not in (BOS, PAD):
                out.append(tok)
        return "".join(out) if self.kind == "char" else " ".join(out)

    def to_dict(self) -> dict:
        return {"kind": self.kind, "tokens": self.tokens}

    @classmethod
    def from_dict(cls, data: dict) -> "Vocab":
        if not isinstance(data, dict) or "kind" not in data or "tokens" not in data:
            raise TokenizerError("vocabulary must be a JSON object with 'kind' and 'tokens'")
        return cls(data["kind"], data["tokens"])
