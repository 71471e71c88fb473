"""Hypothesis on everything a visitor can type or upload: tokenizers, the pages' text inputs, the parsers.

The contract: a result, or the project's documented error with a short message (ValueError and its
subclasses TokenizerError / VocabularyError / CheckpointError); nothing else escapes. Where a
property is known (a round trip, what is kept), it is checked too. Each test keeps its example
count small (``settings``), so the file runs in well under a minute; ``FUZZ_CASES`` counts the
examples actually run (benchmarks/robustness.py reports it).
"""

from __future__ import annotations

import functools
import io
import json
import os
import shutil
import tempfile
import zipfile
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seqviz.checkpoints import read_json
from seqviz.data.tokenizers import WORD_RE, Tokenizer, TokenizerError

torch.set_num_threads(1)
FUZZ_CASES = Counter()  # test name -> examples run
EXAMPLES = int(os.environ.get("SEQVIZ_FUZZ_EXAMPLES", "40"))  # per test; benchmarks/robustness.py runs more
FAST = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(max_examples=max(5, EXAMPLES // 3), deadline=None)  # a backward pass per example
MAX_MESSAGE = 400  # an error shown to the user is a sentence, not the user's whole paste

# What a visitor pastes: nothing, blanks, emoji (with joiners), right-to-left text and overrides,
# control characters and an escape sequence, line/paragraph separators, a replacement character, a book.
# (No lone surrogates: the browser's UTF-8 encoder and the URL decoder turn them into U+FFFD first.)
NASTY = ["", " ", "\t\n \r\n", "😀🎭 👩‍👩‍👧 🇺🇦", "שלום עולם مرحبا بالعالم", "\u202eevil\u202c \u200f\u200b",
         "\x00\x01\x1b[31mred\x7f\x07", "To be\u2028or not\u2029to be", "\ufffd lone", "我昨天在公园吃了一个苹果",
         "a" * 100_000, "To be, or not to be " * 5000]
texts = st.one_of(st.sampled_from(NASTY), st.text(max_size=300))


def count(name: str) -> None:
    FUZZ_CASES[name] += 1


def documented(fn, *args, **kwargs):
    """Call ``fn``; return (result, None) or (None, message) for a documented ValueError."""
    try:
        return fn(*args, **kwargs), None
    except ValueError as e:  # TokenizerError, VocabularyError, CheckpointError, ConfigError are ValueErrors
        message = str(e)
        assert message and len(message) < MAX_MESSAGE, f"{type(e).__name__} message of {len(message)} chars"
        return None, message


# ------------------------------------------------------------------ models the inputs go to (tiny, built once)
@functools.cache
def char_lm():
    from tests.conftest import build_tiny_lm

    return build_tiny_lm("lstm", seed=5)


@functools.cache
def word_lm():
    from seqviz.config import LMConfig
    from seqviz.models.recurrent import RecurrentLM

    torch.manual_seed(0)
    tok = Tokenizer.train("word", "to be or not to be that is the question , : .")
    return RecurrentLM(LMConfig(cell="gru", n_layers=1, d_embed=4, d_hidden=6, tokenizer="word",
                                vocab_size=len(tok)), tok).eval().requires_grad_(False)


@functools.cache
def seq2seq():
    from tests.seq2seq.conftest import make_model

    return make_model().requires_grad_(False)


@functools.cache
def vectors():
    from seqviz.word2vec.vectors import WordVectors

    words = ["he", "she", "king", "queen", "man", "woman", "love", "東京", "naïve"]
    return WordVectors(words, np.random.default_rng(0).normal(size=(len(words), 5)), np.arange(9, 0, -1))


# ------------------------------------------------------------------ tokenizers
@FAST
@given(texts)
def test_char_tokenizer_round_trips_any_text(text):
    count("char tokenizer")
    tok = Tokenizer.train("char", text)
    enc = tok.encode(text)
    assert enc.unknown == [] and enc.pieces == list(text) and tok.decode(enc.ids) == text
    fixed = char_lm().tokenizer.encode(text)  # a fixed vocabulary: unknown characters become <unk>
    assert {p for p in fixed.pieces if p not in fixed.unknown} <= set(char_lm().tokenizer.tokens)
    assert set(fixed.unknown) == {ch for ch in text if ch not in char_lm().tokenizer.index}


@FAST
@given(texts)
def test_word_tokenizer_keeps_every_word(text):
    count("word tokenizer")
    tok = Tokenizer.train("word", text[:5000])
    enc = tok.encode(text[:5000])
    assert enc.pieces == WORD_RE.findall(text[:5000]) and enc.unknown == []
    assert all(0 <= i < len(tok) for i in enc.ids)


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner,
                                                                                         max_size=4), max_leaves=12)
vocab_like = st.fixed_dictionaries({"kind": st.one_of(st.sampled_from(["char", "word", "unit"]), json_values),
                                    "tokens": st.one_of(st.lists(st.text(max_size=3), max_size=8), json_values)})


@FAST
@given(st.one_of(vocab_like, json_values))
def test_vocabulary_json_is_a_vocabulary_or_a_tokenizer_error(data):
    count("vocabulary json")
    from seqviz.seq2seq.vocab import Vocab

    for cls in (Tokenizer, Vocab):
        try:
            vocab = cls.from_dict(data)
        except TokenizerError as e:
            assert str(e)
        else:
            expected = expected_tokens(data)
            assert len(vocab) == len(expected) and vocab.tokens == expected


def expected_tokens(data) -> list:
    """The tokens in id order of any vocabulary form seqviz documents (a list, {"tokens"|"words": [...]},
    {token: id}): the oracle, written from docs/loading.md's description rather than the parser."""
    if isinstance(data, list):
        return data
    if "tokens" in data or "words" in data:
        return data.get("tokens", data.get("words"))
    return sorted(data, key=data.get)


@FAST
@given(st.one_of(st.sampled_from(NASTY), st.text(alphabet="我昨天在公园吃了一个苹果他们 明年 abcXYZ\n\t😀", max_size=80)))
def test_seq2seq_source_units_keep_everything_but_whitespace(text):
    count("seq2seq vocabulary")
    enc = seq2seq().src_vocab.encode(text)
    assert "".join(enc.pieces) == "".join(text.split())
    assert len(enc.ids) == len(enc.pieces) and set(enc.unknown) <= set(enc.pieces)


# ------------------------------------------------------------------ the pages' text inputs, at the library
@FAST
@given(texts)
def test_language_model_page_text(text):
    count("language-model text")
    from seqviz.introspect.language import MAX_CHARS, MAX_TOKENS, continue_text, prepare, score_text

    for model in (char_lm(), word_lm()):
        scored, problem = documented(score_text, model, text)
        ids, _, _, _ = prepare(model.tokenizer, text)
        if scored is None:
            assert not ids, problem
        else:
            assert len(scored.table) == min(len(ids), MAX_TOKENS) and scored.n_scored == len(scored.table) - 1
            assert np.isfinite(scored.table["loss"].iloc[1:]).all()
        sample, problem = documented(continue_text, model, text, n=4, seed=1)
        assert (sample is None) == (not ids) and len(text[:MAX_CHARS]) <= MAX_CHARS


@FAST
@given(texts)
def test_trajectory_and_gate_pages_text(text):
    count("trajectory/gate text")
    from seqviz.inputs import MAX_TEXTS, MAX_TOKENS, read_texts, split_texts

    ids, notices = read_texts(char_lm(), text)
    assert len(ids) <= MAX_TEXTS and all(0 < len(s) <= MAX_TOKENS for s in ids)
    assert len(ids) <= len(split_texts(text)) and all(len(n) < MAX_MESSAGE for n in notices)
    if ids:
        trace = char_lm().trace([list(s) for s in ids])
        assert torch.isfinite(trace["layers.1.h"][trace["mask"]]).all()


@SLOW
@given(texts)
def test_gradient_flow_page_text(text):
    count("gradient-flow text")
    from seqviz.introspect.gradients import gradient_matrix
    from seqviz.views.gradients import _ids  # what both gradient pages' views read

    got, problem = documented(_ids, char_lm(), text)
    if got is not None:
        ids = torch.tensor([got[:12]])
        G = gradient_matrix(char_lm(), ids)
        T = ids.shape[1]
        assert G.shape == (T - 1, T) and np.isfinite(G[np.tril_indices(T - 1, 0, T)]).all()  # NaN only above k = t


@FAST
@given(texts)
def test_attention_page_text(text):
    count("attention text")
    from seqviz.introspect.attention import (MAX_PIECE_CHARS, MAX_SOURCE_CHARS, MAX_SOURCE_UNITS, alignment_frame,
                                             translate_text)

    result, problem = documented(translate_text, seq2seq(), text)
    units = len(seq2seq().src_vocab.encode(text[:MAX_SOURCE_CHARS + 1]).ids)
    assert (result is None) == (len(text) > MAX_SOURCE_CHARS or units == 0 or units > MAX_SOURCE_UNITS), problem
    if result is not None:
        assert len(result["pieces"]) == units and all(len(p) <= MAX_PIECE_CHARS for p in result["pieces"])
        assert set(result["unknown"]) <= set(result["pieces"])
        frame = alignment_frame(result["trace"], 0, 1.0, source=result["pieces"])
        assert len(frame) <= units * seq2seq().config.max_target_len


@FAST
@given(texts, texts, texts)
def test_word2vec_page_words(a, b, c):
    count("word2vec words")
    from seqviz.word2vec.analogy import analogy, bias_projection, nearest

    wv = vectors()
    result, _ = documented(analogy, wv, a, b, c, "3cosmul", 3, True, c or None)
    known = all(wv.find(w) is not None for w in (a, b, c) if w.strip()) and all(w.strip() for w in (a, b, c))
    assert (result is not None) == known
    table, _ = documented(nearest, wv, a, 3)
    assert (table is None) == (not a.strip() or wv.find(a) is None)
    out, _ = documented(bias_projection, wv, [w for w in (a + "," + b).split(",")])
    assert out is not None  # unknown words are listed as missing, not raised


# ------------------------------------------------------------------ file parsers
@FAST
@given(st.binary(max_size=2000))
def test_vector_parser_takes_any_bytes(data):
    count("vector bytes")
    from seqviz.word2vec.formats import parse_vectors

    wv, _ = documented(parse_vectors, data, "fuzz.bin")
    if wv is not None:
        assert np.isfinite(wv.vectors).all() and len(set(wv.words)) == len(wv.words)


word = st.text(st.characters(blacklist_categories=("Cc", "Cs", "Zs", "Zl", "Zp")), min_size=1, max_size=8)


@FAST
@given(st.lists(word, min_size=1, max_size=6, unique=True), st.integers(1, 4), st.booleans(), st.data())
def test_vector_files_round_trip(words, dims, binary, data):
    count("vector files")
    from seqviz.word2vec.formats import parse_vectors

    rows = np.array(data.draw(st.lists(st.lists(st.floats(-1e6, 1e6, width=32), min_size=dims, max_size=dims),
                                       min_size=len(words), max_size=len(words))), dtype=np.float32)
    head = f"{len(words)} {dims}\n".encode()
    if binary:
        body = b"".join(w.encode() + b" " + r.astype("<f4").tobytes() for w, r in zip(words, rows))
    else:
        body = b"".join((w + " " + " ".join(repr(float(x)) for x in r) + "\n").encode() for w, r in zip(words, rows))
    wv, problem = documented(parse_vectors, head + body, "fuzz")
    if wv is None:  # only a binary float whose bytes hide the format may be refused; never a crash
        assert binary, problem
        return
    assert wv.words == words and np.array_equal(wv.vectors, rows)


@FAST
@given(st.one_of(st.binary(max_size=300), json_values.map(lambda v: json.dumps(v).encode())))
def test_json_reader_takes_any_bytes(data):
    count("json bytes")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "config.json"
        path.write_bytes(data)
        got, problem = documented(read_json, path)
        assert (got is None) or isinstance(got, dict)


pair_lines = st.lists(st.one_of(st.text(max_size=12), st.tuples(st.text(max_size=8), st.text(max_size=8)).map(
    "\t".join)), max_size=8).map("\n".join)


@FAST
@given(st.one_of(st.binary(max_size=300), pair_lines.map(str.encode)))
def test_a_pairs_file_of_any_bytes_is_read_or_refused_by_its_line(data):
    """The seq2seq pages' pairs file (seqviz.seq2seq.pairs_file): pairs that are each two non-empty sides, or a
    CheckpointError that names the line (or says no pair is left)."""
    from seqviz.seq2seq.pairs_file import read_pairs

    count("pairs file bytes")
    got, problem = documented(read_pairs, data, "mine.tsv")
    if got is None:
        assert problem.startswith("mine.tsv: line ") or "no pair left" in problem, problem
        return
    assert got.pairs and all(s and t and "\t" not in s + t for s, t in got.pairs)


@functools.cache
def good_checkpoint() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="seqviz-fuzz-")) / "ck"
    return char_lm().save_pretrained(folder)


config_values = st.one_of(st.sampled_from(["rnn", "gru", "lstm", "char", "word", "recurrent_lm", "seq2seq",
                                           "word2vec", "mamba"]), st.integers(-3, 100_000), st.floats(), st.booleans(),
                          st.none(), st.text(max_size=4), st.lists(st.integers(), max_size=2))
config_keys = st.sampled_from(["model_type", "cell", "n_layers", "d_embed", "d_hidden", "dropout", "tokenizer",
                               "vocab_size", "dim", "bogus"])


@FAST
@given(st.dictionaries(config_keys, config_values, max_size=4))
def test_any_config_json_loads_or_is_refused(changes):
    count("config json")
    from seqviz.registry import load

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(shutil.copytree(good_checkpoint(), Path(tmp) / "ck"))
        config = json.loads((folder / "config.json").read_text())
        config.update(changes)
        (folder / "config.json").write_text(json.dumps(config))
        model, problem = documented(load, folder)
        if model is not None:  # accepted: it must be the model the weights describe
            assert model.config.d_hidden == char_lm().config.d_hidden and not model.training


member = st.one_of(st.sampled_from(["config.json", "../x.json", "/abs.json", "a/../../x", "C:/x", "a\\b", ".hidden",
                                    "dir/", "ok/model.safetensors", "\x1b.json", "a" * 300]),
                   st.text(max_size=20))


@pytest.mark.filterwarnings("ignore:Duplicate name")  # zipfile warns; extract_upload must still cope
@FAST
@given(st.lists(st.tuples(member, st.binary(max_size=64)), min_size=1, max_size=4))
def test_any_zip_upload_is_unpacked_inside_or_refused(entries):
    count("zip uploads")
    from seqviz.uploads import extract_upload

    with tempfile.TemporaryDirectory() as tmp:
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as z:
            for name, data in entries:
                try:
                    z.writestr(name, data)
                except (ValueError, IndexError, UnicodeEncodeError):  # zipfile will not write some names
                    return
        dest = Path(tmp) / "box" / "out"
        got, problem = documented(extract_upload, [("up.zip", buf.getvalue())], dest)
        outside = [p for p in Path(tmp).rglob("*") if dest not in p.parents and p != dest and p != dest.parent]
        assert outside == [], outside  # nothing was written beside or above the destination
        if got is not None:
            assert dest in got.parents or got == dest



# ------------------------------------------------------------------ the pages' own text boxes, through AppTest
APP_NASTY = [" \t\n ", "😀 שלום مرحبا \u202eevil\u202c \x00\x1b[31m\x07 a\u2028b 我昨天", "a" * 100_000]


@pytest.fixture(scope="module")
def app_roots(hardening_root):
    import streamlit

    mp = pytest.MonkeyPatch()
    mp.setenv("SEQVIZ_CHECKPOINTS", str(hardening_root))
    streamlit.cache_data.clear()
    streamlit.cache_resource.clear()
    yield hardening_root
    mp.undo()


def _pages_with_text():
    from appkit.registry import PAGES

    return [p for p in PAGES if p.exists and p.model_type is not None]


@pytest.mark.parametrize("page", _pages_with_text(), ids=lambda p: p.path)
def test_page_text_boxes_take_nasty_strings(page, app_roots):
    from streamlit.testing.v1 import AppTest

    from tests.conftest import ROOT

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.switch_page(f"pages/{page.path}").run()
    assert not at.exception, at.exception
    boxes = [w for kind in ("text_input", "text_area") for w in getattr(at.main, kind)]
    if not boxes:
        pytest.skip(f"pages/{page.path} has no text box")
    for text in APP_NASTY:
        for box in [w for kind in ("text_input", "text_area") for w in getattr(at.main, kind)]:
            box.input(text)
        at.run()
        count("page text boxes (AppTest)")
        assert not at.exception, f"{page.path} with {text[:30]!r}: {at.exception}"
        assert not at.error, f"{page.path} with {text[:30]!r}: {[e.value for e in at.error]}"
        shown = [e.value for kind in ("warning", "info") for e in getattr(at, kind)]
        assert all(len(m) < 2000 for m in shown), f"{page.path}: a message repeats the whole paste"
