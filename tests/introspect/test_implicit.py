"""Memory as attention (``introspect.implicit``): each family's contributions against an independent reference."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import seqviz
from seqviz.introspect.implicit import contributions, knockout
from tests.conftest import build_tiny_lm, build_tiny_mamba, build_tiny_mamba2

TEXT = "the cat sat on the mat."
GATED = {"gru": (("update",), lambda g: (1 - g["update"]) * g["new"]),
         "mingru": (("update",), lambda g: (1 - g["update"]) * g["new"]),
         "lstm": (("forget",), lambda g: g["input"] * g["cell"]),
         "minlstm": (("forget",), lambda g: g["input"] * g["cell"])}


def _gates(model, layer):
    trace = model.trace(TEXT)
    return {k.rsplit(".", 1)[1]: trace[k][0].double().numpy() for k in trace
            if k.startswith(f"layers.{layer}.gates.")}, trace


@pytest.mark.parametrize("cell", list(GATED))
def test_a_gated_cells_contributions_are_the_products_of_its_traced_gates(cell):
    """[t, j, u] = (∏_{k=j+1..t} a_k[u]) · b_j[u] in float64, loop by loop, from the gates the model traced; their
    sum over j is the traced memory (the LSTM's c, else h), to float32 precision."""
    model = build_tiny_lm(cell, seed=2)
    (decay,), write = GATED[cell]
    for layer in (0, 1):
        g, trace = _gates(model, layer)
        a, b = g[decay], write(g)
        T, U = a.shape
        ref = np.zeros((T, T, U))
        for t in range(T):
            for j in range(t + 1):
                ref[t, j] = np.prod(a[j + 1: t + 1], axis=0) * b[j]
        got = contributions(model, TEXT, layer=layer)
        assert got.family == cell and got.contributions.shape == (T, T, U)
        assert np.allclose(got.contributions, ref, atol=1e-6, rtol=1e-5)
        memory = trace[f"layers.{layer}.{'c' if 'lstm' == cell else 'h'}"][0].numpy()
        scale = 1 + np.abs(memory).max()
        assert np.abs(got.contributions.sum(1) + got.skip - memory).max() < 64 * np.finfo(np.float32).eps * scale
        assert np.all(got.contributions[np.triu_indices(T, 1)] == 0), "no token adds to a step before it"


def test_a_tanh_rnn_has_no_such_form_and_says_where_to_look():
    with pytest.raises(ValueError, match="connectivity"):
        contributions(build_tiny_lm("rnn"), TEXT)


def test_units_are_selected_and_the_size_is_bounded():
    model = build_tiny_lm("lstm", seed=2)
    full = contributions(model, TEXT, layer=1)
    some = contributions(model, TEXT, layer=1, units=[7, 2])
    assert list(some.units) == [2, 7]
    assert np.array_equal(some.contributions, full.contributions[..., [2, 7]])
    with pytest.raises(ValueError, match="fewer units"):
        contributions(model, TEXT, units=range(12), max_bytes=1000)
    with pytest.raises(ValueError, match="units must lie"):
        contributions(model, TEXT, units=[99])
    with pytest.raises(ValueError, match="layer 5 does not exist"):
        contributions(model, TEXT, layer=5)


@pytest.mark.parametrize("build", [build_tiny_mamba, build_tiny_mamba2], ids=["mamba", "mamba2"])
def test_mambas_hidden_attention_follows_its_formula(build, tmp_path):
    """M[c, t, j] = Σ_n C_t[n] exp(Σ_{k=j+1..t} Δ_k[c] A[c, n]) Δ_j[c] B_j[n] x_j[c] (Ali, Zimerman & Wolf 2025), from
    A_log and the traced Δ, B, C, x, in float64; plus D x_t, it is the scan's output y_t = C_t s_t + D x_t."""
    model = seqviz.load(build(tmp_path / "m"))
    ids = [3, 5, 7, 9, 11, 4, 6, 8, 10]
    layer = 1
    trace = model.trace([ids], names=[f"layers.{layer}.{k}" for k in ("x", "dt", "B", "C", "state")])
    x, dt, B, C = (trace[f"layers.{layer}.{k}"][0].double().numpy() for k in ("x", "dt", "B", "C"))
    mixer = model.model.backbone.layers[layer].mixer
    A = -np.exp(mixer.A_log.double().numpy())
    D = x.shape[1]
    if A.ndim == 1:  # Mamba-2: one A per head, B and C per group
        P, G = mixer.head_dim, mixer.n_groups
        head = np.arange(D) // P
        group = head // (mixer.num_heads // G)
        A = np.repeat(A[head][:, None], mixer.ssm_state_size, 1)
        N = mixer.ssm_state_size
        B = B.reshape(len(ids), G, N)[:, group]  # [T, D, N]
        C = C.reshape(len(ids), G, N)[:, group]
        skip_D = mixer.D.double().numpy()[head]
    else:
        B, C = B[:, None, :], C[:, None, :]
        skip_D = mixer.D.double().numpy()
    T = len(ids)
    ref = np.zeros((T, T, D))
    for t in range(T):
        for j in range(t + 1):
            decay = np.exp(dt[j + 1: t + 1].sum(0)[:, None] * A)  # [D, N]
            ref[t, j] = (C[t] * decay * dt[j][:, None] * B[j] * x[j][:, None]).sum(-1)
    got = contributions(model, ids, layer=layer)
    assert np.allclose(got.contributions, ref, atol=1e-5, rtol=1e-4)
    assert np.allclose(got.skip, skip_D * x, atol=1e-6)
    y = got.contributions.sum(1) + got.skip
    assert np.abs(y - got.memory).max() < 64 * np.finfo(np.float32).eps * (1 + np.abs(got.memory).max())


def test_a_knockout_equals_a_hand_loop_without_that_write():
    """minGRU's top layer, its gates reading only the layer below: removing token j's write leaves
    h'_t = h_t − (∏_{k=j+1..t} z_k)(1 − z_j) n_j, and the head reads h'. The loss change at every later position
    is recomputed from that by hand and matches the edited run."""
    model = build_tiny_lm("mingru", seed=4)
    j, layer = 5, 1
    got = knockout(model, TEXT, j, layer=layer)
    g, trace = _gates(model, layer)
    z, n, h = g["update"], g["new"], trace[f"layers.{layer}.h"][0].double().numpy()
    T = h.shape[0]
    for t in range(j, T):
        h[t] -= np.prod(z[j + 1: t + 1], axis=0) * (1 - z[j]) * n[j]
    logits = model.head(torch.from_numpy(h).float()).double()
    ids = trace["tokens"][0]
    loss = -torch.log_softmax(logits, -1)[torch.arange(T - 1), ids[1:]].numpy()
    assert np.all(np.isnan(got["delta"][:j]))
    assert np.allclose(got["knocked"], loss, atol=1e-5)
    assert np.allclose(got["delta"][j:], loss[j:] - got["plain"][j:], atol=1e-5)
    assert np.nanmax(np.abs(got["delta"])) > 1e-4, "the write mattered"
