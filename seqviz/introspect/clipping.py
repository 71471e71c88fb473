"""Exploding gradients and their clipping: a spectral-radius bench on the trained RNN, and a live training run.

The bench rescales a trained RNN's top recurrent matrix to a chosen spectral radius rho and
backpropagates every loss in float64 twice: ``linear_chain`` through W^(t-k) alone (tanh' = 1: the
linear RNN h_t = W h_{t-1} + U x_t), along W's leading eigenvector, where it grows like rho^(t-k)
above 1 and shrinks below (Pascanu et al. 2013, sec. 2), and ``tanh_chain`` through the trained RNN's own tanh, whose
derivative 1 - h^2 is small where the units saturate, so the chain vanishes at the same rho.
``clipping_runs`` trains a small tanh RNN twice from the same seed, without and with
``torch.nn.utils.clip_grad_norm_`` (g <- min(1, c/||g||) g), and records ||g|| and the loss
per step: the spikes of the first run and their taming in the second are measured, not drawn.
"""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import torch
import torch.nn as nn
import torch.nn.functional as F

from seqviz.introspect import gradients as gr
from seqviz.models.recurrent import RecurrentLM

FLOOR = 1e-300  # charts draw an underflow (0) here, marked; float64's smallest normal is 2.2e-308


def spectral_radius(W: torch.Tensor) -> float:
    """max |eig(W)| in float64."""
    return float(torch.linalg.eigvals(W.detach().double()).abs().max())


def radius_copy(model: RecurrentLM, rho: float, rho_trained: float | None = None) -> RecurrentLM:
    """A private float64 copy of a tanh RNN whose top-layer W_hh is rescaled to spectral radius ``rho``.

    ``rho_trained``: the original matrix's radius when already known (saves an eigendecomposition).
    """
    if model.config.cell != "rnn":
        raise ValueError(f"the spectral-radius bench needs a tanh RNN, not a {model.config.cell.upper()}")
    clone = copy.deepcopy(model).double()
    with torch.no_grad():
        W = clone.layers[-1].weight_hh_l0
        W.mul_(rho / (rho_trained or spectral_radius(W)))
    return clone


def _as_ids(ids) -> torch.Tensor:
    """[1, T] ids from a tensor or a plain sequence of ints (a cache key)."""
    return ids if isinstance(ids, torch.Tensor) else torch.tensor([list(ids)])


def _top_h(model: RecurrentLM, ids: torch.Tensor) -> torch.Tensor:
    name = f"layers.{model.config.n_layers - 1}.h"
    return model.trace(ids, names=[name])[name][0]  # [T, H]


def leading_left_eigenvector(W: torch.Tensor) -> torch.Tensor:
    """The unit (complex) u with u W = lambda u for the eigenvalue of largest |lambda|: the direction a
    gradient row vector keeps under W, multiplied by lambda each step."""
    values, vectors = torch.linalg.eig(W.detach().double().T)  # W^T v = lambda v  <=>  v W = lambda v
    u = vectors[:, int(values.abs().argmax())]
    return u / u.norm()


def linear_chain(model: RecurrentLM, ids) -> dict:
    """The linear RNN's chain at spectral radius 1 along W's leading left eigenvector, in float64.

    The seed is u, the unit leading left eigenvector of the trained top W_hh (radius rho_0), the same at
    every loss, backpropagated through (W / rho_0)^(t-k) alone: G1[t, k] = 1 at every distance, and at
    radius rho the chain is exactly rho^(t-k) G1 (``scale_chain``), so "grows like rho^(t-k)" holds at
    every rho. The bench scales it by the mean norm of the trained model's own seeds s_t = dL_t/dh_t
    (``seed_norms``). A seed in another direction need not grow so: a trained W is far from normal, so
    ||s (W/rho_0)^k|| can shrink for tens of steps before the leading direction takes over. Returns
    {"G1", "seed_norms", "rho_trained", "norm_trained" (||W||_2)}.
    """
    ids, W = _as_ids(ids), model.layers[-1].weight_hh_l0.detach().double()
    rho0 = spectral_radius(W)
    m64 = copy.deepcopy(model).double()
    seeds = gr.loss_seeds(m64, _top_h(m64, ids), ids)
    along = leading_left_eigenvector(W).expand(len(seeds), -1)
    return {"G1": gr.chain_norms(along, (W / rho0).to(torch.complex128)), "rho_trained": rho0,
            "seed_norms": seeds.norm(dim=1).numpy(), "norm_trained": float(torch.linalg.matrix_norm(W, ord=2))}


def scale_chain(G1: np.ndarray, rho: float) -> np.ndarray:
    """rho^(t-k) G1[t, k]: the linear chain at spectral radius rho (inf where float64 overflows)."""
    t, k = np.indices(G1.shape)
    with np.errstate(over="ignore", invalid="ignore"):
        return G1 * np.power(float(rho), (t - k).clip(min=0).astype(float))


def tanh_chain(model: RecurrentLM, ids, rho: float, rho_trained: float | None = None) -> dict:
    """The trained tanh RNN with its top W_hh rescaled to radius ``rho``: exact ||dL_t/dh_k|| in float64.

    Returns {"G": [T-1, T], "mean_tanh_prime": mean of 1 - h^2 over the text and the units, "tanh_prime":
    its mean over the units at each token [T], "norm": ||W||_2 after rescaling}. The chain's Jacobians are diag(1 - h_j^2) W, with h from the
    rescaled model's own forward pass, so this is the gradient of that model (tested on autograd).
    """
    clone, ids = radius_copy(model, rho, rho_trained), _as_ids(ids)
    W, h = clone.layers[-1].weight_hh_l0, _top_h(clone, ids)
    gains = 1 - h ** 2
    return {"G": gr.chain_norms(gr.loss_seeds(clone, h, ids), W, gains), "mean_tanh_prime": float(gains.mean()),
            "tanh_prime": gains.reshape(-1, gains.shape[-1]).mean(-1).double().numpy(),
            "norm": float(torch.linalg.matrix_norm(W, ord=2))}


def at_distance(curve: pd.DataFrame, d: int) -> float:
    """The mean of a ``by_distance`` table at distance d (NaN when the text is shorter)."""
    row = curve[curve["distance"] == d]
    return float(row["mean"].iloc[0]) if len(row) else float("nan")


# ------------------------------------------------------------------ a live training run
def char_ids(text: str) -> tuple[torch.Tensor, list[str]]:
    """The text as character ids over its own sorted alphabet."""
    chars = sorted(set(text))
    index = {c: i for i, c in enumerate(chars)}
    return torch.tensor([index[c] for c in text]), chars


class TinyRNN(nn.Module):
    """Embedding -> one tanh RNN layer -> linear head: the smallest char language model."""

    def __init__(self, vocab: int, hidden: int = 64, embed: int = 16):
        super().__init__()
        self.embed, self.rnn, self.head = nn.Embedding(vocab, embed), nn.RNN(embed, hidden, batch_first=True), \
            nn.Linear(hidden, vocab)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x [B, L] -> logits [B, L, V]
        return self.head(self.rnn(self.embed(x))[0])


def train_run(text: str, clip: float | None, lr: float = 2.0, steps: int = 60, seed: int = 0, hidden: int = 64,
              seq_len: int = 80, batch: int = 8, radius: float = 1.0) -> pd.DataFrame:
    """Plain SGD on random windows of ``text``; per step the loss, ||g|| before and after clipping.

    W_hh starts orthogonal times ``radius`` (spectral radius exactly ``radius``): at 1.0 and a
    large learning rate the recurrent chain drifts above 1 within a few steps, and without
    clipping single steps jump the loss by nats. ``clip``: the threshold c of
    ``clip_grad_norm_`` (None: no clipping). The applied norm is measured on the gradients
    after clipping, not computed from the formula. Same seed -> same windows and init.
    """
    data, chars = char_ids(text)
    if len(data) <= seq_len + 1:
        raise ValueError(f"the training text needs more than {seq_len + 1} characters, got {len(data)}")
    gen = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        net = TinyRNN(len(chars), hidden)
    with torch.no_grad():
        q, r = torch.linalg.qr(torch.randn(hidden, hidden, generator=gen, dtype=torch.float64))
        net.rnn.weight_hh_l0.copy_((q * torch.sign(torch.diagonal(r)) * radius).float())
    params = list(net.parameters())
    starts = torch.randint(0, len(data) - seq_len - 1, (steps, batch), generator=gen)
    offsets = torch.arange(seq_len + 1)
    rows = []
    with torch.enable_grad():
        for step in range(steps):
            window = data[starts[step][:, None] + offsets]  # [B, L+1]
            logits = net(window[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, len(chars)), window[:, 1:].reshape(-1))
            net.zero_grad()
            loss.backward()
            norm = float(nn.utils.clip_grad_norm_(params, float("inf") if clip is None else clip))
            applied = float(torch.sqrt(sum((p.grad.double() ** 2).sum() for p in params)))
            rows.append({"step": step, "loss": float(loss.detach()), "grad_norm": norm, "applied_norm": applied})
            with torch.no_grad():
                for p in params:
                    p -= lr * p.grad
    return pd.DataFrame(rows)


def clipping_runs(text: str, clip: float, **settings) -> pd.DataFrame:
    """``train_run`` without and with clipping at ``clip`` (same seed), stacked by ``stack_runs``."""
    return stack_runs(train_run(text, None, **settings), train_run(text, clip, **settings))


def stack_runs(free: pd.DataFrame, clipped: pd.DataFrame) -> pd.DataFrame:
    """The two runs in one frame with a ``run`` column ("without clipping" / "with clipping")."""
    return pd.concat([free.assign(run="without clipping"), clipped.assign(run="with clipping")], ignore_index=True)


def run_summary(runs: pd.DataFrame, clip: float) -> dict:
    """Per run: the largest ||g||, steps above the threshold, the largest one-step loss jump, the last-10 loss."""
    out = {}
    for name, r in runs.groupby("run", sort=False):
        out[name] = {"max_norm": float(r["grad_norm"].max()), "max_applied": float(r["applied_norm"].max()),
                     "above": int((r["grad_norm"] > clip).sum()), "jump": float(np.max(np.diff(r["loss"]))),
                     "final": float(r["loss"].tail(10).mean())}
    return out


def per_step(curve: pd.DataFrame, d: int) -> float:
    """The mean factor per step between distance 0 and d: (curve(d) / curve(0))^(1/d) (0 when curve(d) is 0)."""
    near, far = at_distance(curve, 0), at_distance(curve, d)
    return float((far / near) ** (1.0 / d)) if d > 0 and near > 0 else float("nan")
