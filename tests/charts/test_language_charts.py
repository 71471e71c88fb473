"""Chart builders: colours, hover text, running means and encodings checked value by value."""

import math

import numpy as np
import pandas as pd
import pytest

from seqviz.charts.language import (PALETTE, colour, compare_lines, legend_html, surprisal_bars,
                                    surprisal_html, training_curves)


def table(tokens, losses):
    losses = np.array([np.nan] + list(losses), dtype=float)
    return pd.DataFrame({"position": range(len(tokens)), "token": tokens, "loss": losses,
                         "bits": losses / math.log(2), "prob": np.exp(-losses),
                         "expected": [""] + ["e"] * (len(tokens) - 1),
                         "expected_prob": [np.nan] + [0.5] * (len(tokens) - 1)})


def test_colour_scale_end_points_and_midpoint():
    assert colour(0.0, 4.0) == PALETTE[0]
    assert colour(4.0, 4.0) == PALETTE[-1] and colour(9.0, 4.0) == PALETTE[-1]
    assert colour(float("nan"), 4.0) == "#eeeeee"
    # Exactly one step along the 9-colour palette lands on its second colour.
    assert colour(4.0 / 8, 4.0) == PALETTE[1]
    # Halfway between the first two colours: each channel is the mean (rounded).
    a, b = PALETTE[0], PALETTE[1]
    mid = "#" + "".join(f"{round((int(a[k:k+2], 16) + int(b[k:k+2], 16)) / 2):02x}" for k in (1, 3, 5))
    assert colour(4.0 / 16, 4.0) == mid


def test_html_has_one_span_per_token_with_exact_loss_and_escaping():
    t = table(["<", "b", '"', "\n"], [1.23456, 0.5, 2.0])
    markup = surprisal_html(t, "char", scale_max=4.0)
    assert markup.count("<span title=") == 4
    assert "&lt;" in markup and "<b" not in markup.replace("<span", "")
    assert "1.235 nats" in markup and "p = 0.291" in markup  # exp(-1.23456) = 0.2910
    assert "not scored" in markup  # the first token
    assert "&#8629;" in markup  # the newline is visible
    bits = surprisal_html(t, "char", scale_max=4.0, unit="bits")
    assert f"{1.23456 / math.log(2):.3f} bits" in bits
    with pytest.raises(ValueError):
        surprisal_html(t, "char", 4.0, unit="hartleys")


def test_legend_labels_the_top_in_the_chosen_unit():
    assert "4.00 nats" in legend_html(4.0) and "0 nats (certain)" in legend_html(4.0)
    assert f"{4 / math.log(2):.2f} bits" in legend_html(4.0, "bits")


def test_the_legend_speaks_the_installed_language():
    """The page's 中文 legend read "0 nats (certain)": its words go through seqviz.text._ as the views' do."""
    from seqviz.text import gettext_in
    from seqviz.text import translator

    with translator(lambda s: gettext_in("zh", s)):
        shown = legend_html(4.0)
    assert "0 奈特（确定）" in shown and "4.00 奈特" in shown and "nats" not in shown and "certain" not in shown


def test_bars_plot_only_scored_tokens():
    t = table(list("abcd"), [1.0, 2.0, 3.0])
    spec = surprisal_bars(t, 4.0, "bits").to_dict()
    values = next(iter(spec["datasets"].values()))
    assert [round(v["bits"], 6) for v in values] == [round(x / math.log(2), 6) for x in (1.0, 2.0, 3.0)]
    assert spec["encoding"]["y"]["field"] == "bits"
    assert spec["encoding"]["color"]["scale"]["domain"] == [0, pytest.approx(4 / math.log(2))]


def test_compare_lines_running_mean():
    long = pd.concat([table(list("abcde"), [1, 2, 3, 4]).assign(model="m1"),
                      table(list("abcde"), [4, 4, 4, 4]).assign(model="m2")])
    spec = compare_lines(long, window=2).to_dict()
    values = next(iter(spec["datasets"].values()))
    m1 = [v["running"] for v in values if v["model"] == "m1"]
    assert m1 == [1.0, 1.5, 2.5, 3.5]  # mean of the last two (one at the start)
    assert all(v["running"] == 4.0 for v in values if v["model"] == "m2")
    with pytest.raises(ValueError):
        compare_lines(long, window=0)


def test_compared_models_keep_the_order_given_each_in_its_own_dark_hue():
    """The legend lists the models as chosen (RNN, GRU, LSTM), not sorted; no two share a colour, none is the
    light blue Streamlit's theme gives a second series."""
    long = pd.concat([table(list("abc"), [1, 2]).assign(model=m) for m in ("rnn", "gru", "lstm")])
    scale = compare_lines(long).to_dict()["encoding"]["color"]["scale"]
    assert scale["domain"] == ["rnn", "gru", "lstm"]
    assert scale["range"] == ["#0072B2", "#D55E00", "#009E73"] and "#83c9ff" not in scale["range"]


def test_training_curves_reads_card_history():
    history = [{"step": 10, "train_loss": 3.0, "val_loss": 3.2}, {"step": 20, "train_loss": 2.0, "val_loss": 2.5}]
    values = next(iter(training_curves(history).to_dict()["datasets"].values()))
    assert {(v["split"], v["step"], v["loss"]) for v in values} == {
        ("train", 10, 3.0), ("validation", 10, 3.2), ("train", 20, 2.0), ("validation", 20, 2.5)}
    with pytest.raises(ValueError):
        training_curves([])


def test_continuation_html_escapes_and_separates_prompt_from_sample():
    from seqviz.charts.language import continuation_html

    markup = continuation_html("a <b>", "& c")
    assert "a &lt;b&gt;" in markup and "&amp; c" in markup
    assert markup.index("a &lt;b&gt;") < markup.index("&amp; c")


def test_long_texts_get_ticks_instead_of_bars():
    t = table(list("abcdef"), [1.0, 2.0, 3.0, 1.0, 2.0])
    assert surprisal_bars(t, 4.0).to_dict()["mark"]["type"] == "bar"
    assert surprisal_bars(t, 4.0, max_bars=3).to_dict()["mark"]["type"] == "tick"
