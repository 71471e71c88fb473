"""Memory as attention: what every earlier token's write still adds to each unit's memory, for every family
whose recurrence is gated and linear, s_t = a_t ⊙ s_(t−1) + b_t (the family table's ``Linear``).

Unrolled, s_t = Σ_{j≤t} (∏_{k=j+1..t} a_k) ⊙ b_j: the product of decays is an attention weight of step t on
token j (the LSTM's ∏f of the textbook's station S6; for Mamba, Ali, Zimerman & Wolf 2025's hidden attention,
M[c, t, j] = Σ_n C_t[n] exp(Σ_{k=j+1..t} Δ_k[c] A[c, n]) Δ_j[c] B_j[n] x_j[c]). One function for every family:
each entry names its decay, write and state by trace leaf, or a function returning them with a read-out
(``Parts``); a tanh RNN has no such form and its entry says so.

Cost: T² · U · N multiply-adds in float64 and a [T, T, U] float32 result, 4·T²·U bytes (T = 1,000 and U = 4,096:
16 GB), so ``units`` selects the units kept and ``MAX_BYTES`` (200 MB) refuses more, naming the option.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

import numpy as np
import torch

from seqviz.families import of

MAX_BYTES = 200 << 20  # the [T, T, U] result a call may build
CHUNK_BYTES = 64 << 20  # the float64 products of one chunk of steps


@dataclass(frozen=True)
class Parts:
    """One layer's recurrence for one text, per unit u and state n: s_t = a_t ⊙ s_(t−1) + b_t, memory_t =
    Σ_n read_t ⊙ s_t + skip_t. a, b, read [T, U, N] (read None: 1), skip and memory [T, U] (memory as traced)."""

    a: torch.Tensor
    b: torch.Tensor
    read: torch.Tensor | None
    skip: torch.Tensor
    memory: torch.Tensor
    edit: str  # the trace edit reaching s_t: layers.{layer}.<edit>


@dataclass(frozen=True)
class Implicit:
    """``contributions`` [T, T, U]: [t, j, u] is what token j's write still adds to unit u's memory at step t (0 for
    j > t); ``skip`` [T, U]: what no earlier write explains (Mamba's D·x_t, else 0); ``memory`` [T, U] as traced
    (LSTM c; GRU, minGRU, minLSTM h; Mamba's scan output C_t s_t + D x_t before the SiLU(z) gate); so
    contributions.sum(1) + skip == memory to float32 precision."""

    contributions: np.ndarray
    skip: np.ndarray
    memory: np.ndarray
    tokens: list[str]
    units: np.ndarray  # the units kept, in the layer's numbering
    layer: int
    family: str


def _leaf(trace, layer: int, name: str) -> torch.Tensor:
    complement = name.startswith("1-")
    x = trace[f"layers.{layer}.{name.removeprefix('1-')}"][0].double()
    return 1 - x if complement else x


def parts(model, ids: torch.Tensor, layer: int) -> Parts:
    """The family's recurrence at ``layer`` for ids [1, T], by its table entry."""
    linear = of(model).linear
    if linear.function:
        module, name = linear.function.split(":")
        return getattr(importlib.import_module(module), name)(model, ids, layer)
    names = {linear.decay, linear.state, *(w.removeprefix("1-") for w in linear.write)}
    trace = model.trace(ids, names=[f"layers.{layer}.{n}" for n in sorted(names)])
    b = _leaf(trace, layer, linear.write[0])
    for name in linear.write[1:]:
        b = b * _leaf(trace, layer, name)
    s = _leaf(trace, layer, linear.state)
    return Parts(_leaf(trace, layer, linear.decay)[..., None], b[..., None], None, torch.zeros_like(s), s,
                 linear.edit or linear.state)


def _ids(model, text) -> tuple[torch.Tensor, list[str]]:
    if isinstance(text, str):
        if model.tokenizer is None:
            raise ValueError("this model has no tokenizer; pass token ids instead of text")
        encoded = model.tokenizer.encode(text)
        ids, pieces = encoded.ids, list(encoded.pieces)
    else:
        ids = list(map(int, text))
        known = getattr(model.tokenizer, "tokens", None) or []
        pieces = [known[i] if 0 <= i < len(known) else f"#{i}" for i in ids]
    if not ids:
        raise ValueError("nothing to unroll: the text has no tokens")
    return torch.tensor([ids]), pieces


def _layer(model, layer: int) -> int:
    n = model.config.n_layers
    if not -n <= layer < n:
        raise ValueError(f"layer {layer} does not exist: this model has {n} layers (0 to {n - 1})")
    return layer % n


def contributions(model, text, layer: int = 0, units=None, max_bytes: int = MAX_BYTES) -> Implicit:
    """Every earlier token's share of each unit's memory at every step (``Implicit``); ``units``: the unit
    indices kept (None: all). ValueError with the family's own sentence where it has no gated linear form."""
    family = of(model)
    if (why := family.why_not("linear_form")) is not None:
        raise ValueError(why)
    layer = _layer(model, layer)
    ids, tokens = _ids(model, text)
    p = parts(model, ids, layer)
    width = p.a.shape[1]
    keep = np.arange(width) if units is None else np.asarray(sorted(set(map(int, units))), dtype=np.int64)
    if keep.size == 0 or keep.min() < 0 or keep.max() >= width:
        raise ValueError(f"units must lie in 0..{width - 1}")
    T = ids.shape[1]
    if 4 * T * T * keep.size > max_bytes:
        raise ValueError(f"{T} tokens × {keep.size} units would take {4 * T * T * keep.size / 2**20:.0f} MiB "
                         f"(limit {max_bytes / 2**20:.0f} MiB): pass fewer units or a shorter text")
    idx = torch.as_tensor(keep)
    a, b = p.a[:, idx].double(), p.b[:, idx].double()
    read = None if p.read is None else p.read[:, idx].double()
    # ∏_{k=j+1..t} a_k = exp(L_t − L_j) with L the running sum of log a (float64: |L| · 1e-16 relative error; a
    # factor that is exactly 0 in float32 becomes 1e-300, so every later product is 0 as it should be)
    L = torch.cumsum(torch.log(a.clamp_min(1e-300)), 0)  # [T, U, N]
    out = np.zeros((T, T, keep.size), dtype=np.float32)
    rows = max(1, min(T, CHUNK_BYTES // max(8 * T * a[0].numel(), 1)))
    below = torch.tril(torch.ones(T, T, dtype=torch.bool))
    for lo in range(0, T, rows):
        hi = min(lo + rows, T)
        kept = torch.exp(L[lo:hi, None] - L[None]) * b[None]  # [rows, T, U, N]: [t, j] for every j (masked below)
        share = kept.sum(-1) if read is None else (kept * read[lo:hi, None]).sum(-1)
        out[lo:hi] = torch.where(below[lo:hi, :, None], share, 0).numpy()
    return Implicit(out, p.skip[:, idx].float().numpy(), p.memory[:, idx].float().numpy(), tokens, keep, layer,
                    family.name)


def knockouts(model, text, positions, layer: int = 0) -> dict:
    """Each token of ``positions`` with its write removed from ``layer``'s recurrence (b_j = 0: s_j − b_j, through the
    trace's ``edits``), every later state following; all of them one batch of edited runs (``edited_traces``).
    {"delta": [P, T − 1] change of the next-token loss at each position (NaN before the token), "plain": [T − 1]
    its loss, "knocked": [P, T − 1]}. The layer's output at step j itself was read before the edit (an LSTM's
    h_j = o_j tanh(c_j)): the knockout acts on the memory from there on, so the loss at j is exact only for the
    families whose output is their state."""
    from seqviz.models.edit_batch import edited_traces

    family = of(model)
    if (why := family.why_not("linear_form")) is not None:
        raise ValueError(why)
    layer = _layer(model, layer)
    ids, _tokens = _ids(model, text)
    T = ids.shape[1]
    positions = [int(j) for j in positions]
    if not positions or min(positions) < 0 or max(positions) >= T:
        raise ValueError(f"positions must lie in 0..{T - 1}")
    p = parts(model, ids, layer)

    def remove(j):
        write = p.b[j].to(torch.float32)  # [U, N]

        def fn(state, t):
            if t != j:
                return state
            return state - (write if state.dim() == 3 else write[..., 0]).to(state.dtype)
        fn.first_step = j  # the batched runs restart from the earliest knocked-out token (``first_step``)
        return fn

    plain = model.trace(ids)
    runs = edited_traces(model, plain, [[(f"layers.{layer}.{p.edit}", remove(j))] for j in positions], ("loss",))
    base = plain["loss"][0].double().numpy()
    knocked = np.stack([r["loss"][0].double().numpy() for r in runs])
    delta = knocked - base
    for row, j in enumerate(positions):
        delta[row, :j] = np.nan  # losses before the token are untouched by construction
    return {"delta": delta, "plain": base, "knocked": knocked}


def knockout(model, text, position: int, layer: int = 0) -> dict:
    """``knockouts`` of one token: {"delta": [T − 1], "plain": [T − 1], "knocked": [T − 1]}."""
    got = knockouts(model, text, [position], layer)
    return {"delta": got["delta"][0], "plain": got["plain"], "knocked": got["knocked"][0]}
