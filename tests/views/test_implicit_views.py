"""The memory-as-attention views: what they draw and say is the library's unrolling, read independently here."""

from __future__ import annotations

import numpy as np
import pytest

from seqviz.introspect.implicit import contributions, knockout
from seqviz.views import implicit as views
from tests.conftest import build_tiny_lm

TEXT = "the cat sat on the mat and the dog sat on the log."


@pytest.fixture(scope="module")
def lstm():
    model = build_tiny_lm("lstm", seed=5)
    return model, tuple(model.tokenizer.encode(TEXT).ids)


def test_the_unit_map_is_one_units_rows_normalised_and_names_the_longest_reach(lstm):
    model, ids = lstm
    c = contributions(model, list(ids), layer=1).contributions
    last = np.abs(c[-1])
    reach = last[: len(ids) - views.FAR].sum(0) / last.sum(0)
    got = views.unit_map(model, ids, layer=1)
    assert got.facts["unit"] == int(np.argmax(reach)) and got.facts["reach"] == pytest.approx(reach.max())
    u = got.facts["unit"]
    row = got.data[got.data["t"] == len(ids) - 1].sort_values("j")
    assert np.allclose(row["weight"], np.abs(c[-1, :, u]) / np.abs(c[-1, :, u]).sum(), atol=1e-6)
    assert np.allclose(row["contribution"], c[-1, :, u])
    assert got.data.groupby("t")["weight"].sum().between(1 - 1e-5, 1 + 1e-5).all()
    assert f"{reach.max():.0%}" in views.caption(got.facts)
    scaled = views.unit_map(model, ids, layer=1, unit=u, scale="max")
    assert scaled.data["weight"].max() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="scale must be"):
        views.unit_map(model, ids, scale="log")


def test_the_target_bars_are_shares_and_the_knockouts_exact(lstm):
    model, ids = lstm
    position = len(ids) - 2
    got = views.target(model, ids, layer=0, position=position)
    c = np.abs(contributions(model, list(ids), layer=0).contributions[position]).sum(-1)
    share = c / c.sum()
    first = position - views.WINDOW + 1 if position >= views.WINDOW else 0
    assert np.allclose(got.data["weight"], share[first:position + 1], atol=1e-6)
    assert got.facts["beyond"] == pytest.approx(share[:first].sum(), abs=1e-6)
    j = got.facts["top_source"]
    assert got.facts["top_delta"] == pytest.approx(knockout(model, list(ids), j, layer=0)["delta"][position], abs=1e-6)
    assert np.isnan(got.data["delta_loss"].iloc[-1]), "the step's own token is not knocked out"
    effects = np.abs(got.data["delta_loss"].to_numpy()[:-1])
    from scipy.stats import spearmanr

    assert got.facts["rho"] == pytest.approx(spearmanr(got.data["weight"].to_numpy()[:-1], effects).statistic, abs=1e-6)
    said = views.target_caption(got.facts)
    expected = "yes, mostly" if got.facts["rho"] >= 0.5 else "only loosely" if got.facts["rho"] >= 0.2 else "no"
    assert f"{expected}:" in said


def test_a_tanh_rnn_view_refuses_with_its_sentence():
    model = build_tiny_lm("rnn")
    with pytest.raises(ValueError, match="no gated linear form"):
        views.layer_map(model, tuple(model.tokenizer.encode(TEXT).ids))
