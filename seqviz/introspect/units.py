"""Finding interpretable units: text features, correlation ranking, and LSTMVis-style pattern search.

* ``text_features`` turns token strings into simple per-token features (inside brackets,
  position in line, after a newline, is uppercase, ...), the kind Karpathy, Johnson &
  Fei-Fei (2015) found single cells tracking (quote cells, line-length cells).
* ``rank_units`` ranks units by |Pearson r| between their value and each feature.
* ``select_units`` and ``pattern_search`` follow LSTMVis (Strobelt et al. 2018): the units
  "on" (above a threshold) across a selected span, and off just around it, form a pattern;
  the corpus spans where the same units are on together are the matches.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

VOWELS = set("aeiouAEIOU")
OPEN, CLOSE = "([{", ")]}"


def text_features(tokens: list[str]) -> pd.DataFrame:
    """One row per token, one numeric column per feature (for char- or word-level tokens)."""
    rows, depth, quoted, col, word_pos = [], 0, False, 0, 0
    lines = "".join(tokens).split("\n")
    speaker = [bool(ln.strip()) and ln.strip().endswith(".") and len(ln.strip()) <= 24
               and ln.strip()[0].isupper() and ln.count(" ") <= 2 for ln in lines]
    line_no, prev = 0, "\n"
    for tok in tokens:
        first = tok[:1]
        if first in OPEN:
            depth += 1
        if tok == '"':
            quoted = not quoted
        rows.append({
            "inside_brackets": float(depth > 0),
            "inside_quotes": float(quoted or tok == '"'),
            "position_in_line": float(col),
            "position_in_word": float(word_pos),
            "after_newline": float(prev.endswith("\n")),
            "is_uppercase": float(first.isupper()),
            "is_vowel": float(first in VOWELS),
            "is_space": float(tok == " "),
            "is_punctuation": float(bool(first) and not first.isalnum() and not first.isspace()),
            "speaker_line": float(speaker[line_no]),
        })
        if first in CLOSE:
            depth = max(depth - 1, 0)
        line_no += tok.count("\n")
        col = 0 if "\n" in tok else col + len(tok)
        word_pos = word_pos + 1 if first.isalpha() or first == "'" else 0
        prev = tok
    return pd.DataFrame(rows)


def rank_units(values, features: pd.DataFrame, top: int | None = 20) -> pd.DataFrame:
    """Units ranked by |Pearson r| between ``values [N, U]`` and each feature column.

    Constant features or units (r undefined) are left out. Returns feature, unit, r, |r|.
    """
    x = np.asarray(values, dtype=np.float64)
    if len(x) != len(features):
        raise ValueError(f"{len(x)} value rows but {len(features)} feature rows")
    xc = x - x.mean(0)
    xn = np.sqrt((xc ** 2).sum(0))
    out = []
    for name in features.columns:
        f = features[name].to_numpy(np.float64)
        fc = f - f.mean()
        fn = np.sqrt((fc ** 2).sum())
        if fn == 0:
            continue
        with np.errstate(invalid="ignore", divide="ignore"):
            r = (fc @ xc) / (fn * xn)
        ok = np.flatnonzero(xn > 0)
        out.append(pd.DataFrame({"feature": name, "unit": ok, "r": r[ok]}))
    if not out:
        return pd.DataFrame(columns=["feature", "unit", "r", "abs_r"])
    table = pd.concat(out, ignore_index=True)
    table["abs_r"] = table["r"].abs()
    table = table.sort_values(["abs_r", "feature", "unit"], ascending=[False, True, True])
    return (table if top is None else table.head(top)).reset_index(drop=True)


# ------------------------------------------------------------------ LSTMVis pattern search
class StateIndex:
    """One layer's h over a long text, stored unit-major as int8 for fast thresholding.

    h of RNN/GRU/LSTM lies in (-1, 1), so int8 with a step of 1/127 loses at most 0.004.
    """

    def __init__(self, values, tokens: list[str], info: dict | None = None):
        x = np.asarray(values, dtype=np.float32)
        self.q = np.ascontiguousarray(np.clip(np.rint(x.T * 127), -127, 127).astype(np.int8))  # [U, N]
        self.tokens = list(tokens)
        self.info = dict(info or {})

    def __len__(self) -> int:
        return self.q.shape[1]

    def values(self, units) -> np.ndarray:
        return self.q[np.asarray(units)] / 127.0


@torch.no_grad()
def build_state_index(model, text: str, layer: int, segment: int = 512, burn_in: int = 64,
                      batch: int = 128) -> StateIndex:
    """Read ``text`` as many short windows side by side and keep one layer's h.

    A long text read token by token is thousands of sequential steps; cut into windows read
    ``batch`` at a time it is a few hundred. Each window of ``segment`` kept tokens first
    reads the ``burn_in`` tokens before it, so its state is warmed up (not zero) by then.
    Only the fused layers run (no gate rebuild).
    """
    enc = model.tokenizer.encode(text)
    ids = torch.tensor(enc.ids, dtype=torch.long)
    if len(ids) == 0:
        raise ValueError("the text has no tokens the model knows")
    n_seg = -(-len(ids) // segment)
    windows = torch.zeros(n_seg, burn_in + segment, dtype=torch.long)  # right-padded; pads are dropped
    offsets = []
    for k in range(n_seg):
        start = max(0, k * segment - burn_in)
        piece = ids[start: (k + 1) * segment]
        windows[k, : len(piece)] = piece
        offsets.append(k * segment - start)
    parts = []
    for s in range(0, n_seg, batch):
        x = model.embed(windows[s: s + batch])
        for i in range(layer + 1):
            x, _ = model.layers[i](x)
        for row, k in enumerate(range(s, min(s + batch, n_seg))):
            parts.append(x[row, offsets[k]: offsets[k] + segment].float().numpy())
    h = np.concatenate(parts)[: len(ids)]
    return StateIndex(h, enc.pieces, {"layer": layer, "tokens": len(ids), "segment": segment,
                                      "burn_in": burn_in})


def corpus_state_index(model, layer: int) -> StateIndex:
    """``build_state_index`` of the whole held-out corpus (``seqviz.introspect.projection.corpus_text``, whose source
    its ``info["source"]`` names): what the pattern search looks through."""
    from seqviz.introspect.projection import corpus_text

    text, source = corpus_text()
    index = build_state_index(model, text, layer)
    index.info["source"] = source
    return index


def select_units(values, start: int, end: int, threshold: float, off_before: int = 1,
                 off_after: int = 1) -> np.ndarray:
    """Units above ``threshold`` at every token of [start, end) and not above it around it.

    ``values [T, U]``; the ``off_before`` tokens before the span and the ``off_after``
    after it (where they exist) must be <= threshold: the pattern switches on with the span.
    """
    x = np.asarray(values)
    if not 0 <= start < end <= len(x):
        raise ValueError(f"the span must satisfy 0 <= start < end <= {len(x)}, got [{start}, {end})")
    on = (x[start:end] > threshold).all(0)
    around = np.concatenate([x[max(start - off_before, 0): start], x[end: end + off_after]])
    if len(around):
        on &= (around <= threshold).all(0)
    return np.flatnonzero(on)


def pattern_search(index: StateIndex, units, threshold: float, span_length: int, top: int = 20,
                   min_on: float = 1.0, exclude: tuple[int, int] | None = None,
                   context: int = 30) -> pd.DataFrame:
    """Maximal runs where at least ``min_on`` of ``units`` are above ``threshold``, best first.

    A run's score is (mean fraction of the units on) x (min(len, L) / max(len, L)), L the
    selected span's length: the pattern held together, for about as long as in the query.
    """
    units = np.asarray(units, dtype=np.int64)
    cols = ["start", "end", "length", "score", "frac_on", "before", "match", "after"]
    if len(units) == 0:
        return pd.DataFrame(columns=cols)
    level = int(np.floor(threshold * 127))  # v > t  <=>  q > floor(127 t) for integer q
    count = (index.q[units] > level).sum(0)  # [N] units on at each token
    need = max(1, int(np.ceil(min_on * len(units) - 1e-9)))
    hit = np.concatenate([[0], (count >= need).astype(np.int8), [0]])
    edges = np.diff(hit)
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    if exclude is not None:
        keep = (ends <= exclude[0]) | (starts >= exclude[1])
        starts, ends = starts[keep], ends[keep]
    if len(starts) == 0:
        return pd.DataFrame(columns=cols)
    csum = np.concatenate([[0], np.cumsum(count)])
    lengths = ends - starts
    frac = (csum[ends] - csum[starts]) / (lengths * len(units))
    score = frac * np.minimum(lengths, span_length) / np.maximum(lengths, span_length)
    order = np.lexsort((starts, -score))[:top]
    tok = index.tokens
    rows = [{"start": int(starts[i]), "end": int(ends[i]), "length": int(lengths[i]),
             "score": float(score[i]), "frac_on": float(frac[i]),
             "before": "".join(tok[max(starts[i] - context, 0): starts[i]]),
             "match": "".join(tok[starts[i]: ends[i]]),
             "after": "".join(tok[ends[i]: ends[i] + context])} for i in order]
    return pd.DataFrame(rows, columns=cols)
