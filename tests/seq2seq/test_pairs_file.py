"""A user's pairs file (TSV source<TAB>target): read, tokenised by the model, and measured on by the views.

The views' numbers over the pairs are checked against the trained module's own decoding (``trained_plain``)
and sacrebleu, computed here without seqviz.
"""

from __future__ import annotations

import pytest
import sacrebleu

import seqviz
from seqviz.checkpoints import CheckpointError
from seqviz.seq2seq.pairs_file import read_pairs, read_pairs_file, tokenize_pairs
from seqviz.views import attention as att_views
from seqviz.views import decoding as dec_views
from seqviz.views.pairs import NEEDS_PAIRS, held_pairs, pairs_file
from tests.seq2seq import trained_plain as tp


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """(the trained tutorial module, the same weights opened by seqviz.load, the folder)."""
    module = tp.train()
    folder = tp.save(module, tmp_path_factory.mktemp("trained") / "tutorial")
    return module, seqviz.load(folder), folder


HELD = tp.all_pairs()[:40]  # 3 to 5 letters: one batch, so each decoder's length limit is 2 x 5 + 10
assert max(len(s.split()) for s, _ in HELD) == 5


def test_blank_lines_are_skipped_and_counted_and_the_cap_keeps_the_first():
    text = "a b\tB A\n\n  \nc\tC\r\nd e\tE D\n\n"
    read = read_pairs(text, "p.tsv", cap=None)
    assert read.pairs == (("a b", "B A"), ("c", "C"), ("d e", "E D"))
    assert (read.lines, read.blank, read.capped) == (6, 3, 0)
    capped = read_pairs(text.encode("utf-8"), "p.tsv", cap=2)
    assert capped.pairs == read.pairs[:2] and capped.capped == 1
    assert read_pairs("\ufeffx\ty\n", cap=None).pairs == (("x", "y"),)  # a byte-order mark is not the source


@pytest.mark.parametrize("text,problem", [
    ("a\tA\nb\tB\nno tab here\n", "line 3: expected source<TAB>target, found no tab"),
    ("a\tA\n\n\nb\tB\tC\n", "line 4: expected source<TAB>target, found 2 tabs (3 fields)"),
    ("a\tA\nb\t  \n", "line 2: the target is empty"),
    ("\tA\n", "line 1: the source is empty"),
    ("\n \n\n", "no pair left: the file has no line source<TAB>target (3 blank lines)"),
    ("", "no pair left"),
])
def test_a_malformed_file_names_the_line(text, problem):
    with pytest.raises(CheckpointError) as e:
        read_pairs(text, "mine.tsv", cap=None)
    assert str(e.value).startswith("mine.tsv: " + problem), str(e.value)


def test_bytes_that_are_not_utf8_name_their_line(tmp_path):
    path = tmp_path / "latin1.tsv"
    path.write_bytes("a\tA\nb\tB\ncaf\u00e9\tC\n".encode("latin-1"))
    with pytest.raises(CheckpointError, match="line 3: not UTF-8"):
        read_pairs_file(path)
    with pytest.raises(CheckpointError, match="no such file"):
        read_pairs_file(tmp_path / "missing.tsv")
    with pytest.raises(CheckpointError, match="at least 1"):
        read_pairs("a\tA", cap=0)


def test_tokens_and_unknown_share_by_the_models_own_tokenizers(trained):
    _module, model, _folder = trained
    pairs = [("a b c", "C B A"), ("a z c", "C Z A"), ("F e", "E F")]  # z, Z unknown; F known as f
    tok = tokenize_pairs(model, pairs)
    # the tutorial's vocabularies have no unknown token: a pair with z cannot be read and is left out
    assert tok.kept == (0, 2) and tok.dropped == 1
    assert tok.pairs[1].src == ("f", "e") and tok.pairs[1].tgt == ("E", "F")  # in the vocabulary's spelling
    assert tok.source_oov == pytest.approx(1 / 8) and tok.target_oov == pytest.approx(1 / 8)  # 1 of 3+3+2
    assert tok.unknown == ("z", "Z")
    with pytest.raises(ValueError, match="none of the 1 pairs"):
        tokenize_pairs(model, [("z", "Z")])


def test_the_pairs_file_view_says_what_was_used(trained):
    _module, model, _folder = trained
    data = "a b\tB A\n\nz\tZ\nc d e\tE D C\n".encode("utf-8")
    f = pairs_file(model, data, "mine.tsv", cap=None).facts
    assert f["pairs"] == (("a b", "B A"), ("c d e", "E D C")) and f["used"] == 2
    assert (f["blank"], f["dropped"], f["capped"]) == (1, 1, 0)
    assert f["source_oov"] == pytest.approx(1 / 6)
    assert pairs_file(model, data, "mine.tsv", cap=1).facts["capped"] == 2


def test_without_a_pairs_file_a_plain_model_has_no_pairs(trained):
    _module, model, _folder = trained
    with pytest.raises(ValueError, match="give a pairs file"):
        held_pairs(model)
    with pytest.raises(ValueError) as e:
        dec_views.held_out(model)
    assert str(e.value) == NEEDS_PAIRS


def test_teacher_forced_and_free_running_errors_over_the_pairs_are_the_modules(trained):
    module, model, _folder = trained
    view = dec_views.held_out(model, pairs=tuple(HELD))
    counts = [tp.forced(module, s, t) for s, t in HELD]
    assert view.facts["sentences"] == len(HELD)
    assert view.facts["tf_token_error"] == pytest.approx(sum(w for w, _ in counts) / sum(n for _, n in counts))
    exact = sum(tp.greedy(module, s) == t.split() for s, t in HELD) / len(HELD)
    assert view.facts["fr_exact"] == pytest.approx(exact)
    assert 0 < exact < 1  # a model that errs: the curves have something to show


def test_bleu_and_strategies_over_the_pairs_are_sacrebleu_of_the_modules_own_translations(trained):
    module, model, _folder = trained
    hyps = [" ".join(tp.greedy(module, s, max_len=20)) for s, _ in HELD]
    by_hand = sacrebleu.corpus_bleu(hyps, [[t for _, t in HELD]], tokenize="none").score
    table = att_views.measured_bleu(model, n=100, pairs=tuple(HELD))
    row = table.data.set_index("bucket").loc["all"]
    assert table.facts["pairs"] == len(HELD) and row["n"] == len(HELD)
    assert row["bleu"] == pytest.approx(by_hand, abs=0.01)  # the view rounds to 2 decimals
    strat = dec_views.strategies(model, n=100, ks=(1, 2), pairs=tuple(HELD))
    assert strat.facts["pairs"] == len(HELD)
    greedy_row = strat.data.set_index("strategy").loc["greedy"]
    assert greedy_row["bleu"] == pytest.approx(by_hand, abs=1e-9)
    assert greedy_row["exact"] == pytest.approx(sum(h == t for h, (_, t) in zip(hyps, HELD)) / len(HELD))


def test_the_menus_show_the_pairs_as_written(trained):
    _module, model, _folder = trained
    first = dec_views.held_out(model, pairs=tuple(HELD)).facts["first_errors"]
    menu = dec_views.pair_menu(model, tuple(HELD), first, n=5).facts
    assert menu["count"] == len(HELD) and len(menu["pairs"]) == 5
    label, src, ref = menu["pairs"][0]
    assert (src, ref) in HELD and label.startswith(f"{HELD.index((src, ref))}: {src}")
    examples = att_views.pair_examples(model, tuple(HELD)).facts["examples"]
    assert examples and {(s, r) for _k, s, r in examples} <= set(HELD)
    assert all(key == f"{len(s.split())} units: {s}" for key, s, _r in examples)
