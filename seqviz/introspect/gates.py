"""Gate activations per token: means, unit orderings, saturation, the forget product, parameter counts.

Everything reads a trace (``layers.{i}.gates.*``, ``layers.{i}.h|c|preact``), never a
model's internals, except ``saturation`` (which traces a corpus sample batch by batch) and
``parameter_groups`` (which counts the model's weights).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from seqviz.families import SQUASH, get, of


def signal_key(layer: int, name: str) -> str:
    """Trace name of a signal: gates live under ``gates.``, states directly under the layer."""
    return f"layers.{layer}.gates.{name}" if name not in ("h", "c", "preact", "s") else f"layers.{layer}.{name}"


def unit_matrix(trace, layer: int, name: str, row: int = 0) -> np.ndarray:
    """[T_valid, U] values of one signal for one text of the trace (padding dropped)."""
    n = int(trace["mask"][row].sum())
    return trace[signal_key(layer, name)][row, :n].double().numpy()


def row_tokens(trace, row: int = 0) -> list[str]:
    n = int(trace["mask"][row].sum())
    if trace.token_strings is None:
        return [str(int(i)) for i in trace["tokens"][row, :n]]
    return list(trace.token_strings[row][:n])


def gate_means(trace, cell: str, layer: int, row: int = 0) -> pd.DataFrame:
    """Long frame: one row per (token, signal) with the mean over units at that token."""
    tokens = row_tokens(trace, row)
    n, names = len(tokens), get(cell).mean_signals
    import torch

    means = [trace[signal_key(layer, name)][row, :n].mean(dim=1, dtype=torch.float64).numpy() for name in names]
    return pd.DataFrame({"step": np.tile(np.arange(n), len(names)), "token": tokens * len(names),
                         "signal": np.repeat(names, n), "mean": np.concatenate(means)})


def order_units(values: np.ndarray, by: str = "variance", at: int | None = None) -> np.ndarray:
    """Unit indices of ``values [T, U]`` ordered for display.

    ``variance``: most variable over the text first; ``value``: highest value at token
    ``at`` first; ``index``: as stored. Ties keep the stored order (stable sort).
    """
    if by == "variance":
        return np.argsort(-values.var(0), kind="stable")
    if by == "value":
        if at is None or not 0 <= at < len(values):
            raise ValueError(f"sorting by value needs a token position in [0, {len(values)})")
        return np.argsort(-values[at], kind="stable")
    if by == "index":
        return np.arange(values.shape[1])
    raise ValueError(f"order 'by' must be variance, value or index, got {by!r}")


# ------------------------------------------------------------------ saturation
def thresholds(name: str, lo: float = 0.1, hi: float = 0.9) -> tuple[float, float]:
    """Saturation thresholds for a signal, given the sigmoid ones (Karpathy et al. 2015: 0.1/0.9).

    A tanh signal gets the affine image 2x-1 (-0.8/0.8): since tanh(z) = 2*sigmoid(2z) - 1,
    there its slope is the same fraction (36 %) of its maximum as sigmoid's at 0.1/0.9.
    """
    if not 0.0 < lo < hi < 1.0:
        raise ValueError(f"need 0 < lo < hi < 1, got lo={lo}, hi={hi}")
    kind = SQUASH.get(name)
    if kind in ("sigmoid", "exp"):  # exp: Mamba's decay, in (0, 1) as a sigmoid gate
        return lo, hi
    if kind == "tanh":
        return 2 * lo - 1, 2 * hi - 1
    raise ValueError(f"{name!r} is unbounded; saturation is defined for sigmoid and tanh signals")


def saturation_counts(trace, cell: str, n_layers: int, lo: float = 0.1, hi: float = 0.9,
                      names=None, layers=None) -> dict:
    """{(layer, signal): (left [U], right [U], n_tokens)} counted over the valid positions, of every layer or of
    ``layers``."""
    family = get(cell)
    names = names or [n for n in family.signals if family.squash(n) is not None]
    mask = trace["mask"]
    out = {}
    for layer in range(n_layers) if layers is None else layers:
        for name in names:
            left_t, right_t = thresholds(name, lo, hi)
            v = trace[signal_key(layer, name)][mask]  # [n_valid, U]
            out[(layer, name)] = ((v < left_t).sum(0).numpy(), (v > right_t).sum(0).numpy(), len(v))
    return out


def saturation(model, texts: list[str], lo: float = 0.1, hi: float = 0.9,
               batch_size: int = 4, names=None) -> pd.DataFrame:
    """Per unit, per signal, per layer: fraction of tokens left- (< lo) and right- (> hi) saturated.

    Karpathy, Johnson & Fei-Fei (2015), "Visualizing and Understanding Recurrent Networks",
    Fig. 4. Traced ``batch_size`` texts at a time so a long sample stays within memory.
    """
    cfg = model.config
    total: dict = {}
    for s in range(0, len(texts), batch_size):
        counts = saturation_counts(model.trace(texts[s: s + batch_size]), cfg.cell, cfg.n_layers,
                                   lo, hi, names)
        for key, (left, right, n) in counts.items():
            prev = total.get(key, (0, 0, 0))
            total[key] = (prev[0] + left, prev[1] + right, prev[2] + n)
    return saturation_frame(total)


def saturation_frame(counts: dict) -> pd.DataFrame:
    """``saturation_counts`` output as fractions: layer, signal, unit, left, right, tokens."""
    frames = [pd.DataFrame({"layer": layer, "signal": name, "unit": np.arange(len(left)),
                            "left": left / n, "right": right / n, "tokens": n})
              for (layer, name), (left, right, n) in counts.items()]
    return pd.concat(frames, ignore_index=True)


# ------------------------------------------------------------------ memory along the text
def forget_product(trace, cell: str, layer: int, unit: int, row: int = 0, start: int = 0) -> pd.DataFrame:
    """Running product of one unit's retention gate from ``start``: prod_{s=start..t} f_s.

    For the LSTM, dc_t/dc_{start-1} along the cell path is exactly this product (the
    constant error carousel, Hochreiter & Schmidhuber 1997; Gers et al. 2000). Summed in
    log space so hundreds of factors do not underflow.
    """
    f = unit_matrix(trace, layer, get(cell).kept_by(), row)
    if not 0 <= unit < f.shape[1]:
        raise ValueError(f"unit must be in [0, {f.shape[1]}), got {unit}")
    if not 0 <= start < len(f):
        raise ValueError(f"start must be in [0, {len(f)}), got {start}")
    g = f[start:, unit]
    log10 = np.cumsum(np.log10(np.maximum(g, 1e-300)))
    return pd.DataFrame({"step": np.arange(start, len(f)), "token": row_tokens(trace, row)[start:],
                         "gate": g, "product": 10.0 ** log10, "log10_product": log10})


# ------------------------------------------------------------------ parameter counts (station S7)
def parameter_groups(model) -> pd.DataFrame:
    """Per recurrent layer: groups x [d_h (d_h + d) + d_h] and what the model really holds.

    The textbook count has one bias per group; PyTorch's cells keep two (b_ih and b_hh),
    so the real count is groups x [d_h (d_h + d) + 2 d_h]. Both are computed here, and
    ``actual`` is summed from the layer's parameter tensors. minGRU and minLSTM have no recurrent
    weights and one bias per group: groups x [d_h d + d_h] in both columns.
    """
    cfg = model.config
    family = of(cfg)
    g = family.weight_groups
    if not g:
        raise ValueError(family.why_not("weight_groups"))
    recurrent = family.applies("recurrent_weights")
    rows = []
    for i, layer in enumerate(model.layers):
        d_in = cfg.d_embed if i == 0 else cfg.d_hidden
        d_h = cfg.d_hidden
        rows.append({"layer": i, "cell": cfg.cell, "groups": g, "d_in": d_in, "d_h": d_h,
                     "formula_one_bias": g * (d_h * (d_h * recurrent + d_in) + d_h),
                     "formula_pytorch": g * (d_h * (d_h * recurrent + d_in) + (1 + recurrent) * d_h),
                     "actual": sum(p.numel() for p in layer.parameters())})
    return pd.DataFrame(rows)
