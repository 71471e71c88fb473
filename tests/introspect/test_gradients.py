"""Gradient flow against independent references: the BPTT Jacobian product by hand, a
perturbation injected into a hand-written LSTM loop, and the textbook's printed numbers."""

import math

import numpy as np
import pytest
import torch

from seqviz.config import LMConfig
from seqviz.introspect import gradients as gr
from seqviz.introspect import worked_examples as we
from seqviz.models.recurrent import RecurrentLM


def tiny(cell, n_layers=1, H=5, V=9, seed=0):
    torch.manual_seed(seed)
    m = RecurrentLM(LMConfig(cell=cell, n_layers=n_layers, d_embed=4, d_hidden=H, vocab_size=V)).double()
    with torch.no_grad():
        for p in m.parameters():
            p.normal_(0, 0.7)
    return m.eval().requires_grad_(False)


IDS = torch.tensor([[1, 4, 2, 8, 5, 7, 3]])


def test_rnn_gradient_matrix_equals_the_bptt_jacobian_product():
    m = tiny("rnn")
    G = gr.gradient_matrix(m, IDS)
    tr = m.trace(IDS)
    h, logits = tr["layers.0.h"][0], tr["logits"][0]
    W_hh, W_out = m.layers[0].weight_hh_l0, m.head.weight
    T = IDS.shape[1]
    for t in range(T - 1):
        onehot = torch.zeros(m.config.vocab_size, dtype=torch.float64)
        onehot[IDS[0, t + 1]] = 1
        grad = (torch.softmax(logits[t], -1) - onehot) @ W_out  # dL_t/dh_t
        for k in range(t, -1, -1):
            assert G[t, k] == pytest.approx(float(grad.norm()), rel=1e-6), (t, k)
            grad = grad @ (torch.diag(1 - h[k] ** 2) @ W_hh) if k > 0 else grad  # chain to h_{k-1}
        assert np.isnan(G[t, t + 1:]).all()


def test_lstm_cell_path_matches_a_perturbation_in_a_hand_written_loop():
    m = tiny("lstm", H=4)
    G = gr.gradient_matrix(m, IDS, wrt="c")
    rnn = m.layers[0]
    W_ih, W_hh, b = rnn.weight_ih_l0, rnn.weight_hh_l0, rnn.bias_ih_l0 + rnn.bias_hh_l0
    t, k = 5, 2

    def loss_with_delta(delta):
        h = torch.zeros(4, dtype=torch.float64)
        c = torch.zeros(4, dtype=torch.float64)
        for s in range(t + 1):
            z = W_ih @ m.embed.weight[IDS[0, s]] + W_hh @ h + b
            i, f, g, o = torch.sigmoid(z[:4]), torch.sigmoid(z[4:8]), torch.tanh(z[8:12]), torch.sigmoid(z[12:])
            c = f * c + i * g + (delta if s == k else 0)
            h = o * torch.tanh(c)
        return -torch.log_softmax(m.head(h), -1)[IDS[0, t + 1]]

    delta = torch.zeros(4, dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(loss_with_delta(delta), delta)
    assert G[t, k] == pytest.approx(float(g.norm()), rel=1e-6)


def test_by_distance_averages_diagonals():
    G = np.array([[1.0, np.nan], [0.5, 2.0]])
    df = gr.by_distance(G)
    assert df["mean"].tolist() == [1.5, 0.5]


def test_forget_product_is_the_product_of_gates():
    f = torch.tensor([[0.5, 1.0], [0.8, 0.9], [0.25, 0.5]])
    df = gr.forget_product(f).set_index("distance")
    # distance 1: mean over t=1,2 and units of f_t
    assert df.loc[1, "mean"] == pytest.approx(np.mean([0.8, 0.9, 0.25, 0.5]))
    assert df.loc[2, "mean"] == pytest.approx(np.mean([0.8 * 0.25, 0.9 * 0.5]))


def test_edited_copy_sets_spectral_norm_and_leaves_the_original_alone():
    m = tiny("rnn", H=6)
    before = m.layers[0].weight_hh_l0.clone()
    edited = gr.edited_copy(m, scale_to=2.0)
    assert torch.equal(m.layers[0].weight_hh_l0, before)
    spec = gr.recurrent_spectrum(edited)
    assert spec["spectral_norm"][0] == pytest.approx(2.0, rel=1e-6)
    ortho = gr.recurrent_spectrum(gr.edited_copy(m, orthogonal=True))
    assert ortho["spectral_norm"][0] == pytest.approx(1.0, rel=1e-6)
    assert ortho["spectral_radius"][0] == pytest.approx(1.0, rel=1e-6)
    lstm = tiny("lstm", H=3)
    shifted = gr.edited_copy(lstm, forget_shift=1.5)
    diff = shifted.layers[0].bias_hh_l0 - lstm.layers[0].bias_hh_l0
    assert diff.tolist() == pytest.approx([0] * 3 + [1.5] * 3 + [0] * 6)


def test_clipped_step_reports_norms_and_never_touches_the_original():
    m = tiny("lstm")
    snapshot = [p.clone() for p in m.parameters()]
    free = gr.clipped_step(m, IDS, lr=0.1, clip=None)
    clipped = gr.clipped_step(m, IDS, lr=0.1, clip=0.01)
    assert clipped["grad_norm"] == pytest.approx(free["grad_norm"])
    assert clipped["clipped_norm"] == pytest.approx(0.01, rel=1e-3)
    moved = torch.sqrt(sum(((a - b) ** 2).sum() for a, b in zip(clipped["model"].parameters(), m.parameters())))
    assert float(moved) == pytest.approx(clipped["update_norm"], rel=1e-6)
    assert all(torch.equal(a, b) for a, b in zip(snapshot, m.parameters()))


def test_connectivity_is_zero_after_the_target():
    m = tiny("gru")
    conn = gr.connectivity(m, IDS, target=3)
    assert conn.shape == (4,) and (conn > 0).all()


def test_scalar_rnn_reproduces_the_textbook_numbers():
    df = we.scalar_rnn(0.5)
    h1 = math.tanh(1.0)
    h2 = math.tanh(0.5 * h1 + 0.5)
    h3 = math.tanh(0.5 * h2 - 0.2)
    assert df["h_t"].tolist() == pytest.approx([h1, h2, h3], abs=1e-12)
    assert df["∂h_t/∂h_1"].iloc[-1] == pytest.approx((1 - h2 ** 2) * 0.5 * (1 - h3 ** 2) * 0.5, abs=1e-12)
    # The book prints four decimals and rounds tanh(0.8808) to 0.7064 (it is 0.7068): within 1e-3.
    assert df["h_t"].tolist() == pytest.approx([0.7616, 0.7064, 0.1520], abs=1e-3)
    assert df["∂h_t/∂h_{t-1}"].tolist()[1:] == pytest.approx([0.2505, 0.4885], abs=1e-3)
    assert df["∂h_t/∂h_1"].iloc[-1] == pytest.approx(0.1224, abs=1e-3)
    # At w_hh = 2.0 the forward pass changes too (the book's table reuses h from w_hh = 0.5).
    h = we.scalar_rnn(2.0)["h_t"].tolist()
    assert h[1] == pytest.approx(math.tanh(2.0 * math.tanh(1.0) + 0.5))


def test_scalar_lstm_reproduces_the_textbook_numbers():
    df = we.scalar_lstm()
    sig = lambda v: 1 / (1 + math.exp(-v))  # noqa: E731
    c1 = sig(0.7 - 0.2) * math.tanh(0.9)
    h1 = sig(0.6) * math.tanh(c1)
    assert df.loc[0, "C_t"] == pytest.approx(c1, abs=1e-12) and df.loc[0, "h_t"] == pytest.approx(h1, abs=1e-12)
    assert df.loc[1, "f_t"] == pytest.approx(sig(0.1 * h1 + 0.5), abs=1e-12)
    # The book's three-decimal values (it rounds intermediates, so allow 1.5e-3).
    book = [[0.802, 0.622, 0.716, 0.445, 0.646, 0.270], [0.629, 0.470, 0.153, 0.352, 0.527, 0.178]]
    got = df[["f_t", "i_t", "C̃_t", "C_t", "o_t", "h_t"]].values.tolist()
    assert np.allclose(got, book, atol=1.5e-3)


def test_station_benches():
    fp = we.forget_products().set_index(["f", "k"])
    assert fp.loc[(0.9, 100), "f^k"] == pytest.approx(2.656e-5, rel=1e-3)
    assert fp.loc[(1.0, 100), "f^k"] == 1.0
    bound = we.norm_gamma_bound().set_index(["‖W_hh‖", "t − k"])
    assert bound.loc[(0.9, 200), "(‖W‖·γ)^(t−k)"] == pytest.approx(7.06e-10, rel=1e-2)


def per_t_loop(m, ids, layer=-1):
    """The plain way: one backward pass per loss position, on the unrolled graph."""
    T = ids.shape[1]
    G = np.full((T - 1, T), np.nan)
    with torch.enable_grad():
        run = gr.unrolled(m, ids)
        logp = torch.log_softmax(run["logits"][0], -1)
        for t in range(T - 1):
            grads = torch.autograd.grad(-logp[t, ids[0, t + 1]], run["h"][layer][: t + 1], retain_graph=True)
            G[t, : t + 1] = [float(g.norm()) for g in grads]
    return G


@pytest.mark.parametrize("cell", ["rnn", "gru", "lstm", "mingru", "minlstm"])
def test_batched_gradient_matrix_equals_a_per_t_backward_loop(cell):
    m = tiny(cell, n_layers=2)
    for layer in (0, 1):
        fast, loop = gr.gradient_matrix(m, IDS, layer=layer), per_t_loop(m, IDS, layer)
        assert np.allclose(np.nan_to_num(fast), np.nan_to_num(loop), rtol=1e-9, atol=0)


def test_book_method_reproduces_the_printed_table_and_the_true_forward_pass_differs():
    for w, printed in we.BOOK_PRINTED.items():  # the book rounds h_2 to 0.7064 (it is 0.7068): within 3e-3
        assert we.book_method(w)["∂h_t/∂h_1"].iloc[-1] == pytest.approx(printed, abs=3e-3)
    h2, h3 = math.tanh(0.5 * math.tanh(1.0) + 0.5), math.tanh(0.5 * math.tanh(0.5 * math.tanh(1.0) + 0.5) - 0.2)
    assert we.book_method(2.0)["∂h_t/∂h_{t-1}"].tolist() == pytest.approx([(1 - h2 ** 2) * 2, (1 - h3 ** 2) * 2])
    t2 = math.tanh(2.0 * math.tanh(1.0) + 0.5)  # the true forward pass at W_hh = 2.0 saturates
    t3 = math.tanh(2.0 * t2 - 0.2)
    row = we.book_comparison([2.0, 0.5]).set_index("W_hh")
    assert row.loc[2.0, "h_2"] == pytest.approx(t2) and row.loc[2.0, "1 − h_2²"] == pytest.approx(1 - t2 ** 2)
    assert row.loc[2.0, "∂h_3/∂h_1"] == pytest.approx((1 - t2 ** 2) * 2 * (1 - t3 ** 2) * 2, rel=1e-12)
    assert row.loc[2.0, "∂h_3/∂h_1"] < row.loc[0.5, "∂h_3/∂h_1"] < 1  # vanishes, not explodes
    assert row.loc[2.0, "∂h_3/∂h_1 (book, printed)"] == 1.9581 and np.isnan(
        we.book_comparison([1.3])["∂h_3/∂h_1 (book, printed)"].iloc[0])


def test_chain_norms_with_gains_equals_the_rnn_gradient_matrix():
    m = tiny("rnn", n_layers=2)
    h = m.trace(IDS)["layers.1.h"][0]
    seeds = gr.loss_seeds(m, h, IDS)
    G = gr.chain_norms(seeds, m.layers[1].weight_hh_l0, 1 - h ** 2)
    assert np.allclose(np.nan_to_num(G), np.nan_to_num(per_t_loop(m, IDS, 1)), rtol=1e-9, atol=0)


@pytest.mark.parametrize("cell", ["mingru", "minlstm"])
def test_minimal_cells_unrolled_graph_is_the_formula_by_formula_model(cell):
    from seqviz.models.reference import reference_trace

    m = tiny(cell, n_layers=2)
    with torch.enable_grad():
        logits = gr.unrolled(m, IDS)["logits"].detach()
    ref = reference_trace(m, IDS, torch.ones_like(IDS, dtype=torch.bool))["logits"]
    assert torch.allclose(logits, ref, rtol=1e-12, atol=1e-12)
    # one layer: dL_t/dh_k is dL_t/dh_t times the kept fraction of every step between (the diagonal Jacobian)
    one = tiny(cell, n_layers=1)
    G = gr.gradient_matrix(one, IDS)
    tr = one.trace(IDS)
    keep = tr["layers.0.gates." + ("update" if cell == "mingru" else "forget")][0]
    seeds = gr.loss_seeds(one, tr["layers.0.h"][0], IDS)
    for t, k in ((5, 1), (3, 3), (4, 0)):
        assert G[t, k] == pytest.approx(float((seeds[t] * keep[k + 1: t + 1].prod(0)).norm()), rel=1e-9)


@pytest.mark.parametrize("cell", ["mingru", "minlstm"])
def test_minimal_cells_refuse_w_hh_edits_and_shift_their_own_retention_bias(cell):
    from seqviz.introspect.memory import shifted_copy

    m = tiny(cell, H=3)
    with pytest.raises(ValueError, match="no W_hh"):
        gr.edited_copy(m, orthogonal=True)
    with pytest.raises(ValueError, match="has no W_hh"):
        gr.recurrent_spectrum(m)
    diff = shifted_copy(m, 1.5).layers[0].proj.bias - m.layers[0].proj.bias
    expected = [1.5] * 3 + [0] * 3 if cell == "mingru" else [0] * 3 + [1.5] * 3 + [0] * 3
    assert diff.tolist() == pytest.approx(expected)


# The seed's lines (textbook ch. 5, sec. 1.4, Step 4, seed 001), copied here: the tests never read ../shared.
BOOK_STEP_4 = """0.5	0.2505	0.4885	0.1224 — ✅ 梯度消失
0.9	0.4509	0.8792	0.3965 — ⚠️ 长序列仍会消失
2.0	1.0020	1.9538	1.9581 — ❌ 梯度爆炸"""


def test_every_book_value_is_quoted_exactly_as_printed():
    printed = {float(row.split("\t")[0]): float(row.split("\t")[3].split(" ")[0]) for row in BOOK_STEP_4.splitlines()}
    assert we.BOOK_PRINTED == printed  # 0.3965 and 1.9581, not the 0.3959 / 1.9553 the book's method gives
    shown = we.book_comparison(list(printed)).set_index("W_hh")["∂h_3/∂h_1 (book, printed)"].to_dict()
    assert shown == printed
