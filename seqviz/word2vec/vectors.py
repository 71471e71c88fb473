"""The loaded word-vector type: a vocabulary (with counts when known), its matrix and its unit rows.

Every geometric question seqviz asks of word vectors (analogies, neighbours, the word map,
the bias axis) uses cosine similarity: ``unit @ unit[i]`` is the cosine with word ``i``. The
row norms are computed once, at load time, and ``unit`` divides by them as it is read, so no
second [V, D] matrix is held (480 MB for a 400k x 300 GloVe file). The raw rows are what the
file holds: their norms grow with word frequency (Schakel & Wilson 2015), itself worth showing.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

from seqviz.config import ConfigError, JsonConfig
from seqviz.pretrained import Pretrained

MODEL_TYPE = "word2vec"
MAX_WORDS = 5_000_000  # more rows than any vector file seqviz is meant to open
WHITE = re.compile(r"\s")  # Unicode white space: what str.isspace() and str.split() see
BLOCK = 1 << 14  # rows per step where a whole-matrix temporary would cost another matrix (norms, finiteness)


@functools.cache
def _blas_controller():
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()  # inspecting the loaded libraries costs ~2 ms, once


def one_blas_thread():
    """Context: BLAS on one thread. Matrix-vector products over a vocabulary are memory-bound, and on
    a shared, busy machine OpenBLAS's spinning threads made them 20-50x slower (measured: 0.35 ms
    vs 21 ms for 9,000 x 100)."""
    return _blas_controller().limit(limits=1, user_api="blas")


class UnitRows:
    """The unit-length rows of a [V, D] matrix, normalised as they are read (a zero row stays zero).

    ``unit[rows]`` is ``vectors[rows] / norms[rows]``, bit for bit what a normalised copy holds;
    ``unit @ x`` ([D] or [D, K]) is ``(vectors @ x) / norms``, the cosine with every word for a unit
    ``x`` (equal to the copy's product within float32 rounding). It offers no ``__array__`` and no
    ``.T``, so numpy never makes the [V, D] copy unasked.
    """

    def __init__(self, vectors: np.ndarray, norms: np.ndarray):
        self._vectors = vectors
        self._norms = np.where(norms > 0, norms, 1.0).astype(vectors.dtype)

    @property
    def shape(self) -> tuple[int, int]:
        return self._vectors.shape

    @property
    def dtype(self):
        return self._vectors.dtype

    def __len__(self) -> int:
        return len(self._vectors)

    def __getitem__(self, rows) -> np.ndarray:
        return self._vectors[rows] / np.asarray(self._norms[rows])[..., None]

    def __matmul__(self, x) -> np.ndarray:
        out = self._vectors @ np.asarray(x)
        out /= self._norms if out.ndim == 1 else self._norms[:, None]
        return out

    def head(self, n: int) -> "UnitRows":
        """The first ``n`` rows (a view, no copy)."""
        return UnitRows(self._vectors[:n], self._norms[:n])


class VocabularyError(ValueError):
    """A word the user asked about that the vocabulary does not hold (message names it)."""


def check_vectors(words: list[str], vectors: np.ndarray, counts=None) -> str | None:
    """The first problem with a (words, vectors, counts) triple, or None when it is usable."""
    if not isinstance(vectors, np.ndarray) or vectors.ndim != 2:
        return "vectors must be a 2-D array [words, dims]"
    if vectors.shape[0] == 0 or vectors.shape[1] == 0:
        return f"vectors have shape {tuple(vectors.shape)}: no words or no dimensions"
    if len(words) != vectors.shape[0]:
        return f"{len(words)} words but {vectors.shape[0]} vector rows"
    if len(words) > MAX_WORDS:
        return f"{len(words):,} words is over the {MAX_WORDS:,} limit"
    # Words are named by row, never quoted: the file may not be the visitor's own.
    if not all(isinstance(w, str) and w for w in words) or WHITE.search("".join(words)):  # one scan for 400k words
        bad = next(i for i, w in enumerate(words) if not isinstance(w, str) or not w or WHITE.search(w))
        return f"word {bad + 1} (row {bad}) is empty or contains white space"
    if len(set(words)) != len(words):
        seen: dict = {}
        first, again = next((seen[w], i) for i, w in enumerate(words) if seen.setdefault(w, i) != i)
        return f"duplicate words: rows {first} and {again} hold the same word"
    # Per block of rows: np.isfinite of the whole matrix is a [V, D] bool temporary (120 MB for 400k x 300).
    finite = np.concatenate([np.isfinite(vectors[i:i + BLOCK]).all(axis=1) for i in range(0, len(vectors), BLOCK)])
    if not finite.all():
        i = int(np.flatnonzero(~finite)[0])
        return f"the vector in row {i} contains NaN or Inf ({int((~finite).sum())} rows do)"
    if counts is not None:
        counts = np.asarray(counts)
        if counts.shape != (len(words),):
            return f"{counts.size} counts for {len(words)} words"
        if counts.dtype.kind not in "iu" or (counts < 0).any():
            return "counts must be non-negative integers"
    return None


@dataclass(frozen=True)
class VectorsConfig(JsonConfig):
    """config.json of a word-vector checkpoint (and a summary of a vector file that has none)."""

    vocab_size: int = 1  # rows (words)
    dim: int = 1  # columns
    dtype: str = "float32"  # how the folder stores them ("float16" halves the size)
    arch: str | None = None  # "skipgram" or "cbow" when seqviz trained them
    format: str = "seqviz"  # "seqviz" folder, or the file format they were read from

    model_type = MODEL_TYPE

    def __post_init__(self) -> None:
        for name in ("vocab_size", "dim"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
        if self.dtype not in ("float16", "float32"):
            raise ConfigError(f"dtype must be float16 or float32, got {self.dtype!r}")


@dataclass(eq=False)
class WordVectors(Pretrained):
    """Words, their vectors and (if known) corpus counts; rows in file order, usually most frequent first."""

    words: list[str]
    vectors: np.ndarray  # [V, D] float32, as trained or as stored in the file
    counts: np.ndarray | None = None  # [V] int64 corpus frequencies; None for bare vector files
    card: dict = field(default_factory=dict)  # how it was trained / where it came from
    config: VectorsConfig | None = None  # config.json for seqviz folders, else a summary of the file

    model_type = MODEL_TYPE
    config_class = VectorsConfig

    def __post_init__(self) -> None:
        self.vectors = np.ascontiguousarray(self.vectors, dtype=np.float32)
        if self.counts is not None:
            self.counts = np.asarray(self.counts, dtype=np.int64)
        problem = check_vectors(self.words, self.vectors, self.counts)
        if problem:
            raise ValueError(problem)
        self.words = list(self.words)
        self.index = {w: i for i, w in enumerate(self.words)}
        # Row norms a block of rows at a time: the same numbers, without a [V, D] temporary (x * x).
        self.norms = np.concatenate([np.linalg.norm(self.vectors[i:i + BLOCK], axis=1)
                                     for i in range(0, len(self.vectors), BLOCK)])
        self.vectors.setflags(write=False)
        # Normalised as read: a zero row stays zero (cosine 0 with everything) instead of becoming NaN.
        self.unit = UnitRows(self.vectors, self.norms)
        if self.config is None:
            self.config = VectorsConfig(vocab_size=len(self.words), dim=self.dim, format="array")

    # ---------------------------------------------------------------- shape
    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word) -> bool:
        return word in self.index

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    # ---------------------------------------------------------------- the protocol (seqviz.registry)
    no_snapshots = "word vectors keep no training snapshots"

    @classmethod
    def _from_pretrained(cls, path: Path, snapshot: int | None = None, limit: int | None = None,
                         progress=None) -> "WordVectors":
        """A seqviz word2vec folder or a word2vec/GloVe/fastText file; ``limit``: the first N words only;
        ``progress(fraction)``: called as a vector file's rows are read."""
        from seqviz.word2vec.formats import load_vectors  # the one known circle: see tests/core/test_imports.py

        return load_vectors(path, limit=limit, progress=progress)

    def _save_pretrained(self, folder: Path, dtype: str = "float32") -> VectorsConfig:
        """vocab.json (words and counts) and vectors.safetensors; ``dtype='float16'`` halves the size."""
        if dtype not in ("float16", "float32"):
            raise ValueError("dtype must be 'float16' or 'float32'")
        counts = None if self.counts is None else [int(c) for c in self.counts]
        vocab = {"kind": "word", "tokens": self.words, "counts": counts}
        (folder / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False) + "\n")
        save_file({"vectors": np.ascontiguousarray(self.vectors.astype(dtype))}, str(folder / "vectors.safetensors"))
        return VectorsConfig(vocab_size=len(self), dim=self.dim, dtype=dtype, arch=self.config.arch)

    def num_parameters(self) -> int:
        return int(self.vectors.size)

    def trace_names(self) -> list[str]:
        return ["tokens", "mask", "embed", "unit", "norm"]

    def trace(self, inputs, names=None):
        """Look words up: ``tokens`` [B, T] rows, ``mask`` [B, T], ``embed`` [B, T, D] raw vectors,
        ``unit`` [B, T, D] unit vectors, ``norm`` [B, T]. ``inputs``: a text (split on white space) or
        a list of texts / word lists; words not in the vocabulary raise ``VocabularyError``."""
        import torch

        from seqviz.trace import Trace, check_names

        wanted = check_names(names, self.trace_names())
        rows = [inputs] if isinstance(inputs, str) else list(inputs)
        seqs = [r.split() if isinstance(r, str) else list(r) for r in rows]
        if not seqs or any(not s for s in seqs):
            raise VocabularyError("enter at least one word")
        ids = [[self.lookup(w) for w in s] for s in seqs]
        width = max(map(len, ids))
        tokens = torch.zeros(len(ids), width, dtype=torch.long)
        mask = torch.zeros(len(ids), width, dtype=torch.bool)
        for b, row in enumerate(ids):
            tokens[b, : len(row)], mask[b, : len(row)] = torch.tensor(row), True
        flat = tokens.numpy()
        out = {"tokens": tokens, "mask": mask, "embed": torch.from_numpy(self.vectors[flat] * mask.numpy()[..., None]),
               "unit": torch.from_numpy(self.unit[flat] * mask.numpy()[..., None]),
               "norm": torch.from_numpy(self.norms[flat].astype(np.float32)) * mask}
        return Trace({k: out[k] for k in wanted}, [[self.words[i] for i in row] for row in ids])

    def describe(self) -> dict:
        return {"model_type": self.model_type, "format": self.config.format, "words": len(self), "dims": self.dim,
                "arch": self.config.arch, "counts": self.counts is not None, "parameters": self.num_parameters(),
                "vocab_size": len(self), "vocab_sample": self.words[:20], "trace_names": self.trace_names()}

    def head(self, n: int) -> "WordVectors":
        """The first ``n`` rows (the most frequent words in every format seqviz reads) as new WordVectors."""
        n = max(1, min(int(n), len(self)))
        if n == len(self):
            return self
        config = dataclasses.replace(self.config, vocab_size=n)
        return WordVectors(self.words[:n], self.vectors[:n], None if self.counts is None else self.counts[:n],
                           {**self.card, "limit": n}, config)

    # ---------------------------------------------------------------- lookup
    def find(self, word: str) -> int | None:
        """Row of ``word`` (exact match first, then lower-cased), or None."""
        word = word.strip()
        if word in self.index:
            return self.index[word]
        return self.index.get(word.lower())

    def lookup(self, word: str) -> int:
        """Row of ``word``; VocabularyError naming close vocabulary words when it is absent."""
        if not isinstance(word, str) or not word.strip():
            raise VocabularyError("enter a word")
        i = self.find(word)
        if i is None:
            close = difflib.get_close_matches(word.strip().lower(), self.top_words(20_000), n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            asked = word.strip() if len(word.strip()) <= 40 else word.strip()[:40] + "..."  # a pasted page stays short
            raise VocabularyError(f"{asked!r} is not in the vocabulary ({len(self):,} words){hint}")
        return i

    def top(self, n: int) -> np.ndarray:
        """Rows of the ``n`` most frequent words (file order when counts are unknown)."""
        n = max(0, min(int(n), len(self)))
        if self.counts is None:
            return np.arange(n)
        # Stable sort keeps file order among equal counts, so the choice is deterministic.
        return np.argsort(-self.counts, kind="stable")[:n]

    def top_words(self, n: int) -> list[str]:
        return [self.words[i] for i in self.top(n)]

    def count(self, word: str) -> int | None:
        i = self.find(word)
        return None if i is None or self.counts is None else int(self.counts[i])

    def summary(self) -> dict:
        """A few facts for display: size, dims, where from."""
        return {"words": len(self), "dims": self.dim, "counts": self.counts is not None,
                "source": self.card.get("source", self.card.get("path", ""))}
