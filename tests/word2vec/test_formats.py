"""Vector files: round trips through gensim's own writer, seqviz folders, and every broken-file refusal."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest
from gensim.models import KeyedVectors

from seqviz.checkpoints import CheckpointError
from seqviz.registry import load
from seqviz.word2vec.formats import (load_checkpoint, load_vector_bytes, load_vectors, save_checkpoint,
                                     sniff)
from seqviz.word2vec.vectors import WordVectors

WORDS = ["king", "queen", "man", "woman", "naïve", "l'amour", "東京"]


@pytest.fixture
def kv() -> KeyedVectors:
    rng = np.random.default_rng(3)
    kv = KeyedVectors(vector_size=6)
    kv.add_vectors(WORDS, rng.normal(size=(len(WORDS), 6)).astype(np.float32))
    return kv


@pytest.mark.parametrize("binary", [True, False])
def test_gensim_word2vec_files_round_trip(kv, tmp_path, binary):
    path = tmp_path / ("v.bin" if binary else "v.txt")
    kv.save_word2vec_format(str(path), binary=binary)
    wv = load_vectors(path)
    assert wv.words == WORDS
    # binary keeps float32 exactly; text goes through repr() of each float32, also exact
    np.testing.assert_array_equal(wv.vectors, kv.vectors)
    assert wv.card["source"] == ("word2vec-binary file" if binary else "word2vec-text file")
    # and back: our rows, re-read by gensim, are the same vectors
    again = KeyedVectors.load_word2vec_format(str(path), binary=binary)
    np.testing.assert_array_equal(again.vectors, wv.vectors)


def test_c_tool_binary_with_newline_after_each_vector(kv, tmp_path):
    body = b"".join(w.encode() + b" " + kv[w].astype("<f4").tobytes() + b"\n" for w in WORDS)
    path = tmp_path / "c.bin"
    path.write_bytes(f"{len(WORDS)} 6\n".encode() + body)
    np.testing.assert_array_equal(load_vectors(path).vectors, kv.vectors)


def test_glove_text_without_header(kv, tmp_path):
    lines = [w + " " + " ".join(f"{x:.6f}" for x in kv[w]) for w in WORDS]
    path = tmp_path / "glove.6B.6d.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    wv = load_vectors(path)
    assert wv.words == WORDS and wv.counts is None and wv.card["source"] == "glove-text file"
    np.testing.assert_allclose(wv.vectors, kv.vectors, atol=5e-7)
    assert wv.top_words(3) == WORDS[:3]  # no counts: file order stands for frequency


def test_limit_reads_the_first_rows_only(kv, tmp_path):
    path = tmp_path / "v.bin"
    kv.save_word2vec_format(str(path), binary=True)
    assert load_vectors(path, limit=3).words == WORDS[:3]


def test_seqviz_folder_round_trip_through_load(tmp_path):
    rng = np.random.default_rng(0)
    wv = WordVectors(["the", "and", "king"], rng.normal(size=(3, 4)), np.array([30, 20, 5]))
    save_checkpoint(wv, tmp_path / "ck", {"note": "test"}, arch="cbow", dtype="float32")
    back = load(tmp_path / "ck")
    assert isinstance(back, WordVectors)
    assert back.words == wv.words and back.counts.tolist() == [30, 20, 5]
    np.testing.assert_array_equal(back.vectors, wv.vectors)
    assert back.card["note"] == "test" and back.config.arch == "cbow"
    assert json.loads((tmp_path / "ck" / "vocab.json").read_text())["tokens"] == wv.words  # one vocab.json shape
    assert json.loads((tmp_path / "ck" / "config.json").read_text())["format_version"] == 2
    save_checkpoint(wv, tmp_path / "half", {}, dtype="float16")
    np.testing.assert_array_equal(load_checkpoint(tmp_path / "half").vectors,
                                  wv.vectors.astype(np.float16).astype(np.float32))


def test_gensim_pickles_are_refused_with_the_export_recipe(kv, tmp_path):
    path = tmp_path / "model.kv"
    kv.save(str(path))
    with pytest.raises(CheckpointError, match=r"save_word2vec_format\('vectors.bin', binary=True\)"):
        load_vectors(path)
    renamed = tmp_path / "sneaky.bin"  # a pickle under a vector-file name is caught by its bytes
    renamed.write_bytes(path.read_bytes())
    with pytest.raises(CheckpointError, match="pickle"):
        load_vectors(renamed)
    with pytest.raises(CheckpointError, match="save_word2vec_format"):
        load_vector_bytes(b"anything", "w2v.model")


def _binary(rows, header=None, words=None):
    words = words or [f"w{i}" for i in range(len(rows))]
    dims = len(rows[0])
    head = header or f"{len(rows)} {dims}"
    return head.encode() + b"\n" + b"".join(w.encode() + b" " + struct.pack(f"<{len(r)}f", *r)
                                            for w, r in zip(words, rows))


BROKEN = {
    "empty file": (b"", "empty \\(0 bytes\\)"),
    "NaN in text": (b"2 2\na 1 2\nb nan 3\n", "row 1 contains NaN"),
    "Inf in glove": (b"a 1 2\nb inf 3\n", "NaN or Inf"),
    "duplicate words": (b"2 2\na 1 2\na 3 4\n", "duplicate words: rows 0 and 1 hold the same word"),
    "ragged text rows": (b"2 3\na 1 2 3\nb 1 2\n", "line 3 has 2 numbers, expected 3 like the rows"),
    "ragged glove rows": (b"a 1 2 3\nb 1 2\n", "line 2 has 2 numbers, expected 3"),
    "text header count too high": (b"3 2\na 1 2\nb 3 4\n", "header says 3 words but the file has 2"),
    "text header count too low": (b"1 2\na 1 2\nb 3 4\n", "header says 1 words but the file has 2"),
    "text header dims wrong": (b"2 3\na 1 2\nb 3 4\n", "header says 3 dims but line 2 has 2 numbers"),
    "not a number": (b"a 1 x2\n", "line 1: field 3 is not a number"),
    "non-UTF-8 text": (b"2 2\ncaf\xe9 1 2\nb 3 4\n", "line 2 is not UTF-8 text \\(byte 4 of the line\\)"),
    "binary header count too high": (_binary([[1.0, 2.0]] * 2, "3 2"), "header says 3 words but the file ends after 2"),
    "binary header count too low": (_binary([[1.0, 2.0]] * 3, "2 2"), "bytes follow the 2 words"),
    "binary header dims too small": (_binary([[1.5, 2.5, 3.5]] * 3, "3 2"), "dims"),
    "binary header dims too large": (_binary([[1.5, 2.5]] * 3, "3 4"), "ends inside the vector|dims"),
    "binary NaN": (_binary([[1.0, float("nan")], [1.0, 2.0]]), "row 0 contains NaN"),
    "binary duplicate words": (_binary([[1.0, 2.0]] * 2, words=["x", "x"]), "duplicate words"),
    "binary non-UTF-8 word": (_binary([[1.0, 2.0]], words=["ok"]).replace(b"ok", b"\xff\xfe"), "not UTF-8"),
    "zip archive": (b"PK\x03\x04rest", "zip archive"),
    "implausible header": (b"0 100\n", "implausible"),
}


@pytest.mark.parametrize("name", list(BROKEN))
def test_broken_files_get_a_clear_message(name, tmp_path):
    data, pattern = BROKEN[name]
    path = tmp_path / "vectors.txt"
    path.write_bytes(data)
    with pytest.raises(CheckpointError, match=pattern) as info:
        load_vectors(path)
    assert str(path) in str(info.value)
    with pytest.raises(CheckpointError, match=pattern):  # the upload path says the same
        load_vector_bytes(data, "upload.txt")


def test_upload_size_limit():
    with pytest.raises(CheckpointError, match="over the 0.0 MiB limit|over the 0 MiB limit"):
        load_vector_bytes(b"a 1 2\n" * 100, "v.txt", max_bytes=10)


def test_sniff_tells_the_three_formats_apart(kv, tmp_path):
    kv.save_word2vec_format(str(tmp_path / "b"), binary=True)
    kv.save_word2vec_format(str(tmp_path / "t"), binary=False)
    assert sniff((tmp_path / "b").read_bytes(), "b") == "word2vec-binary"
    assert sniff((tmp_path / "t").read_bytes(), "t") == "word2vec-text"
    assert sniff(b"the 0.1 0.2\n", "g") == "glove-text"


@pytest.mark.parametrize("problem, edit, pattern", [
    ("shape", lambda f: (f / "config.json").write_text(
        '{"model_type": "word2vec", "vocab_size": 4, "dim": 4}'), "config.json says \\[4, 4\\]"),
    ("duplicate", lambda f: (f / "vocab.json").write_text('{"words": ["a", "a", "b"], "counts": [3, 2, 1]}'),
     "duplicate words"),
    ("counts", lambda f: (f / "vocab.json").write_text('{"words": ["a", "b", "c"], "counts": [3, "x", 1]}'),
     "counts must be a list of integers"),
    ("missing vectors", lambda f: (f / "vectors.safetensors").unlink(), "file is missing"),
    ("empty vectors", lambda f: (f / "vectors.safetensors").write_bytes(b""), "empty"),
    ("garbage vectors", lambda f: (f / "vectors.safetensors").write_bytes(b"\x00" * 64), "not a valid safetensors"),
])
def test_broken_folders_get_a_clear_message(tmp_path, problem, edit, pattern):
    wv = WordVectors(["a", "b", "c"], np.eye(3, 4), np.array([3, 2, 1]))
    folder = save_checkpoint(wv, tmp_path / problem, {}, dtype="float32")
    edit(folder)
    with pytest.raises(CheckpointError, match=pattern):
        load(folder)


def test_inspect_prints_the_card(tmp_path, capsys):
    from seqviz.cli import main

    wv = WordVectors(["a", "b", "c"], np.eye(3, 4), np.array([3, 2, 1]))
    save_checkpoint(wv, tmp_path / "ck", {"vocabulary": 3, "evaluation": {"wordsim353": {"spearman": 0.5}}})
    assert main(["inspect", str(tmp_path / "ck")]) == 0
    out = capsys.readouterr().out
    assert '"vocabulary": 3' in out and '"spearman": 0.5' in out
    (tmp_path / "ck" / "vectors.safetensors").write_bytes(b"")
    assert main(["inspect", str(tmp_path / "ck")]) == 2
