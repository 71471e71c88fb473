"""Read and write word vectors: seqviz folders, word2vec C binary/text and GloVe text, strictly checked.

Formats (Mikolov et al.'s word2vec tool; Pennington et al.'s GloVe release):

* word2vec binary: a text header ``"<words> <dims>\\n"``, then per word its UTF-8 bytes, one
  space and ``dims`` little-endian float32 (the C tool adds ``"\\n"`` after each vector,
  gensim 4 does not; both are read).
* word2vec text: the same header, then one ``word v1 ... vD`` line per word.
* GloVe text: the rows without a header; the width of the first row fixes ``dims``.
* seqviz folder: ``config.json`` (``"model_type": "word2vec"``), ``vectors.safetensors``
  (one tensor ``vectors`` [V, D], float16 or float32), ``vocab.json`` (``words`` and
  ``counts``), ``card.json`` and optionally ``wordmap.json`` (see introspect/wordmap.py).

gensim's own ``.model``/``.kv`` files are pickles and are refused, never opened. A header
that disagrees with the data, ragged rows, NaN/Inf, duplicate words, bytes that are not
UTF-8 and empty files all raise ``CheckpointError(path, problem)``. The rows themselves are
parsed in bulk by readers.py.
"""

from __future__ import annotations

import json
import mmap
import re
import tempfile
from pathlib import Path

import numpy as np
from safetensors import SafetensorError
from safetensors.numpy import load_file, save_file

from seqviz.files import CheckpointError, read_json
from seqviz.data.tokenizers import TokenizerError, parse_vocab
from seqviz.files import FASTTEXT_MAGIC, PICKLE_SUFFIXES
from seqviz.word2vec.readers import HEADER, read_text, read_word2vec_binary
from seqviz.word2vec.vectors import WordVectors, VectorsConfig, check_vectors

MAX_FILE_BYTES = 1 << 30  # a path on disk
MAX_UPLOAD_BYTES = 200 << 20  # an upload through the page (Streamlit's own default limit)
MAX_WORDS_READ = 500_000  # the app's most words read: GloVe's 400k fit; 500k x 300 take ~0.6 GB (rows normalised)
EXPORT_HINT = ("gensim's .model/.kv files are Python pickles, which seqviz never opens (unpickling "
               "runs code). Export the vectors first: model.wv.save_word2vec_format('vectors.bin', "
               "binary=True) (or KeyedVectors.load(path).save_word2vec_format(...)), then open that file.")
VECTOR_FILES = ("vectors.safetensors", "model.safetensors")


# ------------------------------------------------------------------ entry points
def load_vectors(path, limit: int | None = None, progress=None) -> WordVectors:
    """Word vectors from a seqviz folder or a word2vec/GloVe/fastText file (``limit``: the first N rows only).

    Files are memory-mapped, so with a ``limit`` only the first rows are ever read: a 3M x 300
    word2vec binary or a 400k x 300 GloVe file opens its most frequent N words in a moment.
    Without a limit a file over 1 GiB is refused. ``progress(fraction)``, if given, is called as
    the rows of a word2vec or GloVe file are read (a progress bar for big files).
    """
    path = Path(path).expanduser()
    if path.is_dir():
        return load_checkpoint(path, limit=limit)
    if not path.is_file():
        raise CheckpointError(path, "no such file or folder")
    if path.suffix.lower() in PICKLE_SUFFIXES:
        raise CheckpointError(path, "refused: " + EXPORT_HINT)
    size = path.stat().st_size
    if size == 0:
        raise CheckpointError(path, "file is empty (0 bytes)")
    if size > MAX_FILE_BYTES and limit is None:
        raise CheckpointError(path, f"file is {size / 2**20:,.0f} MiB, over the {MAX_FILE_BYTES >> 20} MiB limit for "
                              "reading a whole file; open its most frequent words only (a limit of N words)")
    with path.open("rb") as f:
        if looks_like_fasttext(f.read(4096), path.name):
            return read_fasttext(path, str(path), limit)
        f.seek(0)
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return parse_vectors(data, str(path), limit, progress)


def load_vector_bytes(data: bytes, name: str, limit: int | None = None,
                      max_bytes: int = MAX_UPLOAD_BYTES, progress=None) -> WordVectors:
    """Word vectors from uploaded bytes (``name`` is shown in messages and hints at the format)."""
    if len(data) > max_bytes:
        raise CheckpointError(name, f"upload is {len(data) / 2**20:.1f} MiB, over the "
                              f"{max_bytes / 2**20:.0f} MiB limit")
    if Path(name).suffix.lower() in PICKLE_SUFFIXES:
        raise CheckpointError(name, "refused: " + EXPORT_HINT)
    if looks_like_fasttext(data[:4096], name):
        with tempfile.TemporaryDirectory(prefix="seqviz-fasttext-") as tmp:
            copy = Path(tmp) / "vectors.bin"
            copy.write_bytes(data)
            return read_fasttext(copy, name, limit)
    return parse_vectors(data, name, limit, progress)


def looks_like_fasttext(head: bytes, name: str) -> bool:
    """fastText's magic number, or (fastText before 0.9, no magic) a ``.bin`` with no word2vec header line."""
    if head[:4] == FASTTEXT_MAGIC:
        return True
    if not name.lower().endswith(".bin") or head[:1] == b"\x80" or head[:4] == b"PK\x03\x04":
        return False
    first = head.split(b"\n", 1)[0]
    return not HEADER.match(first)


def read_fasttext(path: Path, where: str, limit: int | None = None) -> WordVectors:
    """A fastText ``.bin`` model's word vectors, read by gensim's ``load_facebook_vectors``.

    gensim reads the binary format with ``struct``/NumPy (nothing is unpickled). The vectors are
    fastText's own word vectors (each word's row plus its character n-grams); the n-gram table
    itself is not kept. A model over 1 GiB (e.g. cc.en.300.bin, 7 GB, mostly n-grams) is refused:
    fastText publishes the same word vectors as a ``.vec`` text file, which opens with a limit.
    """
    if path.stat().st_size > MAX_FILE_BYTES:
        raise CheckpointError(where, f"a fastText .bin of {path.stat().st_size / 2**20:,.0f} MiB (over "
                              f"{MAX_FILE_BYTES >> 20} MiB, mostly subword n-grams): open its .vec file instead "
                              "(the same word vectors as text), with a limit of N words")
    try:
        from gensim.models.fasttext import load_facebook_vectors

        kv = load_facebook_vectors(str(path))
    except Exception as e:  # noqa: BLE001 - truncated or foreign files raise many kinds
        raise CheckpointError(where, f"not a valid fastText .bin file ({type(e).__name__})") from None
    n = len(kv.index_to_key) if limit is None else min(int(limit), len(kv.index_to_key))
    words, rows = list(kv.index_to_key[:n]), np.asarray(kv.vectors[:n], dtype=np.float32)
    counts = [int(kv.get_vecattr(w, "count")) for w in words] if n and kv.has_index_for(words[0]) else None
    problem = check_vectors(words, rows)
    if problem:
        raise CheckpointError(where, problem)
    card = {"source": "fastText .bin file", "path": where, "words": len(words), "dims": int(rows.shape[1]),
            "note": "fastText word vectors (word + character n-grams); the n-gram table is not kept"}
    config = VectorsConfig(vocab_size=len(words), dim=int(rows.shape[1]), format="fasttext-bin")
    return WordVectors(words, rows, counts if counts and any(counts) else None, card, config)


def sniff(data: bytes, where: str) -> str:
    """'word2vec-binary', 'word2vec-text' or 'glove-text'; refuses empty files, pickles and zips."""
    if not data:
        raise CheckpointError(where, "file is empty (0 bytes)")
    if data[:1] == b"\x80":  # pickle protocol 2+ (gensim saves with protocol 4)
        raise CheckpointError(where, "refused: this looks like a Python pickle. " + EXPORT_HINT)
    if data[:4] == b"PK\x03\x04":
        raise CheckpointError(where, "this is a zip archive, not a vector file (a zipped seqviz "
                              "checkpoint folder is opened through the checkpoint upload)")
    first = data[: data.find(b"\n")] if b"\n" in data[:4096] else data[:4096]
    if not HEADER.match(first):
        return "glove-text"
    # Float32 bytes almost surely contain control bytes; text vectors never do.
    sample = data[len(first) + 1: len(first) + 1 + 4096]
    return "word2vec-binary" if re.search(rb"[\x00-\x08\x0e-\x1f]", sample) else "word2vec-text"


def parse_vectors(data: bytes, where: str, limit: int | None = None, progress=None) -> WordVectors:
    """Parse bytes in any supported file format into checked WordVectors (``progress(fraction)`` as rows are read)."""
    if data[:3] == b"\xef\xbb\xbf":  # a UTF-8 byte-order mark (Windows editors write one)
        data = memoryview(data)[3:].tobytes() if not isinstance(data, bytes) else data[3:]
    fmt = sniff(data, where)
    if fmt == "word2vec-binary":
        words, rows = read_word2vec_binary(data, where, limit, progress)
    else:
        words, rows = read_text(data, where, fmt == "word2vec-text", limit, progress)
    card = {"source": f"{fmt} file", "path": where, "words": len(words), "dims": int(rows.shape[1]),
            "note": "no corpus counts in this format: rows are taken as most frequent first"}
    if limit is not None:
        card["limit"] = int(limit)
    try:  # WordVectors runs check_vectors first (once: 0.3 s for 400k x 300)
        wv = WordVectors(words, rows, None, card)
    except ValueError as e:
        raise CheckpointError(where, str(e)) from None
    wv.config = VectorsConfig(vocab_size=len(words), dim=int(rows.shape[1]), format=fmt)
    return wv


# ------------------------------------------------------------------ seqviz folders
def load_checkpoint(folder, limit: int | None = None) -> WordVectors:
    """A seqviz word2vec checkpoint folder (format 2 ``vocab.json``, or format 1's ``words``/``counts``)."""
    from seqviz.files import read_config

    folder = Path(folder)
    config = read_config(folder / "config.json", VectorsConfig)
    try:
        vocab = parse_vocab(read_json(folder / "vocab.json"))
    except TokenizerError as e:
        raise CheckpointError(folder / "vocab.json", str(e)) from None
    words, counts = vocab["tokens"], vocab["counts"]
    if counts is not None and (not isinstance(counts, list)
                               or not all(isinstance(c, int) and not isinstance(c, bool) for c in counts)):
        raise CheckpointError(folder / "vocab.json", "counts must be a list of integers")
    path = next((folder / n for n in VECTOR_FILES if (folder / n).is_file()), folder / VECTOR_FILES[0])
    vectors = _read_matrix(path)
    if vectors.shape != (config.vocab_size, config.dim):
        raise CheckpointError(path, f"vectors have shape {tuple(vectors.shape)}, config.json says "
                              f"[{config.vocab_size}, {config.dim}]")
    problem = check_vectors(words, vectors, None if counts is None else np.asarray(counts, dtype=np.int64))
    if problem:
        raise CheckpointError(folder / "vocab.json" if "word" in problem else path, problem)
    card_path = folder / "card.json"
    card = read_json(card_path) if card_path.exists() else {}
    card["path"] = str(folder)
    wv = WordVectors(words, vectors, counts, card, config)
    return wv if limit is None else wv.head(limit)


def _read_matrix(path: Path) -> np.ndarray:
    if not path.is_file():
        raise CheckpointError(path, "file is missing (expected vectors.safetensors or model.safetensors)")
    if path.stat().st_size == 0:
        raise CheckpointError(path, "file is empty (0 bytes)")
    if path.stat().st_size > MAX_FILE_BYTES:
        raise CheckpointError(path, "file is over the 1024 MiB limit")
    try:
        tensors = load_file(str(path))
    except (SafetensorError, OSError, ValueError) as e:
        raise CheckpointError(path, f"not a valid safetensors file ({str(e).splitlines()[0][:120]})") from None
    if "vectors" in tensors:
        matrix = tensors["vectors"]
    elif len(tensors) == 1:
        matrix = next(iter(tensors.values()))
    else:
        raise CheckpointError(path, f"expected one tensor named 'vectors', found {sorted(tensors)[:5]}")
    if matrix.ndim != 2 or matrix.dtype.kind != "f":
        raise CheckpointError(path, f"vectors must be a 2-D float array, got {matrix.dtype} {matrix.shape}")
    return matrix.astype(np.float32)


def save_checkpoint(wv: WordVectors, folder, card: dict, arch: str | None = None,
                    dtype: str = "float16") -> Path:
    """Write ``wv`` as a seqviz folder; ``dtype='float16'`` halves the size (evaluate the rounded copy)."""
    if dtype not in ("float16", "float32"):
        raise ValueError("dtype must be 'float16' or 'float32'")
    from seqviz.files import write_config

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    write_config(folder, VectorsConfig(vocab_size=len(wv), dim=wv.dim, dtype=dtype, arch=arch))
    counts = None if wv.counts is None else [int(c) for c in wv.counts]
    vocab = {"kind": "word", "tokens": wv.words, "counts": counts}
    (folder / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False) + "\n")
    save_file({"vectors": np.ascontiguousarray(wv.vectors.astype(dtype))}, str(folder / "vectors.safetensors"))
    (folder / "card.json").write_text(json.dumps(card, indent=2, ensure_ascii=False) + "\n")
    return folder
