"""Reference cells: the textbook formulas, one time step at a time, for parity tests.

Slow on purpose and written to read like the equations (Hochreiter & Schmidhuber 1997
with the forget gate of Gers et al. 2000; Cho et al. 2014 in PyTorch's variant, where
the reset gate multiplies ``W_hn h + b_hn``; Elman 1990 with tanh; minGRU and minLSTM as in
Feng et al. 2024, eqs. of sections 3.1.3 and 3.2.3 with the appendix's g, minGRU's z in PyTorch's sense).
"""

from __future__ import annotations

import torch

from seqviz.models.recurrent import RecurrentLM, next_token_loss
from seqviz.trace import loss_mask


def _sigmoid(v):
    return 1.0 / (1.0 + torch.exp(-v))


def _g(v):  # Feng et al.'s candidate activation: v + 1/2 for v >= 0, sigmoid(v) below
    return torch.where(v >= 0, v + 0.5, _sigmoid(v))


def _minimal_step(cell, rnn, x, h, keep):
    """One step of minGRU or minLSTM, its gates read from x alone."""
    H = rnn.hidden_size
    W, b = rnn.proj.weight, rnn.proj.bias
    if cell == "mingru":
        Wz, Wn = W.split(H)
        bz, bn = b.split(H)
        z = _sigmoid(x @ Wz.T + bz)  # keeps h_{t-1} (the paper's 1 - z)
        n = _g(x @ Wn.T + bn)
        keep("gates.update", z), keep("gates.new", n)
        return z * h + (1 - z) * n
    Wi, Wf, Wc = W.split(H)
    bi, bf, bc = b.split(H)
    i, f = _sigmoid(x @ Wi.T + bi), _sigmoid(x @ Wf.T + bf)
    n = _g(x @ Wc.T + bc)
    keep("gates.input", i / (f + i)), keep("gates.forget", f / (f + i)), keep("gates.cell", n)
    return f / (f + i) * h + i / (f + i) * n


@torch.no_grad()
def reference_trace(model: RecurrentLM, ids: torch.Tensor, mask: torch.Tensor) -> dict[str, torch.Tensor]:
    """Same names as ``model.trace`` for ids [B, T], computed step by step."""
    cell = model.config.cell
    out = {"tokens": ids, "mask": mask, "embed": model.embed.weight[ids]}
    x_seq = out["embed"]
    B, T = ids.shape
    for li, rnn in enumerate(model.layers):
        H = rnn.hidden_size
        if cell not in ("mingru", "minlstm"):
            W_ih, W_hh, b_ih, b_hh = rnn.weight_ih_l0, rnn.weight_hh_l0, rnn.bias_ih_l0, rnn.bias_hh_l0
        h = torch.zeros(B, H)
        c = torch.zeros(B, H)
        rows: dict[str, list] = {}

        def keep(name, value):
            rows.setdefault(f"layers.{li}.{name}", []).append(value)

        for t in range(T):
            x = x_seq[:, t]
            if cell in ("mingru", "minlstm"):
                h = _minimal_step(cell, rnn, x, h, keep)
            elif cell == "rnn":
                z = x @ W_ih.T + b_ih + h @ W_hh.T + b_hh
                h = torch.tanh(z)
                keep("preact", z)
            elif cell == "gru":
                Wir, Wiz, Win = W_ih.split(H)
                Whr, Whz, Whn = W_hh.split(H)
                bir, biz, bin_ = b_ih.split(H)
                bhr, bhz, bhn = b_hh.split(H)
                r = _sigmoid(x @ Wir.T + bir + h @ Whr.T + bhr)
                z = _sigmoid(x @ Wiz.T + biz + h @ Whz.T + bhz)
                n = torch.tanh(x @ Win.T + bin_ + r * (h @ Whn.T + bhn))
                h = (1 - z) * n + z * h
                keep("gates.reset", r), keep("gates.update", z), keep("gates.new", n)
            else:
                Wii, Wif, Wig, Wio = W_ih.split(H)
                Whi, Whf, Whg, Who = W_hh.split(H)
                bii, bif, big, bio = b_ih.split(H)
                bhi, bhf, bhg, bho = b_hh.split(H)
                i = _sigmoid(x @ Wii.T + bii + h @ Whi.T + bhi)
                f = _sigmoid(x @ Wif.T + bif + h @ Whf.T + bhf)
                g = torch.tanh(x @ Wig.T + big + h @ Whg.T + bhg)
                o = _sigmoid(x @ Wio.T + bio + h @ Who.T + bho)
                c = f * c + i * g
                h = o * torch.tanh(c)
                keep("c", c), keep("gates.input", i), keep("gates.forget", f)
                keep("gates.cell", g), keep("gates.output", o)
            keep("h", h)
        for name, values in rows.items():
            out[name] = torch.stack(values, dim=1)
        x_seq = out[f"layers.{li}.h"]
    out["logits"] = model.head(x_seq)
    out["loss"] = next_token_loss(out["logits"], ids, mask)
    out["loss_mask"] = loss_mask(mask)
    return out
