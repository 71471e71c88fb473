"""The spectral-radius bench and the clipping run against independent references: an eigenbasis built
by hand, torch autograd on the rescaled model, and clip_grad_norm_'s own guarantee measured on the gradients."""

import json

import numpy as np
import pandas as pd
import pytest
import torch

from seqviz.charts import gradients as charts
from seqviz.config import LMConfig
from seqviz.introspect import clipping as cl
from seqviz.introspect import gradients as gr
from seqviz.introspect.projection import REFERENCE_FILE
from seqviz.models.recurrent import RecurrentLM

IDS = torch.tensor([[1, 4, 2, 8, 5, 7, 3, 3, 6, 0, 2, 8]])


def tiny_rnn(H=6, V=9, n_layers=2, seed=0, dtype=torch.float64):
    torch.manual_seed(seed)
    m = RecurrentLM(LMConfig(cell="rnn", n_layers=n_layers, d_embed=4, d_hidden=H, vocab_size=V)).to(dtype)
    with torch.no_grad():
        for p in m.parameters():
            p.normal_(0, 0.7)
    return m.eval().requires_grad_(False)


@pytest.mark.parametrize("rho", [0.6, 1.0, 1.7])
def test_linear_chain_is_rho_to_the_distance_for_a_diagonalisable_w(rho):
    g = torch.Generator().manual_seed(1)
    V = torch.randn(5, 5, generator=g, dtype=torch.float64) + 3 * torch.eye(5, dtype=torch.float64)
    lam = torch.tensor([rho, 0.5 * rho, -0.3 * rho, 0.2 * rho, 0.1 * rho], dtype=torch.float64)
    W = V @ torch.diag(lam) @ torch.linalg.inv(V)  # eigenvalues lam, W = V diag(lam) V^-1
    u = torch.linalg.inv(V)[0]  # left eigenvector of rho: u W = rho u
    assert torch.allclose(u @ W, rho * u)
    T1 = 30
    seeds = (torch.arange(1, T1 + 1, dtype=torch.float64)[:, None] * u)  # row t: (t+1) u
    G = gr.chain_norms(seeds, W)
    for t in (0, 7, 29):
        for k in range(t + 1):
            assert G[t, k] == pytest.approx(rho ** (t - k) * (t + 1) * float(u.norm()), rel=1e-9)
    assert np.isnan(G[3, 4:]).all()
    curve = gr.by_distance(gr.chain_norms(u.expand(T1, 5).clone(), W))  # the same seed u at every loss
    far, near = cl.at_distance(curve, 20), cl.at_distance(curve, 0)
    assert far == pytest.approx(rho ** 20 * near, rel=1e-9)
    assert (far > near) if rho > 1 else (far < near) if rho < 1 else far == pytest.approx(near)


def test_chain_norms_with_tanh_gains_equals_autograd_on_the_rescaled_model():
    m = tiny_rnn()
    rho = 1.7
    got = cl.tanh_chain(m, IDS, rho)
    clone = cl.radius_copy(m, rho)
    assert cl.spectral_radius(clone.layers[-1].weight_hh_l0) == pytest.approx(rho, rel=1e-9)
    assert clone.layers[-1].weight_hh_l0.dtype == torch.float64
    with torch.enable_grad():  # the reference: one autograd backward pass per loss on the unrolled graph
        run = gr.unrolled(clone, IDS)
        logp = torch.log_softmax(run["logits"][0], -1)
        T = IDS.shape[1]
        for t in range(T - 1):
            grads = torch.autograd.grad(-logp[t, IDS[0, t + 1]], run["h"][-1][: t + 1], retain_graph=True)
            assert got["G"][t, : t + 1] == pytest.approx([float(x.norm()) for x in grads], rel=1e-9)
    h = clone.trace(IDS)["layers.1.h"][0]
    assert got["mean_tanh_prime"] == pytest.approx(float((1 - h ** 2).mean()), rel=1e-12)
    assert got["norm"] == pytest.approx(float(torch.linalg.svdvals(clone.layers[-1].weight_hh_l0)[0]), rel=1e-9)


def test_linear_chain_scales_exactly_to_any_radius_and_leaves_the_model_alone():
    m = tiny_rnn(dtype=torch.float32)
    before = [p.clone() for p in m.parameters()]
    lin = cl.linear_chain(m, IDS[0].tolist())
    W = m.layers[-1].weight_hh_l0.double()
    rho0 = float(torch.linalg.eigvals(W).abs().max())
    assert lin["rho_trained"] == pytest.approx(rho0, rel=1e-9)
    m64 = tiny_rnn(dtype=torch.float32).double()
    seeds = gr.loss_seeds(m64, m64.trace(IDS)["layers.1.h"][0], IDS).numpy()
    # the reference in numpy: the leading left eigenvector (u W = lambda u), pushed back through the
    # rescaled W by matrix powers; the seeds' norms as the trained model's own gradients
    values, vectors = np.linalg.eig(W.numpy().T)
    u = vectors[:, np.abs(values).argmax()]
    u = u / np.linalg.norm(u)
    assert np.allclose(u @ W.numpy(), values[np.abs(values).argmax()] * u)
    assert np.allclose(lin["seed_norms"], np.linalg.norm(seeds, axis=1), rtol=1e-9)
    for rho in (0.5, 2.0):
        direct = np.full_like(lin["G1"], np.nan)
        for t in range(len(seeds)):
            for k in range(t + 1):
                direct[t, k] = np.linalg.norm(u @ np.linalg.matrix_power(W.numpy() * (rho / rho0), t - k))
        assert np.allclose(cl.scale_chain(lin["G1"], rho), direct, rtol=1e-9, equal_nan=True)
        t, k = np.tril_indices(len(seeds))
        assert np.allclose(direct[t, k], rho ** (t - k), rtol=1e-9)  # along u the chain is rho^(t-k) exactly
    assert all(torch.equal(a, b) for a, b in zip(before, m.parameters()))
    with pytest.raises(ValueError, match="tanh RNN"):
        cl.radius_copy(RecurrentLM(LMConfig(cell="gru", n_layers=1, d_embed=4, d_hidden=3, vocab_size=9)), 1.0)


def test_scale_chain_overflows_to_inf_not_nan():
    out = cl.scale_chain(np.array([[1.0, np.nan], [1e-300, 1.0]]), 1e200)  # G1[t, k] * rho^(t - k)
    assert out[1, 0] == pytest.approx(1e-100) and out[1, 1] == 1.0 and np.isnan(out[0, 1])
    assert np.isinf(cl.scale_chain(np.array([[1.0, np.nan], [1e300, 1.0]]), 1e200)[1, 0])


TEXT = REFERENCE_FILE.read_text(encoding="utf-8")  # shipped with seqviz: the test needs no corpus download


@pytest.fixture(scope="module")
def runs():
    return cl.clipping_runs(TEXT, 1.0, lr=3.0, seed=0)


def test_clipping_bounds_every_applied_gradient_and_the_unclipped_run_spikes(runs):
    free, kept = runs[runs["run"] == "without clipping"], runs[runs["run"] == "with clipping"]
    assert (free["grad_norm"] > 1.0).any()  # at least one step above the threshold without clipping
    assert kept["applied_norm"].max() <= 1.0 + 1e-5  # measured on the gradients after clip_grad_norm_
    assert np.allclose(kept["applied_norm"], np.minimum(kept["grad_norm"], 1.0), rtol=1e-5)
    assert np.allclose(free["applied_norm"], free["grad_norm"], rtol=1e-5)
    # the first step is the same model on the same batch: the same loss and the same raw norm
    assert kept["loss"].iloc[0] == free["loss"].iloc[0] and kept["grad_norm"].iloc[0] == free["grad_norm"].iloc[0]
    s = cl.run_summary(runs, 1.0)
    assert s["without clipping"]["max_norm"] > 10 * 1.0 and s["without clipping"]["jump"] > 5  # a real spike
    assert s["with clipping"]["jump"] < s["without clipping"]["jump"] / 3
    assert s["with clipping"]["final"] < s["without clipping"]["final"]


def test_train_run_is_seeded_and_refuses_a_short_text():
    a = cl.train_run(TEXT[:2000], 1.0, steps=5, seed=3)
    assert a.equals(cl.train_run(TEXT[:2000], 1.0, steps=5, seed=3))
    assert not a.equals(cl.train_run(TEXT[:2000], 1.0, steps=5, seed=4))
    with pytest.raises(ValueError, match="more than 81 characters"):
        cl.train_run("too short", 1.0)


def chart_data(chart) -> list[dict]:
    spec = json.loads(json.dumps(chart.to_dict()))
    return [row for rows in spec["datasets"].values() for row in rows]


def test_zeros_and_inf_are_drawn_at_a_floor_and_a_ceiling_and_marked():
    df = pd.DataFrame({"model": "m", "distance": range(4), "mean": [1.0, 1e-5, 0.0, np.inf],
                       "q10": [1.0, 1e-6, 0.0, 0.0], "q90": [1.0, 1e-4, 0.0, np.inf], "median": [1.0, 1e-5, 0.0, 1.0]})
    chart = charts.distance_curves(df, note="below {floor:.0e}")
    rows = chart_data(chart)
    for col in ("mean", "q10", "q90", "median"):
        assert all(0 < r[col] < float("inf") for r in rows), col
    flags = {r["distance"]: (r["off_scale"], r["value"]) for r in rows}
    assert flags == {0: ("", "1.000e+00"), 1: ("", "1.000e-05"), 2: ("0", "0.000e+00"), 3: ("inf", "inf")}
    floor = next(r["mean"] for r in rows if r["distance"] == 2)
    assert floor == pytest.approx(1e-7) and chart.to_dict()["title"]["subtitle"] == "below 1e-07"
    # float64 values under 1e-300 go to the floor 1e-300, not lower
    _, floor, _ = charts.on_scale(pd.DataFrame({"mean": [1e-310, 1.0]}), ["mean"], "mean")
    assert floor == 1e-300
