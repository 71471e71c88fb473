"""The shipped word2vec checkpoints: small, loadable, queen in the top 3, and cards that match a recomputation."""

from __future__ import annotations

import pytest

from seqviz.introspect.wordmap import stored_word_map, trustworthiness
from seqviz.registry import load
from seqviz.word2vec.analogy import analogy
from seqviz.word2vec.evaluate import evaluate_all
from seqviz.word2vec.vectors import WordVectors
from tests.word2vec.conftest import SHIPPED

FOLDERS = {"skipgram": SHIPPED / "word2vec-shakespeare", "cbow": SHIPPED / "word2vec-shakespeare-cbow"}


@pytest.fixture(scope="module", params=list(FOLDERS))
def shipped(request):
    folder = FOLDERS[request.param]
    if not folder.is_dir():
        pytest.skip(f"{folder} is not shipped in this copy")
    return request.param, folder, load(folder)


def test_small_and_loadable(shipped):
    arch, folder, wv = shipped
    size = sum(p.stat().st_size for p in folder.iterdir())
    assert size < 5 * 2**20, f"{folder.name} is {size / 2**20:.1f} MiB"
    assert isinstance(wv, WordVectors) and wv.config.arch == arch and wv.card["settings"]["arch"] == arch
    assert wv.counts is not None and len(wv) == wv.card["vocabulary"]


def test_king_minus_man_plus_woman_puts_queen_in_the_top_3(shipped):
    _, _, wv = shipped
    result = analogy(wv, "man", "woman", "king", k=3, expected="queen")
    assert result.expected_rank <= 3, list(result.table["word"])
    assert [w for w, _ in result.table[["word", "score"]].values] == [w for w, _ in wv.card["example"]["top5"][:3]]


def test_both_architectures_share_corpus_and_settings():
    if not all(f.is_dir() for f in FOLDERS.values()):
        pytest.skip("both checkpoints are needed")
    cards = {a: load(f).card for a, f in FOLDERS.items()}
    settings = [{k: v for k, v in c["settings"].items() if k != "arch"} for c in cards.values()]
    assert settings[0] == settings[1]
    assert cards["skipgram"]["corpus_info"] == cards["cbow"]["corpus_info"]


def test_card_evaluation_is_what_the_vectors_score(shipped, word_benchmarks):
    _, _, wv = shipped
    fresh = evaluate_all(wv, word_benchmarks)
    card = wv.card["evaluation"]
    for key in ("accuracy", "coverage", "covered", "questions", "nearest_c_accuracy", "3cosmul_accuracy"):
        assert fresh["analogies"][key] == card["analogies"][key], key
    assert fresh["analogies"]["sections"] == card["analogies"]["sections"]
    for name in ("wordsim353", "simlex999"):
        assert {k: fresh[name][k] for k in ("spearman", "pairs", "oov")} == \
               {k: card[name][k] for k in ("spearman", "pairs", "oov")}
    assert wv.card["accuracy_google_analogies"] == card["analogies"]["accuracy"]


def test_stored_word_map_matches_its_card(shipped):
    _, _, wv = shipped
    m = stored_word_map(wv)
    assert m is not None and m.method == wv.card["word_map"]["method"] == "tsne"
    assert m.words[: m.n] == wv.top_words(m.n)
    assert {"man", "woman", "king", "queen"} <= set(m.words)
    recomputed = trustworthiness(wv.unit[[wv.index[w] for w in m.words]], m.coords)
    assert recomputed == pytest.approx(wv.card["word_map"]["trustworthiness"], abs=2e-3)
