"""Intrinsic evaluation: the Google analogy set per section with coverage, WordSim-353 and SimLex-999.

* Analogies (Mikolov et al. 2013, ``questions-words.txt``): a question a b c d counts when
  all four words are in the vocabulary (coverage); it is correct when d is the best-scoring
  word with a, b, c excluded, over the whole vocabulary. Words are lower-cased and, for a
  cased vocabulary, a lower-cased word maps to its most frequent casing (as gensim's
  ``evaluate_word_analogies(case_insensitive=True)`` does).
* A control in Linzen's (2016) spirit: "nearest to c" answers with c's nearest neighbour
  (a and b ignored, the three query words excluded). What 3CosAdd gets right beyond that
  is what the offset b − a adds.
* Similarity (Finkelstein et al. 2002; Hill et al. 2015): Spearman's rho between human
  scores and cosines over the pairs whose two words are known; pairs out of vocabulary are
  counted, not scored.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd

from seqviz.word2vec.analogy import EPS, METHODS, _method
from seqviz.word2vec.vectors import UnitRows, WordVectors, one_blas_thread

BENCHMARKS = {"analogies": "questions-words.txt", "wordsim353": "wordsim353.tsv",
              "simlex999": "simlex999.txt"}
BATCH = 256  # questions scored at once: [256, V] float32 is ~10 MB for V = 10,000


def benchmark_root() -> Path:
    """The data cache's copy of the benchmarks (``python -m seqviz data fetch word-benchmarks``), else the
    identical files gensim ships as test data (``gensim.test.utils.datapath``), so a fresh clone evaluates."""
    from seqviz.data.corpus import DATA_ROOT

    cached = DATA_ROOT / "word-benchmarks"
    if (cached / BENCHMARKS["analogies"]).is_file():
        return cached
    from gensim.test.utils import datapath

    return Path(datapath(BENCHMARKS["analogies"])).parent


def read_questions(path) -> list[tuple[str, list[tuple[str, str, str, str]]]]:
    """Sections of a Google-format analogy file: ``[(name, [(a, b, c, d), ...]), ...]``."""
    sections: list = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        if line.startswith(":"):
            sections.append((line[1:].strip(), []))
            continue
        words = line.lower().split()
        if len(words) != 4 or not sections:
            raise ValueError(f"{path}, line {number}: expected ': section' or four words, got {line!r}")
        sections[-1][1].append(tuple(words))
    return sections


def _lower_index(wv: WordVectors, restrict_vocab: int | None) -> dict[str, int]:
    n = len(wv) if restrict_vocab is None else min(len(wv), int(restrict_vocab))
    # reversed: the first (most frequent) casing of a word wins
    return {w.lower(): i for i, w in reversed(list(enumerate(wv.words[:n])))}


def evaluate_analogies(wv: WordVectors, path=None, method: str = "3cosadd", restrict_vocab: int | None = None,
                       eps: float = EPS) -> pd.DataFrame:
    """One row per section plus 'semantic', 'syntactic' and 'total'.

    Columns: section, questions, covered, correct, accuracy (correct / covered), coverage
    (covered / questions), nearest_c_correct (the Linzen-style control).
    """
    method = _method(method)
    path = benchmark_root() / BENCHMARKS["analogies"] if path is None else path
    index = _lower_index(wv, restrict_vocab)
    unit = wv.unit.head(len(wv) if restrict_vocab is None else min(len(wv), int(restrict_vocab)))
    rows = []
    for name, questions in read_questions(path):
        ids = np.array([[index[w] for w in q] for q in questions if all(w in index for w in q)],
                       dtype=np.int64).reshape(-1, 4)
        correct = control = 0
        for begin in range(0, len(ids), BATCH):
            right, near_right = _score_batch(unit, ids[begin: begin + BATCH], method, eps)
            correct, control = correct + right, control + near_right
        rows.append({"section": name, "questions": len(questions), "covered": len(ids),
                     "correct": correct, "nearest_c_correct": control})
    table = pd.DataFrame(rows)
    syntactic = table["section"].str.startswith("gram")
    totals = [("semantic", table[~syntactic]), ("syntactic", table[syntactic]), ("total", table)]
    extra = pd.DataFrame([{"section": name, **part[["questions", "covered", "correct",
                                                     "nearest_c_correct"]].sum().to_dict()}
                          for name, part in totals])
    table = pd.concat([table, extra], ignore_index=True)
    covered = table["covered"].replace(0, np.nan)
    table["accuracy"] = table["correct"] / covered
    table["nearest_c_accuracy"] = table["nearest_c_correct"] / covered
    table["coverage"] = table["covered"] / table["questions"]
    table.attrs["method"] = METHODS[method]
    return table


def _score_batch(unit: UnitRows, q: np.ndarray, method: str, eps: float) -> tuple[int, int]:
    """Correct answers among questions ``q`` [Q, 4] (rows a, b, c, d): by ``method``, and by nearest-to-c."""
    a, b, c, d = unit[q[:, 0]], unit[q[:, 1]], unit[q[:, 2]], q[:, 3]
    with one_blas_thread():  # (unit @ x.T).T: [Q, V], the cosines of each question's x with every word
        if method == "3cosadd":
            scores = (unit @ (b - a + c).T).T  # the norm of b - a + c does not change argmax
        else:
            ca, cb, cc = (((unit @ x.T).T + 1.0) / 2.0 for x in (a, b, c))
            scores = cb * cc / (ca + eps)
        near = (unit @ c.T).T
    for s in (scores, near):
        np.put_along_axis(s, q[:, :3], -np.inf, axis=1)
    return int((scores.argmax(axis=1) == d).sum()), int((near.argmax(axis=1) == d).sum())


def read_pairs(path) -> list[tuple[str, str, float]]:
    """(word1, word2, human score) from a tab-separated file; '#' lines are comments."""
    pairs = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split("\t")
        try:
            pairs.append((parts[0].lower(), parts[1].lower(), float(parts[2])))
        except (IndexError, ValueError):
            raise ValueError(f"{path}, line {number}: expected word<TAB>word<TAB>score, got {line!r}") from None
    return pairs


def spearman(x, y) -> float:
    """Spearman's rho: Pearson's r of the ranks, ties given their average rank."""
    rx = pd.Series(x, dtype=float).rank(method="average").to_numpy()
    ry = pd.Series(y, dtype=float).rank(method="average").to_numpy()
    rx, ry = rx - rx.mean(), ry - ry.mean()
    denom = np.sqrt((rx * rx).sum() * (ry * ry).sum())
    return float((rx * ry).sum() / denom) if denom > 0 else float("nan")


def evaluate_similarity(wv: WordVectors, path, restrict_vocab: int | None = None) -> dict:
    """Spearman rho (and Pearson r) of cosine vs human score; pairs and out-of-vocabulary counts."""
    index = _lower_index(wv, restrict_vocab)
    pairs = read_pairs(path)
    known = [(index[a], index[b], h) for a, b, h in pairs if a in index and b in index]
    if len(known) < 3:
        return {"spearman": None, "pearson": None, "pairs": len(pairs), "used": len(known),
                "oov": len(pairs) - len(known)}
    ia, ib, human = (np.array(col) for col in zip(*known))
    cosine = np.einsum("ij,ij->i", wv.unit[ia], wv.unit[ib])
    pearson = float(np.corrcoef(cosine, human)[0, 1])
    return {"spearman": spearman(human, cosine), "pearson": pearson, "pairs": len(pairs),
            "used": len(known), "oov": len(pairs) - len(known)}


def evaluate_all(wv: WordVectors, root=None) -> dict:
    """The card's evaluation block; benchmarks missing from ``root`` are reported as skipped."""
    root = benchmark_root() if root is None else Path(root)
    out: dict = {}
    path = root / BENCHMARKS["analogies"]
    if path.is_file():
        start = time.perf_counter()
        add = evaluate_analogies(wv, path, "3cosadd")
        mul = evaluate_analogies(wv, path, "3cosmul")
        total = add.set_index("section")
        out["analogies"] = {
            "file": path.name, "method": "3CosAdd", "exclude_query_words": True,
            "sections": _records(add), "accuracy": _f(total.loc["total", "accuracy"]),
            "coverage": _f(total.loc["total", "coverage"]),
            "covered": int(total.loc["total", "covered"]), "questions": int(total.loc["total", "questions"]),
            "semantic_accuracy": _f(total.loc["semantic", "accuracy"]),
            "syntactic_accuracy": _f(total.loc["syntactic", "accuracy"]),
            "nearest_c_accuracy": _f(total.loc["total", "nearest_c_accuracy"]),
            "3cosmul_accuracy": _f(mul.set_index("section").loc["total", "accuracy"]),
            "seconds": round(time.perf_counter() - start, 2)}
    else:
        out["analogies"] = {"skipped": f"{path} not found"}
    for key in ("wordsim353", "simlex999"):
        path = root / BENCHMARKS[key]
        out[key] = ({"file": path.name, **{k: _f(v) if isinstance(v, float) else v
                                           for k, v in evaluate_similarity(wv, path).items()}}
                    if path.is_file() else {"skipped": f"{path} not found"})
    return out


def _f(x) -> float | None:
    return None if x is None or (isinstance(x, float) and np.isnan(x)) else round(float(x), 4)


def _records(table: pd.DataFrame) -> list[dict]:
    keep = ["section", "questions", "covered", "correct", "accuracy", "coverage", "nearest_c_accuracy"]
    return [{k: (_f(v) if isinstance(v, float) else (int(v) if k != "section" else v)) for k, v in r.items()}
            for r in table[keep].to_dict("records")]


def why_low(card: dict) -> str:
    """The note shown beside the numbers: why a small corpus scores low, and why a hit is not proof."""
    corpus = card.get("corpus_info", {})
    size = (f"{corpus['words']:,} words of {corpus['corpus']} and a vocabulary of {card.get('vocabulary', 0):,}"
            if "words" in corpus else "a corpus of unknown size")
    return ("**Why the numbers are low.** These vectors learned from " + size + ", while the benchmarks ask "
            "about modern capitals, currencies and verb forms: most questions fall outside the vocabulary, and "
            "the ones left turn on words seen only a few times. Mikolov et al. (2013) trained on billions of words. "
            "**Why a hit is not proof.** Linzen (2016) shows that many analogies are solved by c's "
            "neighbourhood alone, and frequent words crowd every neighbourhood; excluding a, b and c also "
            "hides how often b or c is itself the nearest word. Compare the accuracy with the "
            "nearest-to-c control beside it.")


def card_sections(evaluation: dict) -> pd.DataFrame:
    """The per-section table stored in a card, back as a DataFrame (for the page and charts)."""
    return pd.DataFrame(evaluation.get("analogies", {}).get("sections", []))
