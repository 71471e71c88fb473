"""seqviz.views.trajectories against an independent reference: PCA by hand in numpy, each text read alone."""

from __future__ import annotations

import numpy as np
import pytest

from seqviz import figures
from seqviz.introspect import projection as P
from seqviz.text import translator
from seqviz.views import trajectories as views
from tests.conftest import ROOT, build_tiny_lm

TEXTS = ("To be, or not to be, that is the question:", "The rest is silence.", "HAMLET.")


@pytest.fixture(scope="module", autouse=True)
def shipped_sample():
    """The reference sample from the passage shipped with seqviz (small, the same on every machine)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(P, "SHAKESPEARE", ROOT / "no-such-folder")
        yield


@pytest.fixture(scope="module")
def gru():
    return build_tiny_lm("gru", seed=4)


@pytest.fixture(scope="module")
def ids(gru):
    return tuple(tuple(gru.tokenizer.encode(t).ids) for t in TEXTS)


def pca_by_hand(model, layer: int, dims: int):
    """(mean, axes [dims, H], explained) of the reference sample's h by numpy's SVD, each axis's largest
    loading positive (the library's sign convention)."""
    texts, _source = P.reference_texts()
    states = []
    for text in texts:  # one text at a time: no padding to mask out
        states.append(model.trace([text])[f"layers.{layer}.h"][0].double().numpy())
    x = np.concatenate(states)
    mean = x.mean(0)
    _u, s, vt = np.linalg.svd(x - mean, full_matrices=False)
    axes = vt[:dims] * np.sign(vt[np.arange(dims), np.abs(vt[:dims]).argmax(1)])[:, None]
    return mean, axes, (s ** 2 / (s ** 2).sum())[:dims]


def alone(model, ids, layer):
    """h [T, H] of each text read on its own."""
    return [model.trace([list(t)])[f"layers.{layer}.h"][0].double().numpy() for t in ids]


@pytest.mark.parametrize("dims", [2, 3])
def test_each_point_is_the_text_s_state_on_the_reference_sample_s_principal_axes(gru, ids, dims):
    view = views.trajectory(gru, ids, layer=1, method="pca", dims=dims)
    mean, axes, explained = pca_by_hand(gru, 1, dims)
    assert view.facts["explained"] == pytest.approx(tuple(explained), abs=1e-6)
    for b, states in enumerate(alone(gru, ids, 1)):
        rows = view.data[view.data["text"] == f"text {b + 1}"]
        want = (states - mean) @ axes.T
        assert rows[list("xyz")[:dims]].to_numpy() == pytest.approx(want, abs=1e-5)
        assert rows["norm"].to_numpy() == pytest.approx(np.linalg.norm(states, axis=1), abs=1e-6)


def test_another_model_s_space_and_one_text_drawn(gru, ids):
    other = build_tiny_lm("gru", seed=5)  # a snapshot's weights: drawn in the final model's space
    view = views.trajectory(other, ids, layer=0, space=gru, shown="text 2", step=10)
    mean, axes, _explained = pca_by_hand(gru, 0, 2)
    states = alone(other, ids, 0)[0]
    rows = view.data[view.data["text"] == "text 1"]
    assert rows[["x", "y"]].to_numpy() == pytest.approx((states - mean) @ axes.T, abs=1e-5)
    spec = view.chart.to_dict(validate=False)
    drawn = [r for rows in spec["datasets"].values() for r in rows if "text" in r and "step" in r]
    assert {r["text"] for r in drawn} == {"text 2"} and len(set(view.data["text"])) == 3  # the data keeps all
    assert spec["title"].endswith("· layer 0 · step 10")


def test_hidden_states_are_the_trace_s_h_token_by_token(gru, ids):
    view = views.hidden_states(gru, ids, layer=1)
    expected = np.concatenate(alone(gru, ids, 1))
    assert view.data.drop(columns=["text", "step"]).to_numpy() == pytest.approx(expected, abs=1e-6)
    assert list(view.data["step"][: len(ids[0])]) == list(range(len(ids[0])))


def test_the_mask_distance_is_the_padded_end_against_the_text_read_alone(gru, ids):
    view = views.mask_distance(gru, ids, layer=1)
    width = max(map(len, ids))
    padded = gru.trace([list(t) for t in ids])["layers.1.h"][:, width - 1].double().numpy()
    for b, states in enumerate(alone(gru, ids, 1)):
        row = view.data.iloc[b]
        assert row["pads"] == width - len(ids[b])
        assert row["distance"] == pytest.approx(np.linalg.norm(states[-1] - padded[b]), abs=1e-5)
        assert (row["distance"] == 0) == (row["pads"] == 0)
    assert view.facts["pads"] == width - len(ids[-1]) and view.facts["padded"] == 2


def test_final_states_sit_where_the_text_read_alone_ends(gru, ids):
    view = views.final_states(gru, ids, layer=1)
    mean, axes, _explained = pca_by_hand(gru, 1, 2)
    respected = view.data.iloc[: len(ids)]
    ends = np.stack([s[-1] for s in alone(gru, ids, 1)])
    assert respected[["x", "y"]].to_numpy() == pytest.approx((ends - mean) @ axes.T, abs=1e-5)


def test_a_padding_study_needs_two_texts(gru, ids):
    with pytest.raises(ValueError, match="two texts"):
        views.mask_distance(gru, ids[:1])


def test_titles_and_readings_go_through_the_installed_translator(gru, ids):
    with translator(lambda s: "«" + s + "»"):
        view = views.trajectory(gru, ids, layer=0, name="m")
        ends = views.final_states(gru, ids, layer=0)
    assert view.chart.to_dict(validate=False)["title"] == "«{model} · layer {layer}»".replace(
        "{model}", "m").replace("{layer}", "0")
    assert set(ends.data["reading"]) == {"«mask respected (last real token)»", "«mask ignored (position T-1)»"}


def test_the_cli_figure_is_the_page_s_view(gru):
    text = "\n---\n".join(TEXTS)
    chart, frame, footnote = figures.render("trajectories", gru, text, layer=1)
    ids = tuple(tuple(gru.tokenizer.encode(t).ids) for t in TEXTS)
    assert frame.equals(views.trajectory(gru, ids, layer=1).data) and "PC1" in footnote


def test_the_reference_sample_is_described_in_the_installed_language():
    """The sample's description keys the cached trace and the shipped views in English; the caption translates it
    (a Chinese caption quoted '8 chunks x 400 characters from the original sample passage ...' before)."""
    texts, sample = P.reference_texts()
    with translator(lambda s: "«" + s + "»"):
        shown = views.describe_sample(sample)
        plays = views.describe_sample("8 chunks x 400 characters from held-out validation plays (hamlet_gut, a)")
    assert shown == "«{n} chunks × {length} characters from {source}»".format(
        n=len(texts), length=400, source="«" + views.PASSAGE_SHOWN + "»")
    assert "not held-out text" in views.PASSAGE_SHOWN  # issue 51: the fit on the shipped passage said so nowhere
    assert plays.startswith("«8 chunks") and "«held-out validation plays ({plays})»".format(
        plays="hamlet_gut, a") in plays
    assert views.describe_sample("a sample of my own") == "a sample of my own"
