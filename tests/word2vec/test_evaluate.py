"""Analogy and similarity evaluation against gensim's evaluators and scipy's Spearman."""

from __future__ import annotations

import numpy as np
import pytest
from gensim.models import KeyedVectors
from scipy.stats import pearsonr, spearmanr
from threadpoolctl import threadpool_limits

from seqviz.word2vec.evaluate import (evaluate_all, evaluate_analogies, evaluate_similarity, read_questions,
                                      spearman)
from seqviz.word2vec.vectors import WordVectors

QUESTIONS = """: capital-common-countries
Athens Greece Berlin Germany
Athens Greece Paris France
Berlin Germany Paris France
Paris France Rome Italy
Rome Italy Tokyo Japan
: family
boy girl brother sister
brother sister father mother
king queen man woman
: gram1-adjective-to-adverb
quick quickly slow slowly
slow slowly calm calmly
calm calmly rare rarely
"""


def structured_vectors(seed: int = 0) -> KeyedVectors:
    """Capitals = country + one offset (+ noise); family pairs share a gender offset; adverbs don't."""
    rng = np.random.default_rng(seed)
    dim = 24
    offset, gender = rng.normal(size=dim), rng.normal(size=dim)
    vecs = {}
    for country, capital in [("greece", "athens"), ("germany", "berlin"), ("france", "paris"),
                             ("italy", "rome"), ("japan", "tokyo")]:
        vecs[country] = rng.normal(size=dim)
        vecs[capital] = vecs[country] - offset + 0.05 * rng.normal(size=dim)
    for male, female in [("boy", "girl"), ("brother", "sister"), ("father", "mother"), ("king", "queen")]:
        vecs[male] = rng.normal(size=dim)
        vecs[female] = vecs[male] + gender + 0.05 * rng.normal(size=dim)
    for word in ["quick", "quickly", "slow", "slowly", "calm", "calmly", "rare", "rarely", "the", "of"]:
        vecs[word] = rng.normal(size=dim)
    # 'man' and 'woman' are left out: one family question is not covered
    kv = KeyedVectors(dim)
    kv.add_vectors(list(vecs), np.array(list(vecs.values()), dtype=np.float32))
    return kv


def gensim_sections(kv, path) -> dict[str, tuple[int, int]]:
    """section -> (covered, correct) from gensim's evaluate_word_analogies."""
    with threadpool_limits(1, user_api="blas"):  # gensim's per-question products, not slowed by spinning threads
        _, sections = kv.evaluate_word_analogies(str(path), restrict_vocab=len(kv))
    return {s["section"]: (len(s["correct"]) + len(s["incorrect"]), len(s["correct"])) for s in sections}


def ours(table) -> dict[str, tuple[int, int]]:
    return {r.section: (r.covered, r.correct) for r in table.itertuples()}


def test_analogies_match_gensim_on_structured_vectors(tmp_path):
    path = tmp_path / "q.txt"
    path.write_text(QUESTIONS)
    kv = structured_vectors()
    table = evaluate_analogies(WordVectors(list(kv.index_to_key), kv.vectors), path)
    ref = gensim_sections(kv, path)
    got = ours(table)
    for name in ("capital-common-countries", "family", "gram1-adjective-to-adverb"):
        assert got[name] == ref[name]
    assert got["total"] == ref["Total accuracy"]
    # the structure is real: capitals all right, family right where covered, adverbs (random) not
    assert got["capital-common-countries"] == (5, 5) and got["family"] == (2, 2)
    row = table.set_index("section").loc["family"]
    assert row["coverage"] == pytest.approx(2 / 3) and row["accuracy"] == 1.0
    sem = table.set_index("section").loc["semantic"]
    assert (sem["questions"], sem["covered"], sem["correct"]) == (8, 7, 7)


def test_read_questions_counts_sections(tmp_path):
    path = tmp_path / "q.txt"
    path.write_text(QUESTIONS)
    sections = read_questions(path)
    assert [(n, len(q)) for n, q in sections] == [("capital-common-countries", 5), ("family", 3),
                                                   ("gram1-adjective-to-adverb", 3)]
    assert sections[0][1][0] == ("athens", "greece", "berlin", "germany")
    path.write_text("Athens Greece Berlin\n")
    with pytest.raises(ValueError, match="line 1: expected ': section' or four words"):
        read_questions(path)


def test_google_analogies_match_gensim_on_the_shipped_vectors(shipped_vectors, word_benchmarks):
    wv = shipped_vectors
    kv = KeyedVectors(wv.dim)
    kv.add_vectors(wv.words, wv.vectors)
    path = word_benchmarks / "questions-words.txt"
    table = evaluate_analogies(wv, path)
    ref = gensim_sections(kv, path)
    got = ours(table)
    assert {k: v for k, v in got.items() if k in ref} == {k: v for k, v in ref.items() if k != "Total accuracy"}
    assert got["total"] == ref["Total accuracy"]
    assert got["total"][0] > 2000 and got["total"][1] > 20  # thousands covered, dozens right


def test_spearman_with_ties_matches_scipy():
    rng = np.random.default_rng(1)
    x = rng.integers(0, 6, size=50).astype(float)  # many ties
    y = x + rng.normal(size=50)
    assert spearman(x, y) == pytest.approx(spearmanr(x, y).statistic, abs=1e-12)
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)


def test_similarity_against_scipy_and_gensim(tmp_path):
    kv = structured_vectors()
    wv = WordVectors(list(kv.index_to_key), kv.vectors)
    lines = ["# comment", "# Word 1\tWord 2\tHuman (mean)", "king\tqueen\t8.5", "boy\tgirl\t8.0",
             "paris\tfrance\t7.0", "Rome\tItaly\t7.0", "quick\tslow\t2.0", "calm\trare\t1.0",
             "man\twoman\t9.0", "the\tof\t0.5", "tokyo\tfrance\t3.0"]
    path = tmp_path / "pairs.tsv"
    path.write_text("\n".join(lines) + "\n")
    got = evaluate_similarity(wv, path)
    pairs = [line.split("\t") for line in lines[2:] if not line.startswith("man")]
    unit = {w: kv[w.lower()] / np.linalg.norm(kv[w.lower()]) for p in pairs for w in p[:2]}
    cos = [float(unit[a] @ unit[b]) for a, b, _ in pairs]
    human = [float(h) for _, _, h in pairs]
    assert got["spearman"] == pytest.approx(spearmanr(human, cos).statistic, abs=1e-6)
    assert got["pearson"] == pytest.approx(pearsonr(human, cos).statistic, abs=1e-6)
    assert (got["pairs"], got["used"], got["oov"]) == (9, 8, 1)
    (g_pearson, _), (g_spearman, _), g_oov = kv.evaluate_word_pairs(str(path), restrict_vocab=len(kv))
    assert got["spearman"] == pytest.approx(g_spearman, abs=1e-6)
    assert got["oov"] / got["pairs"] * 100 == pytest.approx(g_oov)


@pytest.mark.parametrize("name", ["wordsim353.tsv", "simlex999.txt"])
def test_real_similarity_sets_against_gensim(shipped_vectors, word_benchmarks, name):
    wv = shipped_vectors
    kv = KeyedVectors(wv.dim)
    kv.add_vectors(wv.words, wv.vectors)
    got = evaluate_similarity(wv, word_benchmarks / name)
    _, (g_spearman, _), g_oov = kv.evaluate_word_pairs(str(word_benchmarks / name), restrict_vocab=len(kv))
    assert got["spearman"] == pytest.approx(g_spearman, abs=1e-6)
    assert got["oov"] / got["pairs"] * 100 == pytest.approx(g_oov)
    assert got["pairs"] == {"wordsim353.tsv": 353, "simlex999.txt": 999}[name]


def test_evaluate_all_reports_missing_benchmarks(tmp_path):
    wv = WordVectors(["a", "b", "c"], np.eye(3))
    report = evaluate_all(wv, tmp_path)
    assert set(report) == {"analogies", "wordsim353", "simlex999"}
    assert all("not found" in v["skipped"] for v in report.values())
