"""Time the full G[t, k] = ||dL_t/dh_k|| at T = 256 on a 256-unit LSTM, batched vs a per-t loop.

The batched path is one forward pass and one backward recursion that carries every loss
still reachable as a row (``seqviz.introspect.gradients.gradient_matrix``); the loop does
one autograd backward pass per loss position. Goals: <= 1 s and >= 5x. Last line:
``gradient_flow: <s>s, <ratio>x vs loop``.
"""

from __future__ import annotations

import copy
import sys
import time

import numpy as np
import torch

from seqviz.config import LMConfig
from seqviz.introspect import gradients as gr
from seqviz.models.recurrent import RecurrentLM


def loop(model, ids):
    T = ids.shape[1]
    G = np.full((T - 1, T), np.nan)
    with torch.enable_grad():
        run = gr.unrolled(model, ids)
        logp = torch.log_softmax(run["logits"][0], -1)
        for t in range(T - 1):
            grads = torch.autograd.grad(-logp[t, ids[0, t + 1]], run["h"][-1][: t + 1], retain_graph=True)
            G[t, : t + 1] = [float(g.norm()) for g in grads]
    return G


def main() -> None:
    torch.set_num_threads(int(sys.argv[1]) if len(sys.argv) > 1 else torch.get_num_threads())
    torch.manual_seed(0)
    T, H = 256, 256
    model = RecurrentLM(LMConfig(cell="lstm", n_layers=1, d_embed=64, d_hidden=H, vocab_size=86))
    model = model.eval().requires_grad_(False)
    ids = torch.randint(0, 86, (1, T))
    gr.gradient_matrix(model, ids[:, :32])  # warm-up
    t0 = time.perf_counter()
    fast = gr.gradient_matrix(model, ids)
    t_fast = time.perf_counter() - t0
    t0 = time.perf_counter()
    slow = loop(model, ids)
    t_loop = time.perf_counter() - t0
    # Both float32 methods against one float64 reference (the per-t autograd loop on a float64 copy, the
    # same T): relative deviation where the reference is above 1e-30 (below, float32 goes denormal or 0,
    # and a relative error says nothing), and the float64 batched result against the same reference.
    m64 = copy.deepcopy(model).double()
    ref = loop(m64, ids)
    ok = np.isfinite(ref) & (ref > 1e-30)

    def dev(G):
        return float(np.max(np.abs(G[ok] - ref[ok]) / ref[ok]))

    print(f"batched {t_fast:.2f}s, per-t loop {t_loop:.2f}s; max relative deviation from a float64 reference "
          f"(entries > 1e-30): batched float32 {dev(fast):.1e}, per-t loop float32 {dev(slow):.1e}, "
          f"batched float64 {dev(gr.gradient_matrix(m64, ids)):.1e} (goal <= 1e-6)")
    print(f"gradient_flow: {t_fast:.2f}s, {t_loop / t_fast:.1f}x vs loop")


if __name__ == "__main__":
    main()
