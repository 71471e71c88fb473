"""A Mamba block's selective scan in chunks of time: the trace's fast path, its memory bounded by the chunk.

Each block scans s_t = exp(Δ_t A) ⊙ s_(t−1) + Δ_t B_t u_t per channel and state and reads y_t = C_t s_t (Gu & Dao
2023, eq. 2a-2b). Written over the whole text, its decay, its drive and the state are [T, D, N] each: 98 MB apiece
for a block of mamba-130m (D = 1,536 channels, N = 16 states) at T = 1,000, and a scan over them in chunks of
√T steps reads them three times. Here each chunk of L tokens (L·D·N ≈ ``CHUNK_LANES``: a few MB, within the
cache) computes its own decay and drive, steps through them with one fused multiply-add per token over the D·N
lanes (transformers' own sequential path: the same products, in the same order), and is reduced to what the trace
keeps per token ([T, D]: y, each channel's slowest state and its decay) before the next chunk. The whole decay and
state are written only when a trace names them (``layers.{i}.decay``, ``layers.{i}.state``).

On mamba-130m at T = 1,000 a block's scan takes ~0.1 s of one CPU thread, and a trace of every block is as fast as
transformers' own forward (``benchmarks/scale.py``).
"""

from __future__ import annotations

import torch

CHUNK_LANES = 1 << 20  # L·D·N of one chunk (4 MB of float32 per chunk tensor)


def selective_scan(dt: torch.Tensor, A: torch.Tensor, B: torch.Tensor, C: torch.Tensor, u: torch.Tensor,
                   slow: torch.Tensor, leaves=frozenset(), edits=None) -> tuple[torch.Tensor, dict]:
    """(y [b, T, D], {leaf: tensor}) of one Mamba block's scan, for Δ, u [b, T, D], A [D, N], B, C [b, T, N] and each
    channel's slowest state ``slow`` [D]; ``leaves`` may name "s" and "gates.decay" ([b, T, D]: the slowest state and
    its decay), "state" and "decay" ([b, T, D, N]), "last" (the state after the last step, [b, D, N]). ``edits``:
    {"state": [fn], "s": [fn]} (``seqviz.models.edits``), each applied to the whole state [b, D, N], then to each
    channel's slowest state [b, D], right after step t computes it, before step t + 1 and the read y_t = C_t s_t see
    it."""
    batch, steps, width = u.shape
    lanes = A.shape[-1]
    size = max(1, min(steps, CHUNK_LANES // max(1, width * lanes)))  # L
    channel = torch.arange(width)
    y = u.new_empty(batch, steps, width)
    state = u.new_empty(batch, steps, width, lanes) if "state" in leaves else None
    decay = u.new_empty(batch, steps, width, lanes) if "decay" in leaves else None
    s = u.new_empty(batch, steps, width) if "s" in leaves else None
    work = None if state is not None else u.new_empty(batch, size, width, lanes)
    prev = u.new_zeros(batch, width, lanes)
    edit = step_edit(edits.get("state", ()), edits.get("s", ()), channel, slow) if edits else None
    for lo in range(0, steps, size):
        hi = min(steps, lo + size)
        a = torch.mul(dt[:, lo:hi, :, None], A, out=None if decay is None else decay[:, lo:hi]).exp_()  # exp(Δ_t A)
        b = dt[:, lo:hi, :, None] * B[:, lo:hi, None, :]
        b.mul_(u[:, lo:hi, :, None])  # Δ_t B_t u_t, multiplied in transformers' order
        out = state[:, lo:hi] if state is not None else work[:, : hi - lo]
        for j in range(hi - lo):
            prev = torch.addcmul(b[:, j], a[:, j], prev, out=out[:, j])
            if edit is not None and (edited := edit(prev, lo + j)) is not prev:
                out[:, j] = edited
                prev = out[:, j]
        y[:, lo:hi] = torch.matmul(out, C[:, lo:hi, :, None])[..., 0]  # C_t s_t per channel
        if s is not None:
            s[:, lo:hi] = out[:, :, channel, slow]
    parts = {"state": state, "decay": decay, "s": s, "last": prev if "last" in leaves else None}
    if "gates.decay" in leaves:
        parts["gates.decay"] = torch.exp(dt * A[channel, slow])
    return y, {k: v for k, v in parts.items() if v is not None}


def step_edit(on_state, on_s, channel: torch.Tensor, slow: torch.Tensor):
    """fn(state [b, D, N], t) -> state: the edits of the whole state, then those of each channel's slowest state
    (the state itself, untouched, where none acts at t)."""
    from seqviz.models.edits import _edited

    if not (on_state or on_s):
        return None

    def edit(state, t):
        given = state
        for fn in on_state:
            state = _edited(fn, state, t, "state")
        if on_s:
            s = state[:, channel, slow]
            for fn in on_s:
                s = _edited(fn, s, t, "s")
            state = state if state is given else state.clone()  # the scan's own buffer is written in place
            state[:, channel, slow] = s
        return state
    return edit
