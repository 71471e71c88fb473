"""The rows of word2vec/GloVe/fastText text and word2vec binary files, parsed in bulk and strictly checked.

Text is cut into chunks of whole lines, each parsed by pandas' C parser in one call. A chunk the
fast path cannot vouch for (a parse error, a ragged row, NaN/Inf, a word holding white space or
control characters, bytes that are not UTF-8, odd blank lines) is read again by ``read_lines``, the
line-by-line reference, which raises the exact message (line numbers, never the text found) or,
for a chunk that is merely unusual (tabs, runs of spaces), returns the rows. The fast path only
accepts what the reference accepts, with the same result (tests/word2vec/test_readers.py).
Binary records are cut a chunk at a time by one regular expression (word, space, exactly 4 x dims
bytes), whose ``re.split`` also returns the bytes between matches: all empty means the records are
contiguous. A word's start is known only once the record before it is, so numpy cannot find them
without reading every float byte for spaces; the regular expression skips the floats in C. A chunk it
cannot vouch for is walked with one ``find`` per word, the reference that raises the exact message.
"""

from __future__ import annotations

import csv
import functools
import io
import mmap
import re

import numpy as np

from seqviz.files import CheckpointError
from seqviz.word2vec.vectors import MAX_WORDS

MAX_DIMS = 10_000
MAX_WORD_BYTES = 1000  # no real token is longer; a longer "word" means the header's dims are wrong
HEADER = re.compile(rb"^\s*(\d+)[ \t]+(\d+)[ \t]*\r?$")
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
ODD_WORD = re.compile(r"[\s\x00-\x08\x0b-\x1f\x7f]")  # Unicode \s: where str.split() would cut the line
CHUNK_BYTES = 12 << 20  # text per pandas call: ~4,900 rows of 300 numbers (each call costs ~10 ms besides)


def header(line: bytes, where: str) -> tuple[int, int]:
    """(words, dims) of a ``"<words> <dims>"`` header line, refused when implausible."""
    m = HEADER.match(line)
    n_words, dims = int(m.group(1)), int(m.group(2))
    if not 0 < n_words <= MAX_WORDS or not 0 < dims <= MAX_DIMS:
        raise CheckpointError(where, f"the header's counts ({n_words:,} words, {dims:,} dims) are implausible "
                              f"(words 1..{MAX_WORDS:,}, dims 1..{MAX_DIMS:,})")
    return n_words, dims


# ------------------------------------------------------------------ text
def read_text(data, where: str, header_line: bool, limit: int | None = None,
              progress=None) -> tuple[list[str], np.ndarray]:
    """Words and [V, D] float32 rows of a word2vec text file (``header_line=True``) or a GloVe file.

    ``limit``: lines after the N-th row are never parsed. ``progress(fraction)`` is called after
    each chunk.
    """
    if limit is not None and limit < 1:
        raise CheckpointError(where, "no vectors in the file")
    size, pos, number = len(data), 0, 0  # number: lines consumed
    n_words = dims = out = None
    if header_line:
        end = _chunk_end(data, 0, 1)
        n_words, dims = header(data[:end].rstrip(b"\n"), where)
        pos, number = end, 1
        out = _Rows(dims, min(n_words, limit or n_words, (size - pos) // (2 * dims) + 1))
    bad = None  # (row, line) of the first row holding NaN/Inf
    while pos < size and (limit is None or out is None or len(out) < limit):
        end = _chunk_end(data, pos, CHUNK_BYTES if dims else 1)  # GloVe: the first row alone fixes dims
        chunk, left = data[pos:end], None if limit is None else limit - (len(out) if out else 0)
        # A row takes 2 * dims + 1 bytes at least: a chunk that cannot hold more rows than wanted is not
        # cut, and its lines need no count (pandas makes a row of every line: see _fast_rows).
        count = not dims or left is not None and left * (2 * dims + 1) < len(chunk)
        chunk, lines = _whole_lines(chunk, left) if count else (chunk, None)
        _release(data, pos, pos + len(chunk))  # a copy is parsed: the mapped pages can go now
        got = _fast_rows(chunk, dims, lines) if dims else None
        if got is None:
            lines = chunk.count(b"\n") + (not chunk.endswith(b"\n")) if lines is None else lines
            words, vectors, dims, line = read_lines(chunk, where, number + 1, dims, header_line and not out)
        else:
            (words, vectors), line = got, None
            lines = len(words) if lines is None else lines
        if out is None and dims is not None:
            out = _Rows(dims, _estimate(len(words), len(chunk), size - pos, limit))
        if line is not None and bad is None:
            bad = (len(out) + next(i for i, r in enumerate(vectors) if not np.isfinite(r).all()), line)
        if out is not None:
            out.add(words, vectors)
        pos, number = pos + len(chunk), number + lines
        if progress is not None:
            progress(min(1.0, max(pos / size, len(out) / limit if limit and out else 0.0)))
    if not out:
        raise CheckpointError(where, "no vectors in the file")
    if header_line and limit is None and len(out) != n_words:
        raise CheckpointError(where, f"the header says {n_words:,} words but the file has {len(out):,}")
    words, vectors = out.result()
    if bad is not None:
        count = int((~np.isfinite(vectors).all(axis=1)).sum())
        raise CheckpointError(where, f"line {bad[1]}: the vector in row {bad[0]} contains NaN or Inf ({count} rows do)")
    return words, vectors


def _chunk_end(data, pos: int, nbytes: int) -> int:
    """End (exclusive) of the whole lines from ``pos`` that hold at least ``nbytes`` (or the rest of ``data``)."""
    if pos + nbytes >= len(data):
        return len(data)
    nl = data.find(b"\n", pos + nbytes - 1)
    return len(data) if nl < 0 else nl + 1


def _whole_lines(chunk: bytes, rows_left: int | None) -> tuple[bytes, int]:
    """(chunk, its lines), cut after its ``rows_left``-th row when it holds more (a row: a line not "" or "\\r")."""
    arr = np.frombuffer(chunk, np.uint8)
    newline = arr == 10  # numpy: 0.1 s per GB, where bytes.count takes 0.4 s and a "\n\n" search 0.9 s
    lines = int(np.count_nonzero(newline)) + (not chunk.endswith(b"\n"))
    if rows_left is None or lines <= rows_left:
        return chunk, lines
    ends = np.flatnonzero(newline)
    if not chunk.endswith(b"\n"):
        ends = np.append(ends, len(chunk))
    starts = np.concatenate(([0], ends[:-1] + 1))
    length = ends - starts
    blank = (length == 0) | ((length == 1) & (arr[np.minimum(starts, len(arr) - 1)] == 13))  # "" or "\r"
    rows = np.cumsum(~blank)
    if rows[-1] <= rows_left:
        return chunk, lines
    last = int(np.searchsorted(rows, rows_left))  # the line holding the last row wanted
    return chunk[: ends[last] + 1], last + 1


@functools.cache
def _dtypes(dims: int) -> dict:
    # np.dtype objects, not types: pandas converts a type per column per call (~2 ms of each call)
    return {0: np.dtype(object), **dict.fromkeys(range(1, dims + 1), np.dtype(np.float32))}


def _read_frame(chunk: bytes, dtype: dict | None):
    import pandas as pd

    return pd.read_csv(io.BytesIO(chunk), sep=" ", header=None, index_col=0, lineterminator="\n",
                       skip_blank_lines=False, quoting=csv.QUOTE_NONE, na_filter=False, engine="c",
                       encoding="utf-8", dtype=dtype)


def _fast_rows(chunk: bytes, dims: int, lines: int | None):
    """(words, [lines, dims] float32) of whole lines, parsed by pandas' C parser; None where it cannot vouch.

    Quoting, comments and NA strings are off (a word may be ``"``, ``#`` or ``NA``); lines end at
    ``\\n`` only and blank lines are kept (as rows that fail), so pandas' rows are the lines (``lines``,
    when counted, is checked too). One trailing space per line (fastText's ``.vec`` files) and
    ``\\r\\n`` endings are accepted. Columns are first left to pandas' inference: a ``dtype`` per
    column makes pandas wrap every column in a Series (~25 ms a call, a fifth of a 12 MB chunk's
    parse). A column inferred as float64 was read by the same number parser that ``dtype=float32``
    uses (which parses to float64 and casts), so the rows are the same; a chunk where anything else
    came out (words that all read as numbers, a column of integers) is read again with the dtypes.
    """
    if chunk.startswith(b"\xef\xbb\xbf"):  # pandas drops a byte-order mark, which here begins a word
        return None
    try:
        frame = _trim(_read_frame(chunk, None), dims)
        if frame is not None and not (frame.index.dtype.kind in "OT" and all(d == np.float64 for d in frame.dtypes)):
            frame = _trim(_read_frame(chunk, _dtypes(dims)), dims)
    except Exception:  # noqa: BLE001 - any refusal (ragged, not a number, not UTF-8): the reference decides
        return None
    if frame is None or lines is not None and frame.shape[0] != lines:
        return None
    words = frame.index.tolist()
    try:
        joined = "".join(words)  # TypeError unless every word is a str
    except TypeError:
        return None
    if not all(map(len, words)) or ODD_WORD.search(joined):
        return None
    with np.errstate(over="ignore"):  # a number past float32's range becomes Inf, refused just below
        vectors = frame.to_numpy(np.float32)
    return (words, vectors) if np.isfinite(vectors).all() else None


def _trim(frame, dims: int):
    """``frame`` without the empty field after a trailing space; None unless it then has ``dims`` columns."""
    if frame.shape[1] == dims + 1 and frame[dims + 1].isin(("", "\r")).all():
        frame = frame.iloc[:, :dims]
    return frame if frame.shape[1] == dims else None


def read_lines(data, where: str, first: int = 1, dims: int | None = None,
               header_dims: bool = False) -> tuple[list[str], np.ndarray, int | None, int | None]:
    """Words, rows, dims and the line of the first row holding NaN/Inf (or None) of whole text lines, one by one.

    The reference reader. ``first``: the number of the first line; ``dims``: the width so far (None:
    the first row fixes it); ``header_dims``: a header gave ``dims`` and no row has been read yet.
    Messages name the line and the field, never the text found there (the file may not be the
    visitor's own: see ``seqviz.checkpoints.check_allowed``).
    """
    words: list[str] = []
    rows: list[np.ndarray] = []
    bad = None
    for number, raw in enumerate(data.split(b"\n") if data else [], start=first):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise CheckpointError(where, f"line {number} is not UTF-8 text (byte {e.start + 1} of the line)") from None
        parts = line.split()
        if not parts:
            continue  # blank lines (e.g. the final newline) carry nothing
        if CONTROL.search(parts[0]):
            raise CheckpointError(where, f"line {number}: the word (field 1) holds control characters")
        if dims is None:
            dims = len(parts) - 1
            if not 0 < dims <= MAX_DIMS:
                raise CheckpointError(where, f"line {number}: a row needs a word and 1..{MAX_DIMS:,} numbers")
        if len(parts) - 1 != dims and header_dims and not words:
            raise CheckpointError(where, f"the header says {dims} dims but line {number} has {len(parts) - 1} numbers")
        if len(parts) - 1 != dims:
            raise CheckpointError(where, f"line {number} has {len(parts) - 1} numbers, expected {dims} like the rows "
                                  "before it (ragged rows)")
        try:
            rows.append(np.array(parts[1:], dtype=np.float32))
        except ValueError:
            field = next(i for i, p in enumerate(parts[1:], start=2) if not _is_number(p))
            raise CheckpointError(where, f"line {number}: field {field} is not a number") from None
        if bad is None and not np.isfinite(rows[-1]).all():
            bad = number
        words.append(parts[0])
    return words, np.stack(rows) if rows else np.empty((0, dims or 1), np.float32), dims, bad


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


class _Rows:
    """Words and a [n, dims] float32 matrix grown in place: ``ndarray.resize`` reallocates, which for a big
    block is ``mremap`` (no copy, no second matrix in memory)."""

    def __init__(self, dims: int, capacity: int):
        self.words: list[str] = []
        self.matrix = np.empty((max(1, capacity), dims), np.float32)

    def __len__(self) -> int:
        return len(self.words)

    def add(self, words: list[str], rows: np.ndarray) -> None:
        n, need = len(self.words), len(self.words) + len(words)
        if need > len(self.matrix):
            self.matrix.resize((max(need, len(self.matrix) * 21 // 20), self.matrix.shape[1]), refcheck=False)
        self.matrix[n:need] = rows
        self.words += words

    def result(self) -> tuple[list[str], np.ndarray]:
        self.matrix.resize((len(self.words), self.matrix.shape[1]), refcheck=False)
        return self.words, self.matrix


def _estimate(rows: int, nbytes: int, left: int, limit: int | None) -> int:
    """Rows a file holds, judged from its first ``rows`` rows in ``nbytes`` with ``left`` bytes from there (+1%)."""
    guess = rows + int((left - nbytes) * rows / max(nbytes, 1) * 1.01) + 16
    return guess if limit is None else min(guess, limit)


def _release(data, start: int, end: int) -> None:
    """Unmap the pages of a memory-mapped file read from ``start`` to ``end``, so they leave this process's
    resident memory (they stay in the page cache; a page touched again is mapped again)."""
    if isinstance(data, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED") and end > start:
        data.madvise(mmap.MADV_DONTNEED, start - start % mmap.PAGESIZE, end - start + start % mmap.PAGESIZE)


# ------------------------------------------------------------------ binary
def read_word2vec_binary(data, where: str, limit: int | None = None,
                         progress=None) -> tuple[list[str], np.ndarray]:
    """Words and [V, D] float32 rows of a word2vec C binary file (``progress(fraction)`` after each chunk).

    A record is the word's UTF-8 bytes, a space and ``dims`` little-endian float32; the C tool adds
    ``"\\n"`` after each vector, gensim 4 does not. A chunk of records is cut by one regular
    expression (``_split_records``, in C); a chunk it cannot vouch for is read again record by record
    (``_find_records``), which raises the exact message.
    """
    end = data.find(b"\n")
    n_words, dims = header(data[:end], where)
    want = n_words if limit is None else min(n_words, int(limit))
    width = 4 * dims
    # A row takes at least 4 * dims + 2 bytes (one-byte word, space, floats): never allocate more rows
    # than the file can hold, whatever the header claims (the record reader reports the shortfall).
    rows = np.empty((min(want, (len(data) - end - 1) // (width + 2)), dims), dtype=np.float32)
    words: list[str] = []
    pos, batch = end + 1, max(1, CHUNK_BYTES // (width + 2))
    while len(words) < want:
        first = len(words)
        count = min(batch, want - first)
        got = _split_records(data, pos, count, width) or _find_records(data, pos, first, count, n_words, dims,
                                                                        len(rows), where)
        chunk_words, floats, pos = got
        words += chunk_words
        rows[first:len(words)] = np.frombuffer(floats, dtype="<f4").reshape(len(chunk_words), dims)
        if progress is not None:
            progress(len(words) / want)
    if limit is None and data[pos:].strip():
        raise CheckpointError(where, f"{len(data) - pos:,} bytes follow the {n_words:,} words the header "
                              "announces: its word count or dims are wrong")
    return words, rows


@functools.lru_cache(maxsize=8)
def _record(width: int) -> re.Pattern:
    """One binary record: newlines left by the record before, a word (no space, not starting with a
    newline, at most MAX_WORD_BYTES), a space and ``width`` bytes of floats."""
    return re.compile(rb"([\n\r]*)([^ \n\r][^ ]{0,%d}) (.{%d})" % (MAX_WORD_BYTES - 1, width), re.DOTALL)


def _split_records(data, pos: int, count: int, width: int):
    """(words, float bytes, end) of the ``count`` records from ``pos`` (fewer at the chunk's end), or None.

    ``re.split`` returns the text between matches too: every such gap must be empty, so the records
    are contiguous exactly as ``_find_records`` would walk them. None (read record by record) when a
    gap is not, no whole record fits, or a word is not clean UTF-8.
    """
    chunk = data[pos:pos + CHUNK_BYTES + MAX_WORD_BYTES + width + 2]
    parts = _record(width).split(chunk, maxsplit=count)
    if len(parts) < 5 or any(parts[0:-1:4]):
        return None
    try:
        words = b" ".join(parts[2::4]).decode("utf-8")
    except UnicodeDecodeError:
        return None
    if CONTROL.search(words):
        return None
    return words.split(" "), b"".join(parts[3::4]), pos + len(chunk) - len(parts[-1])


def _find_records(data, pos: int, first: int, count: int, n_words: int, dims: int, capacity: int, where: str):
    """(words, float bytes, end) of the ``count`` records from ``pos``: the reference, one ``find`` per word.

    Raises what is wrong with the first bad record (``first``: the index of the record at ``pos``).
    """
    starts, stops, size, width = [], [], len(data), 4 * dims
    for i in range(first, first + count):
        while pos < size and data[pos] in b"\n\r":
            pos += 1
        stop = data.find(b" ", pos, pos + MAX_WORD_BYTES + 1)
        if stop < 0:
            _binary_words(data, starts, stops, first, dims, where)  # earlier words' problems come first
            if pos >= size:
                raise CheckpointError(where, f"the header says {n_words:,} words but the file ends after {i:,}")
            raise CheckpointError(where, f"word {i + 1}: no word boundary found; the header's dims ({dims}) "
                                  "probably do not match the data")
        starts.append(pos)
        stops.append(stop)
        if stop + 1 + width > size or i >= capacity:
            _binary_words(data, starts, stops, first, dims, where)
            raise CheckpointError(where, f"the file ends inside the vector of word {i + 1}: the header "
                                  f"says {n_words:,} words x {dims} dims")
        pos = stop + 1 + width
    words = _binary_words(data, starts, stops, first, dims, where)
    block = np.frombuffer(data[starts[0]:pos], dtype=np.uint8)  # a copy: no view of the mapped file is kept
    offsets = np.asarray(stops) + 1 - starts[0]
    return words, np.lib.stride_tricks.sliding_window_view(block, width)[offsets].tobytes(), pos


def _binary_words(data, starts: list[int], stops: list[int], first: int, dims: int, where: str) -> list[str]:
    """The words at ``data[start:stop]`` (the ``first``-th record first), decoded; the first bad one refused."""
    try:
        words = [data[a:b].decode("utf-8") for a, b in zip(starts, stops)]
        if all(words) and not CONTROL.search("".join(words)):
            return words
    except UnicodeDecodeError:
        pass
    for i, (a, b) in enumerate(zip(starts, stops), start=first):  # name the first bad word, as a loop would
        try:
            word = data[a:b].decode("utf-8")
        except UnicodeDecodeError as e:
            raise CheckpointError(where, f"word {i + 1} is not UTF-8 (byte {data[a + e.start]:#04x}); either "
                                  f"the file is not UTF-8 or the header's dims ({dims}) are wrong") from None
        if not word or CONTROL.search(word):
            raise CheckpointError(where, f"word {i + 1} holds control characters: the header's "
                                  f"dims ({dims}) probably do not match the data")
    raise AssertionError("unreachable: a bad word was found above")
