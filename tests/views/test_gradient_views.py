"""seqviz.views.gradients against independent references: torch autograd through a step-by-step unroll, the
matrix of the shorter text computed directly, products and means by hand."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from seqviz import figures
from seqviz.introspect import gradients as gr
from seqviz.text import translator
from seqviz.views import gradients as views
from tests.conftest import build_tiny_lm

TEXT = "To be, or not to be, that is the question:\nWhether 'tis nobler in the mind to suffer\n"


def f64(cell: str, seed: int = 0):
    return copy.deepcopy(build_tiny_lm(cell, seed=seed)).double()


def ids_of(model, n: int) -> torch.Tensor:
    return torch.tensor([model.tokenizer.encode(TEXT).ids[:n]])


def autograd_matrix(model, ids: torch.Tensor) -> np.ndarray:
    """‖∂L_t/∂h^top_k‖ by autograd: the fused layers fed one token at a time, each h_k a node of the graph."""
    T = ids.shape[1]
    with torch.enable_grad():
        x = model.embed.weight[ids[0]].detach().clone().requires_grad_(True)[:, None]  # [T, 1, E]
        inputs = list(x.unbind(0))
        for layer in model.layers:
            state, outs = None, []
            for xt in inputs:
                out, state = layer(xt[None], state)  # out [1, 1, H]
                h = out[0]  # h_k: the next step reads this very tensor, so L_t depends on it through the chain
                state = (h[None], state[1]) if isinstance(state, tuple) else h[None]
                outs.append(h)
            inputs = outs
        top = inputs  # T x [1, H]
        G = np.full((T - 1, T), np.nan)
        for t in range(T - 1):
            loss = F.cross_entropy(model.head(top[t]), ids[0, t + 1: t + 2])
            grads = torch.autograd.grad(loss, top[: t + 1], retain_graph=True)
            G[t, : t + 1] = [float(g.norm()) for g in grads]
    return G


@pytest.mark.parametrize("cell", ["rnn", "gru", "lstm"])
def test_the_matrix_is_autograd_s(cell):
    m = f64(cell)
    G, pieces = views.matrix(m, TEXT, tokens=24)
    assert G.shape == (23, 24) and len(pieces) == 24
    want = autograd_matrix(m, ids_of(m, 24))
    assert np.array_equal(np.isnan(G), np.isnan(want))
    ok = ~np.isnan(want)
    assert G[ok] == pytest.approx(want[ok], rel=1e-9, abs=1e-300)


@pytest.mark.parametrize("cell, layer, wrt", [("rnn", -1, "h"), ("gru", 0, "h"), ("lstm", -1, "c"), ("lstm", 0, "h")])
@pytest.mark.parametrize("n", [2, 17, 50])
def test_the_tokens_slider_slices_the_one_matrix_exactly(cell, layer, wrt, n):
    """Causal: L_t reads tokens <= t + 1 only, so G of the first n tokens is the top-left block of G at the maximum
    (float64: equal to the last bits of rounding; the batched rows differ only in how many there are)."""
    m = f64(cell, seed=2)
    sliced, _pieces = views.matrix(m, TEXT, tokens=n, layer=layer, wrt=wrt)
    direct = gr.gradient_matrix(m, ids_of(m, n), layer=layer, wrt=wrt)
    assert sliced.shape == direct.shape == (n - 1, n)
    assert np.array_equal(np.isnan(sliced), np.isnan(direct))
    ok = ~np.isnan(direct)
    assert np.allclose(sliced[ok], direct[ok], rtol=1e-12, atol=0)


def test_moving_the_slider_computes_nothing_again(monkeypatch):
    m = f64("gru", seed=3)
    calls = []
    real = gr.gradient_matrix
    monkeypatch.setattr(gr, "gradient_matrix", lambda *a, **k: calls.append(a[1].shape[1]) or real(*a, **k))
    for n in (100, 20, 60, 30):
        views.matrix(m, TEXT, tokens=n)
    assert calls == [len(m.tokenizer.encode(TEXT).ids)]  # once, at the text cut at the maximum


def test_the_distance_curve_is_the_mean_of_each_diagonal():
    m = f64("lstm")
    view = views.distance_curve(m, TEXT, tokens=40, models=(("mine", m),))
    G = autograd_matrix(m, ids_of(m, 40))
    for d in (0, 3, 20):
        want = np.mean([G[t, t - d] for t in range(d, 39)])
        assert view.data.set_index("distance").loc[d, "mean"] == pytest.approx(want, rel=1e-9)
    assert view.facts["models"] == ("mine (LSTM)",) and view.facts["tokens"] == 40


def test_the_caption_names_the_drawn_model_whose_gradient_is_smallest_far_back():
    """By autograd, the mean of each model's diagonal 38 steps back (the farthest 39 tokens reach); the caption
    names the smallest and the largest of the models drawn (it said 'the vanilla RNN's falls fastest' whatever was
    drawn, an RNN or not), and with one model its value alone."""
    models = {"a": f64("rnn", seed=1), "b": f64("lstm", seed=2), "c": f64("gru", seed=3)}
    far = {name: autograd_matrix(m, ids_of(m, 40))[38, 0] for name, m in models.items()}  # t = 38, k = 0
    view = views.distance_curve(models["a"], TEXT, tokens=40, models=tuple(models.items()))
    labels = dict(zip(models, view.facts["models"]))
    low, high = min(far, key=far.get), max(far, key=far.get)
    assert (view.facts["distance"], view.facts["fastest"], view.facts["slowest"]) == (38, labels[low], labels[high])
    said = views.distance_caption(view.facts)
    assert f"38 steps back it is smallest for {labels[low]} ({far[low]:.1e}) and largest for {labels[high]} " \
           f"({far[high]:.1e})." in said and "vanilla RNN" not in said
    one = views.distance_caption(views.distance_curve(models["b"], TEXT, tokens=40, models=(("b", models["b"]),)).facts)
    assert one.endswith(f"38 steps back it is {far['b']:.1e}.")


def test_a_text_too_short_for_every_model_is_refused():
    m = f64("rnn")
    assert views.distance_curve(m, TEXT, tokens=30, models=(("a", m),)).facts["skipped"] == ()
    with pytest.raises(ValueError, match="two known tokens"):
        views.distance_curve(m, "T", tokens=30, models=(("a", m),))


def test_the_forget_curve_is_the_mean_product_of_the_gates():
    m = f64("lstm", seed=1)
    view = views.forget_curve(m, TEXT, tokens=30, layer=0)
    f = m.trace([TEXT[:30]])["layers.0.gates.forget"][0].numpy()  # a character model: one token per character
    for d in (1, 5):
        want = np.mean([np.prod(f[t - d + 1: t + 1], axis=0).mean() for t in range(d, 30)])
        assert view.data.set_index("distance").loc[d, "mean"] == pytest.approx(want, rel=1e-9)


def test_the_radius_bench_slices_its_linear_chain_exactly():
    m = build_tiny_lm("rnn", seed=4)
    full = views.radius_bench(m, TEXT, tokens=60, rho=1.5, far=10)
    alone = views.radius_bench(m, TEXT[:30], tokens=30, rho=1.5, far=10)
    short = views.radius_bench(m, TEXT, tokens=30, rho=1.5, far=10)
    for k in ("lin0", "lin", "tanh0", "tanh", "tanh_prime", "norm", "per_step"):
        assert short.facts[k] == pytest.approx(alone.facts[k], rel=1e-12)
    # both chains, every distance: the 30 tokens sliced from the longer text's are the 30-token text's own
    np.testing.assert_allclose(short.data.select_dtypes("number").to_numpy(), alone.data.select_dtypes("number")
                               .to_numpy(), rtol=1e-12)
    assert full.facts["lin"] / full.facts["lin0"] > 1 and short.facts["rho_d"] == pytest.approx(1.5 ** 10)
    with pytest.raises(ValueError, match="tanh RNN"):
        views.radius_bench(build_tiny_lm("gru"), TEXT, tokens=30)


def test_a_what_if_changes_a_copy_only():
    m = build_tiny_lm("lstm", seed=5)
    before = [p.clone() for p in m.parameters()]
    table = views.spectrum_change(m, edit=("orthogonal", True)).data
    assert np.allclose(table["spectral_radius after"], 1.0, atol=1e-5)
    both = views.what_if(m, TEXT, tokens=30, edit=("forget_shift", 2.0))
    assert set(both.data["model"]) == {"original", "changed copy"}
    assert all(torch.equal(a, b) for a, b in zip(before, m.parameters()))
    with pytest.raises(ValueError, match="forget gate"):
        views.what_if(build_tiny_lm("gru"), TEXT, tokens=30, edit=("forget_shift", 2.0))


def test_connectivity_is_the_gradient_of_the_logit_by_each_input():
    m = f64("gru", seed=6)
    view = views.connectivity(m, TEXT, tokens=30, target=12)
    ids = ids_of(m, 30)
    with torch.enable_grad():
        x = m.embed.weight[ids[:, :13]].detach().clone().requires_grad_(True)
        h = x
        for layer in m.layers:
            h, _state = layer(h)
        (g,) = torch.autograd.grad(m.head(h[0, 12])[ids[0, 13]], x)
    assert view.data["weight"].to_numpy() == pytest.approx(g[0].norm(dim=1).numpy(), rel=1e-9)
    assert view.facts["t"] == 12 and view.facts["next"] == m.tokenizer.encode(TEXT).pieces[13]


def test_the_two_paths_caption_quotes_both_paths_far_back():
    """The h path's value 28 steps back is autograd's G[28, 0]; the sentence says which path carries more there and
    quotes both (it said 'the hidden-state path falls faster' whatever the model's numbers)."""
    m = f64("lstm", seed=5)
    view = views.two_paths(m, TEXT, tokens=30)
    h = autograd_matrix(m, ids_of(m, 30))[28, 0]
    f = view.facts
    assert f["distance"] == 28 and f["h"] == pytest.approx(h, rel=1e-9)
    via_c = view.data[view.data["model"].str.startswith("via C")].set_index("distance").loc[28, "mean"]
    assert f["c"] == pytest.approx(via_c, rel=1e-12)
    said = views.two_paths_caption(f)
    if f["c"] >= f["h"]:
        assert f"the cell-state path carries {f['c']:.1e} and the hidden-state path {h:.1e}" in said
        assert f"{f['c'] / h:.3g} times as much through C" in said
    else:
        assert f"{h:.1e} through h against {f['c']:.1e} through C" in said
    assert "falls faster" not in said


def test_titles_and_series_go_through_the_installed_translator():
    m = build_tiny_lm("lstm")
    with translator(lambda s: "«" + s + "»"):
        view = views.two_paths(m, TEXT, tokens=30)
    assert view.chart.to_dict(validate=False)["title"] == "«Hidden-state path vs cell-state path»"
    assert set(view.data["model"]) == {"«via h: ‖∂L_t/∂h_k‖»", "«via C: ‖∂L_t/∂C_k‖»"}


def test_the_cli_figure_is_the_page_s_view():
    m = build_tiny_lm("gru")
    chart, frame, footnote = figures.render("gradient_flow", m, TEXT, tokens=30)
    view = views.distance_curve(m, TEXT, tokens=30, models=((figures._name(m), m),))
    assert frame.equals(view.data) and "tokens: 30" in footnote


def test_clipping_runs_follow_the_corpus_that_is_there_now(monkeypatch):
    """A fresh clone draws the bench on the shipped passage until the plays are fetched: the runs then follow
    the plays (the cache is keyed on the text's source, not only the settings)."""
    from seqviz.introspect import clipping as cl

    sample, plays = "A passage. " * 300, "Another text entirely! " * 300
    monkeypatch.setattr(views, "corpus_text", lambda: (sample, "the original sample passage"))
    before = views.clipping_loss(None, 1.0, 3.0, 0, 1500).facts
    monkeypatch.setattr(views, "corpus_text", lambda: (plays, "held-out validation plays (test)"))
    after = views.clipping_loss(None, 1.0, 3.0, 0, 1500).facts
    free = cl.train_run(plays[:1500], None, lr=3.0, seed=0)
    assert after["free_jump"] == pytest.approx(float(np.diff(free["loss"].to_numpy()).max()))
    assert after["plays"] and not before["plays"] and after["free_final"] != before["free_final"]
