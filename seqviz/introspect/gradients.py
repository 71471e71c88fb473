"""Gradient flow through time: G[t, k] = ||dL_t / dh_k|| by autograd, on real models.

BPTT multiplies one Jacobian per step, dh_j/dh_{j-1} = diag(1 - h_j^2) W_hh for the
vanilla RNN (Bengio et al. 1994; Pascanu et al. 2013), so the gradient a loss at t
sends back to step k shrinks or grows geometrically in t - k. The LSTM adds a second,
additive path through the cell state, dC_t/dC_{t-1} ~ f_t (Hochreiter & Schmidhuber
1997). Everything here is computed on an unrolled copy of the model's cells built from
its weights, so the shared, cached model is never modified and never gets ``.grad``.
"""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from seqviz.models.recurrent import RecurrentLM


def unrolled(model: RecurrentLM, ids: torch.Tensor, copies: int = 1) -> dict:
    """Step-by-step forward that keeps every h_k (and c_k) as its own autograd node.

    ids [1, T]; the sequence is run as ``copies`` identical batch rows, so that row b
    can carry its own loss and one backward pass yields many per-loss gradients.
    Returns {"x": [copies, T, E] leaf requiring grad, "h": per layer a list of T
    tensors [copies, H], "c": (LSTM) same, "logits": [copies, T, V]}.
    """
    cell = model.config.cell
    x = model.embed.weight[ids[0]].detach().clone().expand(copies, -1, -1).clone().requires_grad_(True)
    inputs = list(x.unbind(1))  # T x [copies, E]
    hs_all, cs_all = [], []
    for rnn in model.layers:
        W_ih, W_hh, b_ih, b_hh = rnn.weight_ih_l0, rnn.weight_hh_l0, rnn.bias_ih_l0, rnn.bias_hh_l0
        h = W_hh.new_zeros(copies, rnn.hidden_size)
        c = torch.zeros_like(h)
        hs, cs = [], []
        for xt in inputs:
            gi, gh = F.linear(xt, W_ih, b_ih), F.linear(h, W_hh, b_hh)
            if cell == "rnn":
                h = torch.tanh(gi + gh)
            elif cell == "gru":
                i_r, i_z, i_n = gi.chunk(3, -1)
                h_r, h_z, h_n = gh.chunk(3, -1)
                r, z = torch.sigmoid(i_r + h_r), torch.sigmoid(i_z + h_z)
                h = (1 - z) * torch.tanh(i_n + r * h_n) + z * h
            else:
                i, f, g, o = (gi + gh).chunk(4, -1)
                c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
                h = torch.sigmoid(o) * torch.tanh(c)
                cs.append(c)
            hs.append(h)
        hs_all.append(hs)
        cs_all.append(cs)
        inputs = hs
    logits = model.head(torch.stack(hs_all[-1], dim=1))  # [copies, T, V]
    return {"x": x, "h": hs_all, "c": cs_all, "logits": logits}


MAX_GRADIENT_TOKENS = 400  # the batch-of-copies trick costs O(T^2 H) memory and time


def gradient_matrix(model: RecurrentLM, ids: torch.Tensor, layer: int = -1, wrt: str = "h",
                    chunk: int | None = None) -> np.ndarray:
    """G[t, k] = ||dL_t / d{h|c}^{layer}_k||_2 for k <= t (NaN above the diagonal).

    Rows t = 0..T-2 (each position with a next token), columns k = 0..T-1, where
    L_t = -log p(ids[t+1] | ids[:t+1]). Exact: batch row b of an unrolled run carries
    only L_{t0+b}, so one backward pass gives a whole block of rows of G.
    """
    if wrt == "c" and model.config.cell != "lstm":
        raise ValueError("only an LSTM has a cell state c")
    T = ids.shape[1]
    if T < 2:
        raise ValueError("need at least two tokens: a loss needs a next token")
    if T > MAX_GRADIENT_TOKENS:
        raise ValueError(f"at most {MAX_GRADIENT_TOKENS} tokens for the exact gradient matrix, got {T}")
    H = model.config.d_hidden
    chunk = chunk or max(1, min(T - 1, int(3e7 // (T * H * model.config.n_layers * 12))))
    rows = []
    for t0 in range(0, T - 1, chunk):
        ts = torch.arange(t0, min(T - 1, t0 + chunk))
        with torch.enable_grad():
            run = unrolled(model, ids[:, : int(ts[-1]) + 2], copies=len(ts))
            logp = torch.log_softmax(run["logits"][torch.arange(len(ts)), ts], dim=-1)  # row b at t0+b
            loss = -logp.gather(1, ids[0, ts + 1, None]).sum()
            nodes = run[wrt][layer]
            grads = torch.autograd.grad(loss, nodes, allow_unused=True)
        block = torch.zeros(len(ts), T, dtype=torch.float64)
        for k, g in enumerate(grads):
            if g is not None:
                block[:, k] = g.double().norm(dim=1)
        rows.append(block)
    G = torch.cat(rows).detach().numpy().astype(np.float64)
    t_idx, k_idx = np.indices(G.shape)
    G[k_idx > t_idx] = np.nan
    return G


def by_distance(G: np.ndarray, name: str = "") -> pd.DataFrame:
    """Mean, median and 10-90% spread of G[t, t-d] over t, for each distance d >= 0."""
    rows = []
    T1 = G.shape[0]
    for d in range(T1):
        vals = np.array([G[t, t - d] for t in range(d, T1)])
        vals = vals[np.isfinite(vals)]
        if vals.size == 0:
            continue
        rows.append({"model": name, "distance": d, "mean": vals.mean(), "median": np.median(vals),
                     "q10": np.quantile(vals, 0.1), "q90": np.quantile(vals, 0.9), "count": vals.size})
    return pd.DataFrame(rows)


def forget_product(forget: torch.Tensor) -> pd.DataFrame:
    """Mean over units and t of prod_{j=k+1}^{t} f_j against the distance t - k.

    forget: [T, H] (one row of a trace's ``layers.{i}.gates.forget``). The seeds'
    dC_t/dC_{t-1} ~ f_t: this product is the cell-state path's gain, ignoring the
    gates' own dependence on h.
    """
    logf = torch.log(forget.double().clamp_min(1e-300))
    cum = torch.cat([torch.zeros(1, logf.shape[1], dtype=logf.dtype), logf.cumsum(0)])  # S_t = sum_{j<=t}
    T = forget.shape[0]
    rows = []
    for d in range(T):
        t = torch.arange(d, T)
        prod = torch.exp(cum[t + 1] - cum[t - d + 1])  # prod_{j=t-d+1}^{t} f_j
        rows.append({"distance": d, "mean": float(prod.mean()), "median": float(prod.median())})
    return pd.DataFrame(rows)


def connectivity(model: RecurrentLM, ids: torch.Tensor, target: int) -> np.ndarray:
    """||d logit_target[ids[target+1]] / d x_k|| for every input position k (Distill 2019)."""
    t = min(target, ids.shape[1] - 1)
    with torch.enable_grad():
        run = unrolled(model, ids[:, : t + 1])
        logits = run["logits"][0, t]
        nxt = ids[0, t + 1] if t + 1 < ids.shape[1] else logits.argmax()
        (g,) = torch.autograd.grad(logits[nxt], run["x"])
    return g[0].norm(dim=1).detach().numpy()


# ------------------------------------------------------------------ what-if, on copies
GATE_BLOCKS = {"rnn": ("W_hh",), "gru": ("reset", "update", "new"), "lstm": ("input", "forget", "cell", "output")}


def recurrent_spectrum(model: RecurrentLM, layer: int = 0) -> pd.DataFrame:
    """Spectral norm ||W||_2 and spectral radius max|eig(W)| of each H x H recurrent block."""
    W = model.layers[layer].weight_hh_l0.detach().double()
    H = W.shape[1]
    rows = []
    for name, block in zip(GATE_BLOCKS[model.config.cell], W.split(H)):
        rows.append({"block": name, "spectral_norm": float(torch.linalg.matrix_norm(block, ord=2)),
                     "spectral_radius": float(torch.linalg.eigvals(block).abs().max())})
    return pd.DataFrame(rows)


def edited_copy(model: RecurrentLM, scale_to: float | None = None, forget_shift: float = 0.0,
                orthogonal: bool = False, seed: int = 0) -> RecurrentLM:
    """A private copy with its recurrent weights changed; the original is untouched.

    ``scale_to``: rescale every layer's W_hh block by block so each block's spectral norm
    equals this value. ``forget_shift``: add to the LSTM forget-gate bias. ``orthogonal``:
    re-initialise W_hh blocks orthogonally (spectral radius 1; Saxe et al. 2014).
    """
    clone = copy.deepcopy(model)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for rnn in clone.layers:
            H = rnn.hidden_size
            for block in rnn.weight_hh_l0.split(H):
                if orthogonal:
                    q, r = torch.linalg.qr(torch.randn(H, H, generator=gen, dtype=torch.float64))
                    block.copy_((q * torch.sign(torch.diagonal(r))).to(block.dtype))
                if scale_to is not None:
                    norm = torch.linalg.matrix_norm(block.double(), ord=2)
                    if norm > 0:
                        block.mul_(float(scale_to / norm))
            if forget_shift and clone.config.cell == "lstm":
                rnn.bias_hh_l0[H: 2 * H] += forget_shift
    return clone


def clipped_step(model: RecurrentLM, ids: torch.Tensor, lr: float = 0.1, clip: float | None = None) -> dict:
    """One SGD step on a copy: global gradient norm before/after clipping, update size.

    Clipping rescales g <- min(1, c / ||g||) g (Pascanu et al. 2013): it keeps the
    direction and only ever shrinks, so it tames explosions but cannot undo vanishing.
    """
    clone = copy.deepcopy(model).requires_grad_(True)
    params = [p for p in clone.parameters()]
    with torch.enable_grad():
        logits, _ = clone(ids[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))
        grads = torch.autograd.grad(loss, params)
    norm = float(torch.sqrt(sum((g.double() ** 2).sum() for g in grads)))
    scale = 1.0 if clip is None else min(1.0, clip / (norm + 1e-6))
    with torch.no_grad():
        for p, g in zip(params, grads):
            p -= lr * scale * g
    clone.requires_grad_(False).eval()
    return {"model": clone, "loss": float(loss.detach()), "grad_norm": norm, "clipped_norm": norm * scale,
            "update_norm": lr * norm * scale}
