"""seqviz.views.interventions against edited traces run by hand: switch units off, patch from another text."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from seqviz.introspect import projection as P
from seqviz.introspect.interventions import token_classes
from seqviz.models.edits import ablate, patch, unit_means
from seqviz.views import gates
from seqviz.views import interventions as views
from tests.conftest import ROOT, build_tiny_lm

TEXT = 'HAMLET.\n"To be, or not to be," that is (the question):\nWhether \'tis nobler in the mind\n'


@pytest.fixture(scope="module", autouse=True)
def shipped_sample():
    """The held-out sample from the passage shipped with seqviz (small, the same on every machine)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(P, "SHAKESPEARE", ROOT / "no-such-folder")
        yield


@pytest.fixture(scope="module")
def lstm():
    return build_tiny_lm("lstm", seed=3)


@pytest.fixture(scope="module")
def ids(lstm):
    return tuple(lstm.tokenizer.encode(TEXT).ids)


def test_the_delta_per_token_is_the_edited_loss_minus_the_plain_one(lstm, ids):
    view = views.switch_off_text(lstm, ids, layer=1, pick="one", unit=4, span=(10, 30), how="zero")
    plain = lstm.trace([list(ids)])["loss"][0]
    off = lstm.trace([list(ids)], edits=[ablate("layers.1.c", [4], span=(10, 30))])["loss"][0]
    np.testing.assert_allclose(view.data["delta"], (off - plain).numpy(), atol=1e-6)
    assert (view.data["delta"][:10].abs() < 1e-6).all()  # before the span nothing can change
    f = view.facts
    assert (f["name"], f["units"], f["start"], f["stop"]) == ("layers.1.c", "4", 10, 30)
    assert f["mean_delta"] == pytest.approx(float((off - plain)[10:].double().mean()), abs=1e-6)
    worst = int(torch.argmax((off - plain)[10:])) + 10
    assert f["worst_step"] == worst + 1 and f["worst_token"] == lstm.tokenizer.tokens[ids[worst + 1]]


def test_the_control_is_k_random_other_units_and_its_delta_their_mean(lstm, ids):
    view = views.switch_off_text(lstm, ids, pick="top", k=2, seed=5)
    top = sorted(int(u) for u in gates.memory_spans(lstm, ids, 0, 0, 0.0).data["unit"][:2])
    assert view.facts["units"] == ", ".join(map(str, top))  # the memory tab's ranking
    from seqviz.introspect.interventions import random_units

    controls = random_units(12, 2, 5, exclude=top, draws=views.DRAWS)
    assert all(not set(c) & set(top) for c in controls) and len({tuple(c) for c in controls}) > 1
    plain = lstm.trace([list(ids)])["loss"][0]
    deltas = [lstm.trace([list(ids)], edits=[ablate("layers.0.c", c)])["loss"][0] - plain for c in controls]
    np.testing.assert_allclose(view.data["delta_random"], torch.stack(deltas).mean(0).numpy(), atol=1e-6)
    assert view.facts["mean_delta_random"] == pytest.approx(float(torch.stack(deltas).mean()), abs=1e-6)


def test_mean_ablation_uses_the_held_out_sample_s_mean(lstm, ids):
    view = views.switch_off_text(lstm, ids, pick="one", unit=2, state="h", how="mean")
    means = unit_means(views.sample_trace(lstm), "layers.0.h")
    off = lstm.trace([list(ids)], edits=[ablate("layers.0.h", [2], means=means)])["loss"][0]
    np.testing.assert_allclose(view.data["loss_edited"], off.numpy(), atol=1e-6)


def test_the_sample_views_average_the_edited_runs_over_the_held_out_text(lstm, ids):
    tokens = views.switch_off_tokens(lstm, ids, pick="one", unit=7)
    classes = views.switch_off_classes(lstm, ids, pick="one", unit=7)
    texts, _source = P.reference_texts(views.SAMPLE_CHUNKS, views.SAMPLE_LENGTH)
    plain = lstm.trace(texts)
    off = lstm.trace(texts, edits=[ablate("layers.0.c", [7])])
    delta, predicted = [], []
    for b, text in enumerate(texts):
        n = int(plain["loss_mask"][b].sum())
        delta += (off["loss"][b, :n] - plain["loss"][b, :n]).tolist()
        predicted += list(text)[1:n + 1]
    delta, predicted = np.array(delta), np.array(predicted)
    assert tokens.facts["sample_tokens"] == classes.facts["sample_tokens"] == len(delta)
    assert tokens.facts["mean_delta"] == pytest.approx(delta.mean(), abs=1e-6)
    top = tokens.data.iloc[0]
    assert top["delta"] == pytest.approx(delta[predicted == top["token"]].mean(), abs=1e-6)
    assert top["n"] == (predicted == top["token"]).sum() >= 5
    assert list(tokens.data["delta"]) == sorted(tokens.data["delta"], reverse=True)
    counted = classes.data[classes.data["n"] >= views.MIN_CLASS]
    assert classes.facts["class_delta"] == pytest.approx(counted["delta"].max())  # of the classes seen often enough
    assert classes.facts["class_n"] >= views.MIN_CLASS
    assert classes.data["n"].sum() == len(delta)


def test_character_classes_tell_a_closing_quote_from_an_opening_one():
    assert token_classes(list('a "b" (c)\nD.')) == [
        "letter", "space", "punctuation", "letter", "closing quote", "space", "punctuation", "letter",
        "closing bracket", "line break", "capital letter", "punctuation"]


def test_a_patch_moves_the_next_token_distribution_as_a_hand_patched_run_does(lstm):
    a = tuple(lstm.tokenizer.encode("He said to be, or not to be").ids)
    b = tuple(lstm.tokenizer.encode('He said "to be, or not to be').ids)
    view = views.patch_next(lstm, a, b, layer=0, pick="one", unit=3)
    f = view.facts
    assert (f["position"], f["source_position"]) == (8, 9)  # where the common ending starts, aligned
    source = lstm.trace([list(b)])
    edited = lstm.trace([list(a)], edits=[patch("layers.0.c", source, [3], span=(7, 8), offset=1)])
    p = torch.softmax(lstm.trace([list(a)])["logits"][0, -1].double(), -1)
    q = torch.softmax(edited["logits"][0, -1].double(), -1)
    assert f["kl"] == pytest.approx(float((q * (q / p).log()).sum()), abs=1e-7)
    row = view.data.iloc[0]
    i = lstm.tokenizer.tokens.index(row["token"])
    assert (row["before"], row["after"]) == pytest.approx((float(p[i]), float(q[i])), abs=1e-6)
    assert f["kl_all"] > 0 and set(view.data.columns) == {"token", "before", "after", "other"}
    same = views.patch_next(lstm, a, a, pick="top", k=3)  # a text patched from itself does not move
    assert same.facts["kl"] == pytest.approx(0, abs=1e-9) and same.facts["kl_all"] == pytest.approx(0, abs=1e-9)


def test_bad_choices_are_refused_with_a_clear_message(lstm, ids):
    with pytest.raises(ValueError, match="at least two tokens"):
        views.switch_off_text(lstm, ids[:1])
    with pytest.raises(ValueError, match="unit must be 0..11, got 12"):
        views.switch_off_text(lstm, ids, pick="one", unit=12)
    with pytest.raises(ValueError, match="k must be 1..6"):
        views.switch_off_tokens(lstm, ids, pick="random", k=9)
    with pytest.raises(ValueError, match="span of at least one token"):
        views.switch_off_text(lstm, ids, span=(40, 40))
    with pytest.raises(ValueError, match="take h; got 'c'"):
        views.switch_off_text(build_tiny_lm("gru"), ids, state="c")
    with pytest.raises(ValueError, match="plain RNN has no gate"):
        views.switch_off_classes(build_tiny_lm("rnn"), ids, pick="top")
    with pytest.raises(ValueError, match="position must be 1..3"):
        views.patch_next(lstm, ids[:4], ids, position=0)


def test_a_mamba_s_longest_memories_switched_off_and_patched_are_its_edited_traces(tmp_path):
    """A Mamba's units are its channels' slowest states s (ranked by the memory tab), edited inside its trace."""
    import seqviz
    from tests.conftest import build_tiny_mamba

    lm = seqviz.load(build_tiny_mamba(tmp_path / "tiny-mamba"))
    ids = tuple(lm.tokenizer.encode(TEXT[:60]).ids)
    view = views.switch_off_text(lm, ids, pick="top", k=2, span=(5, 60), seed=2)
    units = [int(u) for u in view.facts["units"].split(", ")]
    top = sorted(int(u) for u in gates.memory_spans(lm, ids, 0, 5, 0.0).data["unit"][:2])
    assert view.facts["name"] == "layers.0.s" and units == top
    plain = lm.trace([list(ids)])["loss"][0]
    off = lm.trace([list(ids)], edits=[ablate("layers.0.s", units, span=(5, 60))])["loss"][0]
    np.testing.assert_allclose(view.data["delta"], (off - plain).numpy(), atol=1e-5)
    assert float((off - plain).abs().max()) > 1e-4  # the edit reached the loss: the comparison can fail
    with pytest.raises(ValueError, match="channels of its state s"):
        views.switch_off_text(lm, ids, pick="top", state="h")
    moved = views.patch_next(lm, ids[:30], ids[10:40], pick="random", k=3)
    assert moved.facts["kl"] >= 0 and moved.facts["name"] == "layers.0.s"


def test_every_chart_is_valid_vega_lite(lstm, ids):
    a, b = ids[:30], ids[5:40]
    for view in (views.switch_off_text(lstm, ids, k=2), views.switch_off_tokens(lstm, ids, k=2),
                 views.switch_off_classes(lstm, ids, k=2), views.patch_next(lstm, a, b, k=2)):
        spec = view.chart.to_dict(validate=True)  # Altair checks the whole spec against the schema
        assert spec["$schema"].startswith("https://vega.github.io/schema/vega-lite/")


def test_on_the_shipped_lstm_the_batched_runs_give_the_one_by_one_numbers():
    """The views run the chosen units and the random draws as one batch; each equals its own edited trace."""
    import seqviz
    from seqviz.introspect.interventions import random_units

    model = seqviz.load(ROOT / "checkpoints" / "shakespeare-char-lstm")
    ids = tuple(model.tokenizer.encode(TEXT).ids)
    view = views.switch_off_text(model, ids, pick="top", k=2, span=(10, 60), seed=1)
    units = [int(u) for u in view.facts["units"].split(", ")]
    plain = model.trace([list(ids)])["loss"][0]

    def delta(u, texts=(list(ids),), span=(10, 60)):
        return (model.trace(list(texts), edits=[ablate("layers.0.c", u, span=span)])["loss"] -
                model.trace(list(texts))["loss"])

    np.testing.assert_allclose(view.data["delta"], delta(units)[0].numpy(), atol=1e-5)
    controls = random_units(256, 2, 1, exclude=units, draws=views.DRAWS)
    chance = torch.stack([delta(c)[0] for c in controls]).mean(0)
    np.testing.assert_allclose(view.data["delta_random"], chance.numpy(), atol=1e-5)
    assert (view.data["delta"][:10].abs() < 1e-5).all() and plain.shape[0] == len(view.data)
    classes = views.switch_off_classes(model, ids, pick="one", unit=51, seed=1)  # over the held-out sample
    texts, _source = P.reference_texts(views.SAMPLE_CHUNKS, views.SAMPLE_LENGTH)
    mask = model.trace(texts)["loss_mask"]
    controls = random_units(256, 1, 1, exclude=[51], draws=views.DRAWS)
    chance = np.mean([float(delta(c, texts, None)[mask].double().mean()) for c in controls])
    assert classes.facts["n_units"] == 1 and classes.data["n"].sum() == int(mask.sum())
    overall = (classes.data["delta_random"] * classes.data["n"]).sum() / classes.data["n"].sum()
    assert overall == pytest.approx(chance, abs=1e-5)


def test_most_picks_the_units_whose_removal_alone_hurts_the_text_most(lstm, ids):
    """Issue 51: the page opened on the longest memory, whose removal moved the text by +0.017 nats; "most" ranks
    every unit by its own switch-off, each checked here against the one-unit view run by itself."""
    ranking = views.harm_ranking(lstm, ids, "layers.0.c")
    alone = [views.switch_off_text(lstm, ids, pick="one", unit=u).facts["mean_delta"]
             for u in range(lstm.config.d_hidden)]
    assert list(ranking["mean_delta"]) == pytest.approx(sorted(alone, reverse=True), abs=1e-12)
    assert list(ranking["unit"][:3]) == sorted(range(len(alone)), key=lambda u: (-alone[u], u))[:3]
    most = views.switch_off_text(lstm, ids, pick="most", k=3).facts
    assert most["units"] == ", ".join(map(str, sorted(ranking["unit"][:3])))
    assert most["mean_delta"] > views.switch_off_text(lstm, ids, pick="top", k=3).facts["mean_delta"]


def test_the_delta_grid_keeps_the_first_character_and_cuts_no_word(lstm, ids):
    """Issue 51: the grid began "AMLET." (the first token, which nothing predicts, was dropped) and broke "the
    min / d" across lines."""
    import json

    import altair as alt
    import pandas as pd

    view = views.switch_off_text(lstm, ids, pick="one", unit=2)
    with alt.data_transformers.disable_max_rows():
        spec = json.loads(json.dumps(view.chart.to_dict()))
    grid = pd.DataFrame(next(iter(spec["datasets"].values()))).sort_values("step")
    tokens = [lstm.tokenizer.decode([i]) for i in ids]
    assert grid["step"].tolist() == list(range(len(ids)))  # every token, the first included
    assert grid["shown"].iloc[0] == "H" and pd.isna(grid["value"].iloc[0])  # shown, uncoloured
    assert grid["value"].iloc[1:].tolist() == pytest.approx(view.data["delta"].tolist())
    rows = grid["row"].tolist()
    for i in range(1, len(tokens)):
        if rows[i] != rows[i - 1]:  # a line break: only at a newline, or between two words
            assert "\n" in tokens[i - 1] or tokens[i - 1][-1:].isspace() or tokens[i][:1].isspace(), \
                (i, tokens[i - 1], tokens[i])
    assert max(grid.groupby("row").size()) <= 30


def test_a_caption_names_the_units_as_a_sentence():
    facts = {"name": "layers.1.c", "units": "51", "n_units": 1, "pick": "one"}
    assert views.which_units(facts) == "Unit 51 of the cell state c in layer 1"
    assert views.which_units({**facts, "units": "3, 7", "n_units": 2, "pick": "most"}) == \
        "Units 3, 7 of the cell state c in layer 1, whose removal alone hurts this text most"
