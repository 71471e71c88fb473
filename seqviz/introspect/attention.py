"""Attention studies on seq2seq models: temperature re-softmax, how sharp each row is, BLEU by length, hits.

BLEU is sacrebleu's corpus BLEU on the pre-tokenized text (``tokenize="none"``): target
tokens joined by single spaces, so a unit is exactly one token of the model's vocabulary
(for the character-level date task, one character).
"""

from __future__ import annotations

import math
import unicodedata
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import sacrebleu

from seqviz.seq2seq.conventions import USUAL
from seqviz.seq2seq.data import Pair
from seqviz.seq2seq.vocab import SPECIALS

SPECIAL_NAMES = frozenset(sum(USUAL.values(), ()))  # a plain model's specials (EOS, </s>, [SEP] ...): not words

if TYPE_CHECKING:  # torch is imported where a model runs: the examples menu reads files only
    import torch

    from seqviz.seq2seq.model import Seq2Seq, Seq2SeqTrace

# Source-length buckets (units), as in Bahdanau et al. 2015 fig. 2's x-axis.
BUCKETS = ((1, 10), (11, 20), (21, 30), (31, 40), (41, 50), (51, 10_000))
TEMPERATURE_RANGE = (0.1, 5.0)
# Longest source translate_text reads: 4x the longest generated sentence. The alignment grows as
# source x target (120 steps): 100,000 typed units took 23 s and 1 GB before the chart was drawn.
MAX_SOURCE_UNITS = 200
MAX_SOURCE_CHARS = 2_000  # longer pastes are refused before segmenting
MAX_PIECE_CHARS = 24  # a run of unknown characters is one <unk> unit; its label is cut to this
# A row is "diffuse" when its entropy is at least half the uniform row's, H >= 0.5 ln n: α then spreads
# over e^H >= √n source units' worth (3 of 9), rather than pointing at one.
DIFFUSE_FRACTION = 0.5
NEAR_UNIFORM = 1.5  # a row whose largest weight is below NEAR_UNIFORM / n is called near-uniform
# English function words: the lesson's "the" attends diffusely; a default target should be a content word.
FUNCTION_WORDS = frozenset("a an the in on at of to for from with by and but so or then not is are was were "
                           "be been will did do does it this that".split())


def bucket_label(lo: int, hi: int) -> str:
    return f"{lo}+" if hi >= 10_000 else f"{lo}-{hi}"


def resoftmax(scores: torch.Tensor, temperature: float) -> torch.Tensor:
    """softmax(e / T) over the last axis; -inf (padding) stays at weight 0, NaN rows stay NaN.

    T -> 0 approaches a one-hot pointer at the argmax, T -> inf the uniform average over
    the real source positions; T = 1 gives back the model's own alpha.
    """
    if not (isinstance(temperature, (int, float)) and math.isfinite(temperature) and temperature > 0):
        raise ValueError(f"temperature must be a positive number, got {temperature!r}")
    import torch

    return torch.softmax(scores.double() / temperature, dim=-1).to(scores.dtype)


def bleu(hypotheses: list[list[str]], references: list[list[str]]) -> float:
    """Corpus BLEU (0-100) of token lists against one reference each."""
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references")
    if not hypotheses:
        return float("nan")
    hyp = [" ".join(h) for h in hypotheses]
    ref = [" ".join(r) for r in references]
    return float(sacrebleu.corpus_bleu(hyp, [ref], tokenize="none").score)


def translate_pairs(model: Seq2Seq, sources: list[list[str]], batch_size: int = 128) -> list[list[str]]:
    """Greedy translations of token lists, batched by similar length; returned in input order."""
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
    out: list[list[str] | None] = [None] * len(sources)
    for start in range(0, len(order), batch_size):
        rows = order[start: start + batch_size]
        longest = max(len(sources[i]) for i in rows)
        ids, _ = model.translate([list(sources[i]) for i in rows],
                                 max_len=min(model.config.max_target_len, 2 * longest + 10))
        for i, row in zip(rows, ids):
            out[i] = model.tgt_vocab.strings(row)
    return out  # type: ignore[return-value]


def bleu_by_length(model: Seq2Seq, pairs: list[Pair], batch_size: int = 128) -> pd.DataFrame:
    """BLEU and exact-match rate per source-length bucket (plus an "all" row)."""
    hyps = translate_pairs(model, [list(p.src) for p in pairs], batch_size)
    rows = []
    for lo, hi in BUCKETS + ((1, 10_000),):
        idx = [i for i, p in enumerate(pairs) if lo <= len(p.src) <= hi]
        if not idx:
            continue
        label = "all" if (lo, hi) == (1, 10_000) else bucket_label(lo, hi)
        rows.append({"bucket": label, "min_len": lo, "n": len(idx),
                     "bleu": round(bleu([hyps[i] for i in idx], [list(pairs[i].tgt) for i in idx]), 2),
                     "exact": round(sum(hyps[i] == list(pairs[i].tgt) for i in idx) / len(idx), 4)})
    return pd.DataFrame(rows)


def alignment_hit_rate(model: Seq2Seq, pairs: list[Pair], batch_size: int = 128) -> dict:
    """How often argmax_j alpha_tj is the source word the grammar says target word t translates.

    Teacher-forced on the gold target, so target positions line up with ``Pair.align``.
    ``content``: nouns, verbs, subjects, time words, numbers, adjectives; ``aligned``:
    every target word that has a source word (prepositions, auxiliaries, conjunctions too).
    """
    import torch

    if model.attn is None:
        raise ValueError("this model has no attention to align with")
    hits = {"content": [0, 0], "aligned": [0, 0]}
    for start in range(0, len(pairs), batch_size):
        chunk = pairs[start: start + batch_size]
        with torch.no_grad():
            tr = model.trace([list(p.src) for p in chunk], tgt=[list(p.tgt) for p in chunk])
        best = tr["decoder.attn.weights"].nan_to_num(-1.0).argmax(-1)  # [B, T]
        for b, p in enumerate(chunk):
            for t, (a, is_content) in enumerate(zip(p.align, p.content())):
                if a < 0:
                    continue
                hit = int(best[b, t]) == a
                for key, counted in (("content", is_content), ("aligned", True)):
                    if counted:
                        hits[key][0] += hit
                        hits[key][1] += 1
    return {f"{k}_hit_rate": round(h / n, 4) if n else float("nan") for k, (h, n) in hits.items()} | \
        {"content_words": hits["content"][1], "aligned_words": hits["aligned"][1]}


def tokenize_source(model: Seq2Seq, text: str) -> dict:
    """The user's sentence in the model's source units; unknown pieces kept (as <unk>) and listed."""
    if model.src_vocab is None:
        raise ValueError("this model has no source vocabulary")
    enc = model.src_vocab.encode(text)
    return {"ids": enc.ids, "pieces": enc.pieces, "unknown": enc.unknown}


def display(tokens: list[str]) -> list[str]:
    """Token strings made visible in a chart: a space becomes ␣."""
    return ["␣" if t == " " else t for t in tokens]


def translate_text(model: Seq2Seq, text: str) -> dict:
    """Tokenize, translate greedily and trace one sentence; a clear ValueError for empty input."""
    if len(text) > MAX_SOURCE_CHARS:
        raise ValueError(f"the sentence is {len(text):,} characters long; at most {MAX_SOURCE_CHARS:,} are "
                         "translated at once: shorten it")
    tok = tokenize_source(model, text)
    cut = [p if len(p) <= MAX_PIECE_CHARS else p[: MAX_PIECE_CHARS - 1] + "…" for p in tok["pieces"]]
    tok = {**tok, "pieces": cut, "unknown": list(dict.fromkeys(c for c, p in zip(cut, tok["pieces"])
                                                               if p in tok["unknown"]))}
    if not tok["ids"]:
        raise ValueError("type a sentence to translate (it has no tokens)")
    if len(tok["ids"]) > MAX_SOURCE_UNITS:
        raise ValueError(f"the sentence has {len(tok['ids']):,} source units; at most {MAX_SOURCE_UNITS} are "
                         "translated at once: shorten it")
    ids, tr = model.translate([tok["ids"]])
    framed = tr.source_strings[0]  # a plain state dict's model may read start/end tokens around the sentence
    lead = framed[:1] if getattr(model.config, "source_bos", False) else []
    tok["pieces"] = lead + tok["pieces"] + (framed[-1:] if getattr(model.config, "source_eos", False) else [])
    return {**tok, "source": tok["pieces"], "translation": model.tgt_vocab.decode(ids[0]),
            "target": tr.target_strings[0], "trace": tr}


def alignment_frame(trace: Seq2SeqTrace, row: int = 0, temperature: float = 1.0,
                    source: list[str] | None = None) -> pd.DataFrame:
    """Long table of one sentence's alignment: one row per (target step, source position).

    ``weight`` is softmax(e / T) recomputed from the stored scores; ``alpha`` the model's own.
    ``source`` overrides the source labels (e.g. the user's own pieces, unknowns included).
    """
    if "decoder.attn.scores" not in trace:
        raise ValueError("this model has no attention: its decoder sees one fixed vector")
    n_src, n_tgt = int(trace.source_lengths()[row]), int(trace.lengths()[row])
    scores = trace["decoder.attn.scores"][row, :n_tgt, :n_src]
    weights = resoftmax(scores, temperature)
    src = display(source or trace.source_strings[row])[:n_src]
    tgt = display(trace.target_strings[row])[:n_tgt]
    records = []
    for t in range(n_tgt):
        for j in range(n_src):
            records.append({"t": t, "target": tgt[t], "target_label": f"{t}:{tgt[t]}", "j": j,
                            "source": src[j], "source_label": f"{j}:{src[j]}",
                            "weight": float(weights[t, j]), "alpha": float(trace["decoder.attn.weights"][row, t, j]),
                            "score": float(scores[t, j])})
    return pd.DataFrame(records)


def alignment_matrix_csv(frame: pd.DataFrame) -> str:
    """The alpha matrix (rows target, columns source) as CSV text for download."""
    wide = frame.pivot(index="target_label", columns="source_label", values="weight")
    wide = wide.loc[sorted(wide.index, key=lambda s: int(s.split(":")[0])),
                    sorted(wide.columns, key=lambda s: int(s.split(":")[0]))]
    return wide.to_csv()


def bleu_curves(cards: dict[str, dict]) -> pd.DataFrame:
    """The BLEU-by-length tables stored in model cards, one ``model`` per card, for charting."""
    frames = []
    for name, card in cards.items():
        table = card.get("bleu_by_length")
        if not table:
            continue
        frame = pd.DataFrame(table)
        frame["model"] = name
        frames.append(frame[frame["bucket"] != "all"])
    if not frames:
        return pd.DataFrame(columns=["bucket", "min_len", "n", "bleu", "exact", "model"])
    return pd.concat(frames, ignore_index=True)


def example_sentences(pairs: list[Pair], per_bucket: int = 2) -> dict[str, tuple[str, str]]:
    """A few held-out sentences from every length bucket: label -> (source text, reference)."""
    out = {}
    for lo, hi in BUCKETS:
        chosen = [p for p in pairs if lo <= len(p.src) <= hi][:per_bucket]
        for p in chosen:
            # each side by its own units: characters read as text, words with spaces
            src, ref = (("" if all(len(t) == 1 for t in side) else " ").join(side) for side in (p.src, p.tgt))
            out[f"{len(p.src)} units: {src[:40]}{'…' if len(src) > 40 else ''}"] = (src, ref)
    return out


def most_reordered(frame: pd.DataFrame) -> int:
    """The target step whose strongest source position lies farthest from the diagonal."""
    best = frame.loc[frame.groupby("t")["weight"].idxmax()]
    n_src, n_tgt = frame["j"].max() + 1, frame["t"].max() + 1
    distance = (best["j"] / max(n_src - 1, 1) - best["t"] / max(n_tgt - 1, 1)).abs()
    return int(best["t"].iloc[int(distance.to_numpy().argmax())])


def bleu_table(curves: pd.DataFrame) -> pd.DataFrame:
    """BLEU curves as a table: one row per model, one column per bucket in length order."""
    order = curves.drop_duplicates("bucket").sort_values("min_len")["bucket"].tolist()
    return curves.pivot(index="model", columns="bucket", values="bleu")[order]


def known_source_words(model: Seq2Seq) -> list[str]:
    """The source units the model has an embedding for, in vocabulary order, without the special tokens: ids 0-3
    (<pad>/<unk>/<bos>/<eos>, or a plain model's own, e.g. the PyTorch tutorial's SOS and EOS)."""
    vocab = getattr(model, "src_vocab", None)
    return [] if vocab is None else [t for t in vocab.tokens[len(SPECIALS):] if t not in SPECIALS]


def is_word(token: str) -> bool:
    """False for specials (<eos> ...), blanks and tokens made only of punctuation or symbols."""
    token = token.strip()
    return bool(token) and token not in SPECIALS and token not in SPECIAL_NAMES and token != "␣" and \
        not all(unicodedata.category(ch)[0] in "PS" for ch in token)


def row_entropy(weights: np.ndarray) -> float:
    """H = −Σ α ln α in nats (0 ln 0 = 0)."""
    p = np.asarray(weights, dtype=np.float64)
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())


def target_stats(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per target step t (from ``alignment_frame``, at its temperature).

    ``source``/``max_weight``: the strongest source unit and its weight; ``entropy``: −Σ_j α_tj ln α_tj
    (nats); ``fraction``: entropy / ln n (0 = one-hot, 1 = uniform over the n source units);
    ``diffuse``: fraction >= DIFFUSE_FRACTION; ``word``: not a special or punctuation; ``content``: a
    word that is not an English function word.
    """
    rows = []
    for t, row in frame.sort_values(["t", "j"]).groupby("t", sort=True):
        w = row["weight"].to_numpy(np.float64)
        n, best = len(w), int(w.argmax())
        h = row_entropy(w)
        fraction = h / math.log(n) if n > 1 else 0.0
        target = str(row["target"].iloc[0])
        rows.append({"t": int(t), "target": target, "source": row["source"].iloc[best], "j": int(row["j"].iloc[best]),
                     "max_weight": float(w[best]), "entropy": h, "fraction": fraction, "n_source": n,
                     "diffuse": fraction >= DIFFUSE_FRACTION, "word": is_word(target),
                     "content": is_word(target) and target.lower() not in FUNCTION_WORDS})
    return pd.DataFrame(rows)


def default_target(stats: pd.DataFrame, sharp_within: float = 0.9) -> int:
    """The target step a lesson opens on: a content word aligned as sharply as any, the most reordered of those.

    Candidates: content words (else any word, else any step); the sharp ones have max α >= ``sharp_within``
    x the best candidate's; among them the one whose strongest source lies farthest from the diagonal
    (on the lesson's sentence: "yesterday", which reaches back to 昨天, the 2nd word).
    """
    pool = next(p for p in (stats[stats["content"]], stats[stats["word"]], stats) if len(p))
    sharp = pool[pool["max_weight"] >= sharp_within * pool["max_weight"].max()]
    n_src, n_tgt = int(stats["n_source"].max()), len(stats)
    distance = (sharp["j"] / max(n_src - 1, 1) - sharp["t"] / max(n_tgt - 1, 1)).abs()
    return int(sharp["t"].iloc[int(distance.to_numpy().argmax())])


def temperature_summary(stats: pd.DataFrame) -> dict:
    """The row maxima at this temperature against the uniform 1/n: what T actually did to α.

    ``verdict``: "uniform" when every row's maximum is below NEAR_UNIFORM / n, "one-hot" when every
    row's maximum is above 0.99, else "spread"; n is the longest row's source length.
    """
    n = int(stats["n_source"].max())
    lo, hi = float(stats["max_weight"].min()), float(stats["max_weight"].max())
    verdict = "uniform" if hi <= NEAR_UNIFORM / n else "one-hot" if lo >= 0.99 else "spread"
    return {"n": n, "uniform": 1.0 / n, "limit": NEAR_UNIFORM / n, "max_lo": lo, "max_hi": hi,
            "mean_fraction": float(stats["fraction"].mean()), "verdict": verdict}
