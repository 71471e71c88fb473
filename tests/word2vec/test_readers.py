"""The bulk text and binary readers: gensim's reader or a hand-written expectation as the reference, and the
fast path checked against the line-by-line reader on the lines it is most likely to get wrong."""

from __future__ import annotations

import re

import numpy as np
import pytest
from gensim.models import KeyedVectors
from gensim.test.utils import datapath
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import seqviz
import seqviz.word2vec.readers as readers
from seqviz.checkpoints import CheckpointError
from seqviz.word2vec.formats import load_vector_bytes, load_vectors, parse_vectors

# gensim's own test files that both readers open (text with and without a header, fastText .vec, binary)
GENSIM_FILES = [("test_glove.txt", False, True), ("lee_fasttext.vec", False, False),
                ("crime-and-punishment.vec", False, False), ("toy-model.vec", False, False),
                ("high_precision.kv.txt", False, False),
                ("EN.1-10.cbow1_wind5_hs0_neg10_size300_smpl1e-05.txt", False, False),
                ("euclidean_vectors.bin", True, False), ("high_precision.kv.bin", True, False),
                ("poincare_vectors.bin", True, False)]


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch):
    """Chunks of ~200 bytes, so a few dozen rows already span many chunks (and many pandas calls)."""
    monkeypatch.setattr(readers, "CHUNK_BYTES", 200)


def glove_lines(n: int, dims: int = 3, seed: int = 0) -> tuple[list[str], np.ndarray, list[str]]:
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(n)]
    rows = rng.normal(size=(n, dims)).astype(np.float32)
    return words, rows, [w + " " + " ".join(repr(float(x)) for x in r) for w, r in zip(words, rows)]


@pytest.mark.parametrize("name, binary, no_header", GENSIM_FILES)
def test_gensims_test_files_read_as_gensim_reads_them(name, binary, no_header, monkeypatch):
    monkeypatch.setattr(readers, "CHUNK_BYTES", 4096)
    kv = KeyedVectors.load_word2vec_format(datapath(name), binary=binary, no_header=no_header)
    wv = seqviz.load(datapath(name))
    assert wv.words == list(kv.index_to_key)
    np.testing.assert_array_equal(wv.vectors, kv.vectors)
    head = seqviz.load(datapath(name), limit=7)
    assert head.words == list(kv.index_to_key[:7])
    np.testing.assert_array_equal(head.vectors, kv.vectors[:7])


def test_the_fast_path_reads_ordinary_files_without_the_line_by_line_reader(tmp_path, monkeypatch):
    calls = []
    reference = readers.read_lines
    monkeypatch.setattr(readers, "read_lines", lambda data, *a, **k: calls.append(data) or reference(data, *a, **k))
    words, rows, lines = glove_lines(300)
    (tmp_path / "g.txt").write_text("\n".join(lines) + "\n")
    fasttext_style = b"".join(line.encode() + b" \r\n" for line in lines)  # a trailing space, CRLF
    (tmp_path / "w.vec").write_bytes(b"300 3\r\n" + fasttext_style)
    for name in ("g.txt", "w.vec"):
        calls.clear()
        wv = load_vectors(tmp_path / name)
        assert wv.words == words and np.array_equal(wv.vectors, rows)
        assert len(calls) == (1 if name == "g.txt" else 0), calls  # a GloVe file's first row alone fixes its width


def test_a_ragged_row_far_into_the_file_is_named_by_its_line(tmp_path):
    words, rows, lines = glove_lines(120)
    lines[100] = "w100 0.5 0.25"  # line 101 of a GloVe file (no header)
    path = tmp_path / "g.txt"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(CheckpointError, match=r"line 101 has 2 numbers, expected 3 like the rows before it"):
        load_vectors(path)
    with pytest.raises(ValueError):  # gensim refuses the file too
        KeyedVectors.load_word2vec_format(str(path), no_header=True)
    assert load_vectors(path, limit=100).words == words[:100]  # the bad row is past the limit: never read


def test_a_row_longer_than_the_rest_is_ragged_too(tmp_path):
    _, _, lines = glove_lines(80)
    lines[60] += " 1.5"
    (tmp_path / "v.txt").write_text("80 3\n" + "\n".join(lines) + "\n")
    with pytest.raises(CheckpointError, match=r"line 62 has 4 numbers, expected 3"):
        load_vectors(tmp_path / "v.txt")


@pytest.mark.parametrize("value", ["nan", "inf", "-Infinity", "1e39"])
def test_nan_or_inf_names_its_line_and_row(tmp_path, value):
    _, _, lines = glove_lines(90)
    lines[70] = f"w70 0.1 {value} 0.3"
    (tmp_path / "v.txt").write_text("90 3\n" + "\n".join(lines) + "\n")
    with pytest.raises(CheckpointError, match=r"line 72: the vector in row 70 contains NaN or Inf \(1 rows do\)"):
        load_vectors(tmp_path / "v.txt")


def test_limit_parses_only_the_first_rows(tmp_path, monkeypatch):
    monkeypatch.setattr(readers, "CHUNK_BYTES", 1 << 20)  # one chunk holds the whole file
    words, rows, lines = glove_lines(50)
    body = "\n".join(lines[:20]).encode() + b"\n\xff\xfe broken 1\n" + "\n".join(lines[20:]).encode()
    (tmp_path / "v.txt").write_bytes(b"50 3\n" + body)
    wv = load_vectors(tmp_path / "v.txt", limit=20)
    assert wv.words == words[:20] and np.array_equal(wv.vectors, rows[:20])
    with pytest.raises(CheckpointError, match="line 22 is not UTF-8 text"):
        load_vectors(tmp_path / "v.txt", limit=21)
    kv = KeyedVectors.load_word2vec_format(str(tmp_path / "v.txt"), limit=20)
    assert wv.words == list(kv.index_to_key) and np.array_equal(wv.vectors, kv.vectors)


def test_crlf_trailing_spaces_and_blank_lines_read_as_gensim_reads_them(tmp_path):
    words, rows, lines = glove_lines(40)
    text = "40 3\r\n" + "".join(line + (" \r\n" if i % 3 else "\r\n") for i, line in enumerate(lines)) + "\r\n\n"
    (tmp_path / "v.txt").write_bytes(text.encode())
    wv = load_vectors(tmp_path / "v.txt")
    kv = KeyedVectors.load_word2vec_format(str(tmp_path / "v.txt"))
    assert wv.words == words == list(kv.index_to_key)
    np.testing.assert_array_equal(wv.vectors, kv.vectors)


def test_a_latin1_word_is_refused_with_its_line_and_byte(tmp_path):
    _, _, lines = glove_lines(60)
    data = ("60 3\n" + "\n".join(lines[:45]) + "\ncafé 1 2 3\n" + "\n".join(lines[46:]) + "\n").encode("latin-1")
    (tmp_path / "v.txt").write_bytes(data)
    with pytest.raises(CheckpointError, match=r"line 47 is not UTF-8 text \(byte 4 of the line\)"):
        load_vectors(tmp_path / "v.txt")
    with pytest.raises(UnicodeDecodeError):  # gensim agrees that the file is not UTF-8
        KeyedVectors.load_word2vec_format(str(tmp_path / "v.txt"))


def test_a_duplicate_word_names_both_rows(tmp_path):
    _, _, lines = glove_lines(70)
    lines[65] = "w3" + lines[65][3:]
    (tmp_path / "g.txt").write_text("\n".join(lines) + "\n")
    with pytest.raises(CheckpointError, match=r"duplicate words: rows 3 and 65 hold the same word"):
        load_vectors(tmp_path / "g.txt")


def test_a_word_holding_a_space_is_refused_by_its_line(tmp_path):
    """GloVe's 840B release has a few such "words"; like gensim, seqviz reads a space as the end of the word."""
    _, _, lines = glove_lines(90)
    spaced = lines[:75] + ["new york 0.5 0.25 0.125"] + lines[76:]
    (tmp_path / "g.txt").write_text("\n".join(spaced) + "\n")
    with pytest.raises(CheckpointError, match=r"line 76 has 4 numbers, expected 3 like the rows before it"):
        load_vectors(tmp_path / "g.txt")
    with pytest.raises(ValueError):
        KeyedVectors.load_word2vec_format(str(tmp_path / "g.txt"), no_header=True)
    (tmp_path / "first.txt").write_text("\n".join(["new york 0.5 0.25 0.125"] + lines[1:]) + "\n")
    with pytest.raises(CheckpointError, match=r"line 1: field 2 is not a number"):  # the first row fixes the width
        load_vectors(tmp_path / "first.txt")
    (tmp_path / "v.txt").write_text("90 3\n" + "\n".join(["new york 0.5 0.25 0.125"] + lines[1:]) + "\n")
    with pytest.raises(CheckpointError, match=r"the header says 3 dims but line 2 has 4 numbers"):
        load_vectors(tmp_path / "v.txt")


def test_odd_words_are_kept_exactly(tmp_path):
    odd = ['"quoted', "\ufeffbom", "#hash", "NA", "nan", "1.5", "'", "l'amour", "naïve", "東京", "a,b"]
    rows = np.arange(len(odd) * 2, dtype=np.float32).reshape(-1, 2)
    text = "".join(w + " " + " ".join(repr(float(x)) for x in r) + "\n" for w, r in zip(odd, rows))
    (tmp_path / "g.txt").write_text(text)  # a GloVe file's 2nd line begins its 2nd chunk: pandas would drop the BOM
    wv = load_vectors(tmp_path / "g.txt")
    assert wv.words == odd and np.array_equal(wv.vectors, rows)


def test_progress_rises_to_one(tmp_path):
    _, _, lines = glove_lines(100)
    data = ("\n".join(lines) + "\n").encode()
    seen = []
    load_vector_bytes(data, "g.txt", progress=seen.append)
    assert len(seen) > 5 and seen == sorted(seen) and seen[-1] == 1.0
    seen.clear()
    load_vector_bytes(data, "g.txt", limit=10, progress=seen.append)
    assert seen[-1] == 1.0


def test_binary_progress_rises_to_one():
    words, rows, _ = glove_lines(60, dims=5)
    seen = []
    load_vector_bytes(_binary(words, rows), "v.bin", progress=seen.append)
    assert len(seen) > 5 and seen == sorted(seen) and seen[-1] == 1.0
    seen.clear()
    load_vector_bytes(_binary(words, rows), "v.bin", limit=20, progress=seen.append)
    assert seen == sorted(seen) and seen[-1] == 1.0


def _binary(words, rows, newline=b"") -> bytes:
    head = f"{len(words)} {rows.shape[1]}\n".encode()
    return head + b"".join(w.encode() + b" " + r.astype("<f4").tobytes() + newline for w, r in zip(words, rows))


@pytest.mark.parametrize("newline", [b"", b"\n"])
def test_binary_records_over_many_chunks_read_as_gensim_reads_them(tmp_path, newline):
    words, rows, _ = glove_lines(60, dims=5)
    (tmp_path / "v.bin").write_bytes(_binary(words, rows, newline))
    wv = load_vectors(tmp_path / "v.bin")
    kv = KeyedVectors.load_word2vec_format(str(tmp_path / "v.bin"), binary=True)
    assert wv.words == words == list(kv.index_to_key)
    np.testing.assert_array_equal(wv.vectors, kv.vectors)
    assert load_vectors(tmp_path / "v.bin", limit=33).words == words[:33]


def test_a_bad_binary_word_in_a_later_chunk_is_named(tmp_path):
    words, rows, _ = glove_lines(60, dims=5)
    data = _binary(words, rows).replace(b"w47 ", b"w\xff7 ")
    with pytest.raises(CheckpointError, match=r"word 48 is not UTF-8 \(byte 0xff\)"):
        parse_vectors(data, "v.bin")
    assert len(parse_vectors(data, "v.bin", limit=47)) == 47


def _reference(data: bytes, pos: int, count: int, dims: int):
    """What the record-by-record reader makes of ``count`` records from ``pos``: its result or its message."""
    try:
        return readers._find_records(data, pos, 0, count, count, dims, count, "v.bin")
    except CheckpointError as e:
        return str(e)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["w", "é", "词", "a\tb", "\x07", "", " ", "\n", "x\ny", "\xff"]),
                          st.sampled_from([b"", b"\n", b"\r\n", b"\n\n"]),
                          st.binary(min_size=8, max_size=8)), min_size=1, max_size=6),
       st.integers(1, 7))
def test_the_regular_expression_cuts_records_as_the_reference_walks_them(records, count):
    # Float bytes drawn at random hold spaces and newlines; words hold what a wrong dims would put there.
    data = b"".join(newline + (w.encode("latin-1") if w == "\xff" else w.encode()) + b" " + floats
                    for w, newline, floats in records)
    fast = readers._split_records(data, 0, count, 8)
    if fast is None:  # declined: the chunk is read record by record, which raises or reads it
        return
    words, floats, end = fast  # taken: as many records as the reference reads, cut where it cuts them
    assert 1 <= len(words) <= count
    assert fast == _reference(data, 0, len(words), 2)


def test_clean_records_take_the_regular_expression(monkeypatch):
    monkeypatch.setattr(readers, "CHUNK_BYTES", 1 << 20)
    words, rows, _ = glove_lines(60, dims=5)
    data = _binary(words, rows, b"\n")
    start = data.find(b"\n") + 1
    got = readers._split_records(data, start, 60, 20)
    assert got is not None and got[0] == words and got[2] == len(data) - 1  # the last "\n" is left, as by the walk
    np.testing.assert_array_equal(np.frombuffer(got[1], "<f4").reshape(60, 5), rows.astype(np.float32))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(["a 1", "", "\r", " ", "b 2\r", "\r\r"]), min_size=1, max_size=8), st.booleans(),
       st.one_of(st.none(), st.integers(1, 8)))
def test_chunks_are_cut_after_the_last_row_wanted(lines, final_newline, rows_left):
    chunk = "\n".join(lines).encode() + (b"\n" if final_newline else b"")
    if not chunk:
        return
    kept = chunk.split(b"\n")[:-1] if chunk.endswith(b"\n") else chunk.split(b"\n")
    rows = [i for i, line in enumerate(kept) if line not in (b"", b"\r")]  # a blank line is "" or "\r"
    if rows_left is not None and len(rows) > rows_left:
        last = rows[rows_left - 1]
        expected = (b"".join(line + b"\n" for line in kept[: last + 1]), last + 1)
    else:
        expected = (chunk, len(kept))
    assert readers._whole_lines(chunk, rows_left) == expected


# ------------------------------------------------------------------ the fast path against the reference
def _tricky(kind: str) -> tuple[bytes, int | None]:
    """(file bytes, limit) of 60 rows with one oddity around row 45, where the chunks of 200 bytes are many."""
    _, _, lines = glove_lines(60)
    head, body, limit = "60 3\n", "\n".join(lines) + "\n", None
    if kind == "no header":
        head = ""
    elif kind == "trailing spaces, CRLF":
        body = "".join(line + " \r\n" for line in lines)
    elif kind == "ragged":
        body = body.replace(lines[45] + "\n", lines[45] + " 0.5\n")
    elif kind == "NaN":
        body = body.replace(lines[45] + "\n", "w45 0.5 nan -inf\n")
    elif kind == "duplicate":
        body = body.replace(lines[45] + "\n", "w7" + lines[45][3:] + "\n")
    elif kind == "limit":
        body, limit = body.replace(lines[45] + "\n", "w45 broken\n"), 45
    data = (head + body).encode()
    if kind == "Latin-1":
        data = (head + body.replace(lines[45], "caf\u00e9" + lines[45][3:])).encode("latin-1")
    return data, limit


@pytest.mark.parametrize("kind, message", [
    ("header", None), ("no header", None), ("trailing spaces, CRLF", None), ("limit", None),
    ("ragged", r"line 47 has 4 numbers, expected 3 like the rows before it \(ragged rows\)"),
    ("NaN", r"line 47: the vector in row 45 contains NaN or Inf \(1 rows do\)"),
    ("duplicate", r"duplicate words: rows 7 and 45 hold the same word"),
    ("Latin-1", r"line 47 is not UTF-8 text \(byte 4 of the line\)")])
def test_bulk_reading_gives_what_the_line_by_line_reader_gives(kind, message, monkeypatch):
    data, limit = _tricky(kind)
    fast = _outcome(lambda: _read(data, limit))
    monkeypatch.setattr(readers, "_fast_rows", lambda *args: None)  # every chunk read line by line, as before
    assert fast == _outcome(lambda: _read(data, limit))
    if message is None:
        assert len(fast[0]) == (limit or 60)
    else:
        assert re.fullmatch(r"v\.txt: " + message, fast), fast


def _read(data: bytes, limit: int | None):
    wv = load_vector_bytes(data, "v.txt", limit=limit)
    return wv.words, wv.vectors


# Mostly ordinary rows, so that whole chunks reach pandas; one line in four has one of the oddities each
# fast-path check is there for.
ODD = {"word": ["NA", "#", '"', "é", "a\u00a0b", "a\u3000b", "a\tb", "a\x1cb", "\x1b", "\ufeffw", "1", ""],
       "number": ["+1", ".5", "5.", "1e-3", "1E+05", "-0", "1_0", "0x10", "nan", "inf", "-Infinity", "1e39", "١",
                  "1,5", "", "x", "1e", '"1"'],
       "sep": ["  ", "\t", "\u00a0", " \x0c"],
       "end": ["\r\n", " \n", " \r\n", "  \n", "\n\n", "\n \n", "\r", "\n\r\n", "\n\x0c\n", "\r\r\n"]}


def _line(draw, number: int, dims: int) -> str:
    odd = draw(st.sampled_from([None] * 3 + ["word", "number", "sep", "end", "width"]))
    pick = lambda kind, usual: draw(st.sampled_from(ODD[kind])) if odd == kind else usual  # noqa: E731
    word = pick("word", f"w{number}")
    numbers = [repr(float(draw(st.floats(-1e3, 1e3, width=32))))
               for _ in range(draw(st.integers(1, 4)) if odd == "width" else dims)]
    if odd == "number":
        numbers[draw(st.integers(0, len(numbers) - 1))] = pick("number", "")
    sep = pick("sep", " ")
    return word + sep + sep.join(numbers) + pick("end", "\n")


def _outcome(fn):
    try:
        words, rows = fn()
    except CheckpointError as e:
        return str(e)
    return words, rows.tolist()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data(), st.booleans(), st.integers(1, 3), st.integers(8, 160))
def test_fast_path_and_reference_agree(data, header, dims, chunk):
    lines = [_line(data.draw, i, dims) for i in range(data.draw(st.integers(1, 16)))]
    text = (f"{len(lines)} {dims}\n" if header else "") + "".join(lines)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(readers, "CHUNK_BYTES", chunk)
        fast = _outcome(lambda: readers.read_text(text.encode(), "f", header))
        mp.setattr(readers, "_fast_rows", lambda *args: None)  # every chunk through the line-by-line reader
        slow = _outcome(lambda: readers.read_text(text.encode(), "f", header))
    assert fast == slow


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data(), st.booleans(), st.integers(1, 3), st.integers(8, 160), st.integers(1, 12))
def test_a_limit_reads_as_a_line_by_line_reader_stopping_at_the_nth_row(data, header, dims, chunk, limit):
    lines = [_line(data.draw, i, dims) for i in range(data.draw(st.integers(1, 16)))]
    text = ((f"{len(lines)} {dims}\n" if header else "") + "".join(lines)).encode()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(readers, "CHUNK_BYTES", chunk)
        fast = _outcome(lambda: readers.read_text(text, "f", header, limit))
        mp.setattr(readers, "CHUNK_BYTES", 1)  # a chunk per line, each read by the line-by-line reader
        mp.setattr(readers, "_fast_rows", lambda *args: None)
        slow = _outcome(lambda: readers.read_text(text, "f", header, limit))
    assert fast == slow
