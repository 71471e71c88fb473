"""Memory you can see (station S6): how long each unit keeps its state, which units keep it longest,
what they track, and what a shifted forget-gate bias does to it.

For the LSTM, c_t = f_t ⊙ c_(t-1) + i_t ⊙ g̃_t, so ∂c_t/∂c_(p-1) along the cell path is
∏_{s=p..t} f_s (the constant error carousel, Hochreiter & Schmidhuber 1997). A unit's *memory
span* from position p is the number of tokens for which that product stays above a threshold
(0.5: at least half of what the cell held before p is still there). The GRU's retention gate is
PyTorch's update gate z (h_t = (1 - z_t) ⊙ n_t + z_t ⊙ h_(t-1)); a plain RNN has none.
"""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import torch

from seqviz.families import get, of
from seqviz.introspect.gates import unit_matrix

THRESHOLD = 0.5


def spans(gates, start: int = 0, threshold: float = THRESHOLD) -> np.ndarray:
    """Per unit: how many tokens from ``start`` the running product ∏_{s=start..t} f_s stays above ``threshold``.

    ``gates [T, U]`` in (0, 1]. A unit whose product never falls to the threshold gets
    T - start (it keeps its memory to the end of the text: the span is at least that).
    Summed in log space, so hundreds of factors do not underflow.
    """
    f = np.asarray(gates, dtype=np.float64)
    if f.ndim != 2:
        raise ValueError(f"gates must be [tokens, units], got shape {f.shape}")
    if not 0 <= start < len(f):
        raise ValueError(f"start must be in [0, {len(f)}), got {start}")
    if not 0.0 < threshold < 1.0:
        raise ValueError(f"threshold must lie in (0, 1), got {threshold}")
    above = np.cumsum(np.log(np.maximum(f[start:], 1e-300)), axis=0) > np.log(threshold)  # [T - start, U]
    return np.where(above.all(0), len(above), above.argmin(0))


def memory_units(trace, cell: str, layer: int, start: int = 0, threshold: float = THRESHOLD,
                 row: int = 0) -> pd.DataFrame:
    """Every unit of one layer ranked by its memory span from ``start``, longest first.

    Columns: unit, span (tokens), to_end (the product was still above the threshold at the
    last token, so the span is cut by the text, not by the unit), log10_kept (log10 ∏ f over
    the whole rest of the text: among units with equal spans, the one that kept more ranks
    first), mean_gate (mean retention gate from ``start`` on).
    """
    f = unit_matrix(trace, layer, get(cell).kept_by(), row)
    span = spans(f, start, threshold)
    kept = np.log10(np.maximum(f[start:], 1e-300)).sum(0)
    order = np.lexsort((np.arange(f.shape[1]), -kept, -span))  # span, then kept, then index
    return pd.DataFrame({"unit": order, "span": span[order], "to_end": span[order] == len(f) - start,
                         "log10_kept": kept[order], "mean_gate": f[start:].mean(0)[order]})


def tracked_features(ranking: pd.DataFrame, units, min_r: float = 0.3) -> pd.DataFrame:
    """For each of ``units``, the text feature its state correlates with most (``rank_units``'s table).

    Units whose strongest |r| is below ``min_r`` get an empty feature: they track nothing simple.
    """
    best = ranking.sort_values("abs_r", ascending=False, kind="stable").drop_duplicates("unit")
    best = best.set_index("unit")
    rows = []
    for u in units:
        hit = u in best.index and best.loc[u, "abs_r"] >= min_r
        rows.append({"unit": int(u), "feature": best.loc[u, "feature"] if hit else "",
                     "r": float(best.loc[u, "r"]) if u in best.index else float("nan")})
    return pd.DataFrame(rows, columns=["unit", "feature", "r"])


def shifted_copy(model, delta: float, layers=None):
    """A private copy whose retention-gate bias (LSTM b_f, GRU b_z) is shifted by ``delta``.

    Gers et al. (2000) and Jozefowicz et al. (2015): a forget bias of 1-2 keeps the gate open,
    so the cell remembers by default. The shared model is never changed (``copy.deepcopy``).
    """
    family = of(model)
    if family.retention_chunk is None:
        raise ValueError(family.why_not("retention_bias"))
    clone = copy.deepcopy(model)
    for i, rnn in enumerate(clone.layers):
        if layers is None or i in layers:
            shift_retention_bias(rnn, family.retention_chunk, delta)
    return clone


@torch.no_grad()
def shift_retention_bias(rnn, chunk: tuple[str, int, int], delta: float) -> None:
    """Add ``delta`` to one layer's retention-gate bias, in place: ``chunk`` is the family's (bias attribute,
    block, blocks), e.g. an ``nn.LSTM``'s ("bias_hh_l0", 1, 4); a minimal cell's gates have one bias, its
    projection's."""
    attribute, block, blocks = chunk
    H = rnn.hidden_size
    bias = rnn.get_parameter(attribute)
    assert bias.shape[0] == blocks * H
    bias[block * H: (block + 1) * H] += delta


def what_if_gates(model, ids, layer: int, delta: float) -> np.ndarray:
    """The retention gate [T, U] of ``layer`` when ``model`` reads ``ids`` with its bias shifted by ``delta``.

    Only ``layer``'s own bias is shifted, so the layers below feed it exactly as before.
    """
    name = f"layers.{layer}.gates.{of(model).kept_by()}"
    clone = shifted_copy(model, delta, layers=[layer]) if delta else model
    trace = clone.trace([list(ids)], names=[name])
    return trace[name][0].double().numpy()


def span_table(original, shifted, units, start: int, threshold: float = THRESHOLD) -> pd.DataFrame:
    """Spans of ``units`` as trained and with the shifted bias: unit, span, span_what_if, longer_by."""
    a = spans(original, start, threshold)[np.asarray(units)]
    b = spans(shifted, start, threshold)[np.asarray(units)]
    return pd.DataFrame({"unit": np.asarray(units, dtype=int), "span": a, "span_what_if": b, "longer_by": b - a})


def product_frame(original, shifted, unit: int, tokens: list[str], start: int, labels=("as trained", "what-if"),
                  limit: int | None = None) -> pd.DataFrame:
    """Long frame for the memory chart: step, token, run, gate, product (∏ from ``start``), log10_product."""
    frames = []
    for name, f in zip(labels, (original, shifted)):
        if f is None:
            continue
        g = np.asarray(f, dtype=np.float64)[start:, unit]
        if limit is not None:
            g = g[:limit]
        log10 = np.cumsum(np.log10(np.maximum(g, 1e-300)))
        frames.append(pd.DataFrame({"step": np.arange(start, start + len(g)), "token": tokens[start: start + len(g)],
                                    "run": name, "gate": g, "product": 10.0 ** log10, "log10_product": log10}))
    return pd.concat(frames, ignore_index=True)
