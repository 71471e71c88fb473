"""Gate statistics, unit ranking and pattern search, each checked against an independent reference."""

from __future__ import annotations

import string

import numpy as np
import pandas as pd
import pytest
import torch

from seqviz.views.spec import printable
from seqviz.config import LMConfig
from seqviz.data.tokenizers import Tokenizer
from seqviz.introspect import gates as G
from seqviz.introspect import units as U
from seqviz.models.recurrent import RecurrentLM

ALPHABET = string.ascii_letters + " \n.,;:'!?-[]()\""
TEXTS = ["Mar.\nHold up the light, good Tobias; [Exit.]\n", "Tob.\nI hear no song.",
         "What ship is it we wait for?\n", "Go, go!"]


def tiny(cell: str, seed: int = 0, d_hidden: int = 10, scale: float = 1.0) -> RecurrentLM:
    torch.manual_seed(seed)
    tok = Tokenizer.train("char", ALPHABET)
    model = RecurrentLM(LMConfig(cell=cell, n_layers=2, d_embed=6, d_hidden=d_hidden, vocab_size=len(tok)), tok)
    with torch.no_grad():  # larger weights push gates into saturation, so the counts are not all 0
        for p in model.parameters():
            p.mul_(scale)
    return model.eval().requires_grad_(False)


@pytest.mark.parametrize("cell", ["rnn", "gru", "lstm"])
def test_gate_means_equal_trace_means(cell):
    model = tiny(cell)
    trace = model.trace(TEXTS)
    frame = G.gate_means(trace, cell, layer=1, row=1)
    n = len(TEXTS[1])
    names = {"lstm": ["input", "forget", "cell", "output"], "gru": ["reset", "update", "new"], "rnn": ["h"]}[cell]
    assert sorted(frame["signal"].unique()) == sorted(names)
    for name in names:
        key = f"layers.1.gates.{name}" if name != "h" else "layers.1.h"
        want = trace[key][1, :n].mean(dim=1).double().numpy()
        got = frame[frame["signal"] == name]["mean"].to_numpy()
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)  # float32 summation order
    assert list(frame[frame["signal"] == names[0]]["token"]) == list(TEXTS[1])


@pytest.mark.parametrize("cell", ["gru", "lstm", "rnn"])
def test_saturation_equals_a_direct_count(cell):
    model = tiny(cell, seed=1, scale=3.0)
    frame = G.saturation(model, TEXTS, lo=0.1, hi=0.9, batch_size=3)  # batches of 3 + 1: counts add up
    trace = model.trace(TEXTS)
    lengths = [len(t) for t in TEXTS]
    checked = 0
    for layer in range(2):
        for name, lo, hi in [("input", 0.1, 0.9), ("forget", 0.1, 0.9), ("output", 0.1, 0.9), ("cell", -0.8, 0.8),
                             ("reset", 0.1, 0.9), ("update", 0.1, 0.9), ("new", -0.8, 0.8), ("h", -0.8, 0.8)]:
            key = f"layers.{layer}.gates.{name}" if name != "h" else f"layers.{layer}.h"
            if key not in trace:
                continue
            values = trace[key].numpy()
            rows = np.concatenate([values[b, :n] for b, n in enumerate(lengths)])  # valid positions only
            got = frame[(frame["layer"] == layer) & (frame["signal"] == name)].sort_values("unit")
            np.testing.assert_allclose(got["left"], (rows < lo).mean(0))
            np.testing.assert_allclose(got["right"], (rows > hi).mean(0))
            assert (got["tokens"] == sum(lengths)).all()
            checked += 1
    assert checked == {"lstm": 10, "gru": 8, "rnn": 2}[cell]
    assert frame["left"].sum() > 0 and frame["right"].sum() > 0  # the test can see a miscount
    with pytest.raises(ValueError, match="lo < hi"):
        G.thresholds("forget", 0.9, 0.1)


def test_order_units_by_variance_and_by_value():
    v = np.random.default_rng(0).normal(size=(20, 7)) * np.arange(1, 8)
    np.testing.assert_array_equal(G.order_units(v, "variance"), np.argsort(-np.var(v, axis=0)))
    np.testing.assert_array_equal(G.order_units(v, "value", at=4), np.argsort(-v[4]))
    np.testing.assert_array_equal(G.order_units(v, "index"), np.arange(7))
    with pytest.raises(ValueError, match="token position"):
        G.order_units(v, "value", at=20)


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_forget_product_is_the_cumulative_product(cell):
    model = tiny(cell, seed=2)
    trace = model.trace(TEXTS[0])
    name = "forget" if cell == "lstm" else "update"
    f = trace[f"layers.0.gates.{name}"][0, :, 3].double().numpy()
    frame = G.forget_product(trace, cell, layer=0, unit=3, start=5)
    np.testing.assert_allclose(frame["product"], np.cumprod(f[5:]), rtol=1e-9)
    assert frame["step"].iloc[0] == 5 and frame["token"].iloc[0] == TEXTS[0][5]
    with pytest.raises(ValueError, match="no gate"):
        G.forget_product(tiny("rnn").trace("ab"), "rnn", 0, 0)


@pytest.mark.parametrize("cell,groups", [("rnn", 1), ("gru", 3), ("lstm", 4)])
def test_parameter_groups_match_the_real_counts(cell, groups):
    model = tiny(cell, d_hidden=12)
    table = G.parameter_groups(model)
    # by hand: layer 0 reads d = 6 (embedding), layer 1 reads d = 12
    assert list(table["formula_one_bias"]) == [groups * (12 * (12 + 6) + 12), groups * (12 * 24 + 12)]
    for i, layer in enumerate(model.layers):
        real = sum(t.numel() for name, t in model.state_dict().items() if name.startswith(f"layers.{i}."))
        assert table["actual"][i] == real == table["formula_pytorch"][i]


def test_rank_units_equals_numpy_corrcoef():
    rng = np.random.default_rng(4)
    tokens = list("Mar.\nHold up [the] light, GOOD sir;\nAnd \"every\" rope.\n")
    feats = U.text_features(tokens)
    values = rng.normal(size=(len(tokens), 6))
    values[:, 2] += 3 * feats["after_newline"].to_numpy()  # a unit that tracks line starts
    table = U.rank_units(values, feats, top=None)
    assert table.iloc[0]["feature"] == "after_newline" and table.iloc[0]["unit"] == 2
    for row in table.itertuples():
        want = np.corrcoef(values[:, row.unit], feats[row.feature])[0, 1]
        assert row.r == pytest.approx(want, abs=1e-12)
    assert (np.diff(table["abs_r"]) <= 0).all()
    assert len(table) == 6 * sum(feats[c].std() > 0 for c in feats)  # constant features dropped


def test_text_features_by_hand():
    feats = U.text_features(list("Ab [c]\nD \"e\""))
    assert list(feats["position_in_line"]) == [0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4]
    assert list(feats["inside_brackets"]) == [0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0]
    assert list(feats["after_newline"]) == [1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0]
    assert list(feats["is_uppercase"]) == [1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0]
    assert list(feats["inside_quotes"]) == [0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1]
    assert list(feats["is_vowel"]) == [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0]
    assert list(U.text_features(list("x\nTob.\nNo more"))["speaker_line"]) == [0, 0] + [1] * 5 + [0] * 7


def planted():
    """Values [100, 6] near -0.5 with units 1 and 4 on at 10-14 (the query), 40-44, 70-72, 85-99."""
    v = np.full((100, 6), -0.5)
    for a, b in [(10, 15), (40, 45), (70, 73), (85, 100)]:
        v[a:b, [1, 4]] = 0.7
    v[60:65, 1] = 0.7  # only one of the two units: not a full match
    v[10:15, 3] = 0.7
    v[9, 3] = 0.7  # unit 3 was already on before the span: not part of the pattern
    return v


def test_select_units_and_pattern_search():
    v = planted()
    units = U.select_units(v, 10, 15, threshold=0.3)
    np.testing.assert_array_equal(units, [1, 4])
    np.testing.assert_array_equal(U.select_units(v, 10, 15, 0.3, off_before=0), [1, 3, 4])
    index = U.StateIndex(v, [chr(97 + i % 26) for i in range(100)])
    hits = U.pattern_search(index, units, 0.3, span_length=5, exclude=(10, 15))
    assert list(zip(hits["start"], hits["end"])) == [(40, 45), (70, 73), (85, 100)]  # same length first
    np.testing.assert_allclose(hits["score"], [1.0, 3 / 5, 5 / 15])
    assert hits["match"][0] == "".join(chr(97 + i % 26) for i in range(40, 45))
    half = U.pattern_search(index, units, 0.3, span_length=5, min_on=0.5, exclude=(10, 15))
    assert (60, 65) in list(zip(half["start"], half["end"]))
    assert U.pattern_search(index, [], 0.3, 5).empty
    with pytest.raises(ValueError, match="span"):
        U.select_units(v, 15, 10, 0.3)


def test_state_index_threshold_agrees_with_float_values():
    v = np.random.default_rng(5).uniform(-1, 1, size=(300, 4))
    index = U.StateIndex(v, ["x"] * 300)
    assert np.abs(index.values(range(4)).T - v).max() <= 0.5 / 127 + 1e-9
    for t in (-0.3, 0.0, 0.25, 0.5):
        hits = U.pattern_search(index, [2], t, span_length=1, top=1000)
        on = np.zeros(300, bool)
        for a, b in zip(hits["start"], hits["end"]):
            on[a:b] = True
        np.testing.assert_array_equal(on, index.values([2])[0] > t)  # exact on the stored values


def test_build_state_index_equals_the_trace():
    model = tiny("lstm", seed=6)
    text = "".join(TEXTS) * 3
    whole = U.build_state_index(model, text, layer=1, segment=4096)
    h = model.trace(text)["layers.1.h"][0].numpy()
    assert len(whole) == len(text) and whole.tokens == list(text)
    np.testing.assert_allclose(whole.values(range(10)).T, h, atol=0.5 / 127 + 1e-6)
    # windows of 50 kept tokens, each after a burn-in of the 20 tokens before it
    parts = U.build_state_index(model, text, layer=1, segment=50, burn_in=20, batch=2)
    assert len(parts) == len(text)
    np.testing.assert_allclose(parts.values(range(10))[:, :50].T, h[:50], atol=0.5 / 127 + 1e-6)
    h2 = model.trace(text[80:150])["layers.1.h"][0, 20:].numpy()  # window 3 = tokens 100..149
    np.testing.assert_allclose(parts.values(range(10))[:, 100:150].T, h2, atol=0.5 / 127 + 1e-6)
    assert np.abs(parts.values(range(10))[:, 100:150].T - h[100:150]).max() < 0.2  # close to a continuous read


# ------------------------------------------------------------------ memory you can see (S6)
from seqviz.introspect import memory as M  # noqa: E402


def brute_span(f: np.ndarray, start: int, threshold: float = 0.5) -> int:
    """Tokens from ``start`` for which the running product stays above ``threshold``, one factor at a time."""
    p, n = 1.0, 0
    for s in range(start, len(f)):
        p *= float(f[s])
        if p <= threshold:
            break
        n += 1
    return n


def known_forget(biases, n_layers: int = 1) -> RecurrentLM:
    """An LSTM whose forget gates are constant: unit u's f = sigmoid(biases[u]) at every token."""
    model = tiny("lstm", seed=7, d_hidden=len(biases))
    H = len(biases)
    with torch.no_grad():
        rnn = model.layers[0]
        rnn.weight_ih_l0[H: 2 * H] = 0
        rnn.weight_hh_l0[H: 2 * H] = 0
        rnn.bias_ih_l0[H: 2 * H] = torch.tensor(biases, dtype=torch.float32)
        rnn.bias_hh_l0[H: 2 * H] = 0
    return model


def test_spans_equal_a_brute_force_loop_and_the_finder_picks_the_longest():
    biases = [0.0, 2.0, 4.0, 1.0, 3.0, -1.0]  # f = 0.5, 0.881, 0.982, 0.731, 0.953, 0.269
    model = known_forget(biases)
    text = TEXTS[0] * 2
    trace = model.trace(text)
    f = trace["layers.0.gates.forget"][0].double().numpy()
    np.testing.assert_allclose(f, np.broadcast_to(1 / (1 + np.exp(-np.array(biases))), f.shape), rtol=1e-6)
    for start in (0, 7, len(text) - 3):
        want = [brute_span(f[:, u], start) for u in range(len(biases))]
        np.testing.assert_array_equal(M.spans(f, start), want)
        table = M.memory_units(trace, "lstm", 0, start)
        assert table["span"].iloc[0] == max(want) and want[table["unit"].iloc[0]] == max(want)
        assert table["unit"].iloc[0] == 2  # ties at the text's end go to the unit that kept the most (largest f)
    # by hand: f^k > 0.5 <=> k < ln 0.5 / ln f; unit 2 (f = 0.982) keeps half for 38 tokens, unit 1 for 5
    np.testing.assert_array_equal(M.spans(f, 0)[[1, 2, 3]], [5, 38, 2])
    assert M.spans(f, 0)[0] == 0  # f = 0.5 exactly (float32 sigmoid(0)): the first factor already halves it
    table = M.memory_units(trace, "lstm", 0, 0)
    assert list(table["unit"][:3]) == [2, 4, 1] and not table["to_end"][0]


def test_memory_units_on_random_gates_match_brute_force():
    model = tiny("lstm", seed=8, d_hidden=16, scale=2.0)
    trace = model.trace(TEXTS[0] * 3)
    for cell, m, name in (("lstm", model, "forget"), ("gru", tiny("gru", seed=9, d_hidden=16, scale=2.0), "update")):
        trace = m.trace(TEXTS[0] * 3)
        f = trace[f"layers.1.gates.{name}"][0].double().numpy()
        want = np.array([brute_span(f[:, u], 4) for u in range(16)])
        table = M.memory_units(trace, cell, 1, 4)
        np.testing.assert_array_equal(table.set_index("unit").loc[range(16), "span"], want)
        assert table["span"].iloc[0] == want.max() and (np.diff(table["span"]) <= 0).all()
        assert want.max() > want.min()  # the test can see a wrong ranking
        assert table["to_end"].iloc[0] == (want.max() == len(f) - 4)
    with pytest.raises(ValueError, match="start"):
        M.spans(np.full((3, 2), 0.9), 3)


def test_forget_bias_what_if_lengthens_spans_and_leaves_the_model_alone():
    biases = [0.5, 1.0, 1.5, -0.5]
    model = known_forget(biases)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    ids = model.tokenizer.encode(TEXTS[0] * 3).ids
    previous = None
    for delta in (0.0, 0.5, 1.0, 2.0, 3.0):
        f = M.what_if_gates(model, ids, 0, delta)
        np.testing.assert_allclose(f[0], 1 / (1 + np.exp(-(np.array(biases) + delta))), rtol=1e-6)  # σ(b_f + Δ)
        s = M.spans(f, 0)
        want = [brute_span(f[:, u], 0) for u in range(len(biases))]
        np.testing.assert_array_equal(s, want)
        if previous is not None:
            assert (s >= previous).all() and (s > previous).any()  # monotone, and it does lengthen
        previous = s
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k]), k  # the shared model is unchanged
    # a trained-like model (all weights random): the shift lengthens the spans of layer 1 too
    rand = tiny("lstm", seed=10, d_hidden=12)
    ids = rand.tokenizer.encode(TEXTS[0] * 2).ids
    totals = [M.spans(M.what_if_gates(rand, ids, 1, d), 0).sum() for d in (0.0, 1.0, 2.0, 4.0)]
    assert all(a < b for a, b in zip(totals, totals[1:])), totals
    base = rand.trace([ids])["layers.1.gates.forget"][0].double().numpy()
    np.testing.assert_allclose(M.what_if_gates(rand, ids, 1, 0.0), base)
    table = M.span_table(base, M.what_if_gates(rand, ids, 1, 2.0), [0, 3], 0)
    assert list(table.columns) == ["unit", "span", "span_what_if", "longer_by"]
    assert (table["longer_by"] == table["span_what_if"] - table["span"]).all()
    with pytest.raises(ValueError, match="no gate"):
        M.shifted_copy(tiny("rnn"), 1.0)


def test_gru_what_if_shifts_the_update_gate_bias():
    model = tiny("gru", seed=11, d_hidden=5)
    ids = model.tokenizer.encode("abc").ids
    clone = M.shifted_copy(model, 1.5, layers=[0])
    H = 5
    diff = clone.layers[0].bias_hh_l0 - model.layers[0].bias_hh_l0
    np.testing.assert_allclose(diff.numpy(), [0] * H + [1.5] * H + [0] * H)  # (r, z, n): only z moves
    assert torch.equal(clone.layers[1].bias_hh_l0, model.layers[1].bias_hh_l0)
    z0 = model.trace([ids])["layers.0.gates.update"][0, 0].double().numpy()
    z1 = M.what_if_gates(model, ids, 0, 1.5)[0]  # the first step reads h_0 = 0: z = σ(pre + Δ) exactly
    np.testing.assert_allclose(np.log(z1 / (1 - z1)) - np.log(z0 / (1 - z0)), 1.5, atol=1e-4)


def test_tracked_features_by_hand():
    ranking = pd.DataFrame({"feature": ["quote", "line", "quote", "line"], "unit": [1, 1, 2, 2],
                            "r": [0.2, -0.6, 0.25, 0.1]}).assign(abs_r=lambda d: d["r"].abs())
    got = M.tracked_features(ranking, [1, 2, 3])
    assert list(got["feature"]) == ["line", "", ""] and got["r"][0] == -0.6 and got["r"][1] == 0.25
    assert np.isnan(got["r"][2])


def test_one_colour_per_gate_on_every_gates_chart_and_one_log_format():
    import json

    from seqviz.charts import gates as CG
    from seqviz.charts import palette as P

    assert len(set(P.SIGNAL_COLOURS.values())) == len(P.SIGNAL_COLOURS)  # no two signals share a colour
    model = tiny("lstm", seed=12)
    trace = model.trace(TEXTS[0])
    tokens = G.row_tokens(trace)
    means = CG.gate_means_chart(G.gate_means(trace, "lstm", 0), tokens, {"cell": "candidate g̃"}).to_dict()
    scale = means["encoding"]["color"]["scale"]
    assert dict(zip(scale["domain"], scale["range"])) == {s: P.SIGNAL_COLOURS[s] for s in ("input", "forget", "cell", "output")}
    sat = pd.DataFrame({"layer": 0, "signal": ["output", "forget"], "unit": 0, "left": 0.1, "right": 0.2, "tokens": 9})
    sat_scale = CG.saturation_chart(sat).to_dict()["spec"]["layer"][0]["encoding"]["color"]["scale"]
    assert dict(zip(sat_scale["domain"], sat_scale["range"])) == {"forget": "#009E73", "output": "#D55E00"}
    f = trace["layers.0.gates.forget"][0].double().numpy()
    frame = M.product_frame(f, f * 0.9, 2, tokens, 3, labels=("as trained", "b_f +1.0"))
    assert len(frame) == 2 * (len(tokens) - 3)
    np.testing.assert_allclose(frame["product"][: len(tokens) - 3], np.cumprod(f[3:, 2]), rtol=1e-9)
    mem = CG.memory_chart(frame).to_dict()
    prod = mem["layer"][0]["encoding"]
    assert prod["color"]["scale"]["range"] == ["#009E73", P.WHAT_IF]
    assert prod["y"]["axis"]["labelExpr"] == P.LOG_LABEL_EXPR and 0.5 in prod["y"]["axis"]["values"]
    assert CG.decade_ticks(9e-4, 0.5) == [1.0, 0.5, 0.1, 0.01, 0.001, 0.0001]
    assert CG.decade_ticks(1e-26)[-1] <= 1e-26 and len(CG.decade_ticks(1e-26)) <= 8
    heat = CG.gate_heatmap(CG.heatmap_frame(f, tokens, [0, 1]), "forget", tokens, [0, 1]).to_dict()
    assert heat["encoding"]["y"]["axis"]["labelFontSize"] >= 11
    fixed = printable(heat, {"step": 12})
    assert heat["width"] == {"step": CG.TOKEN_PX}  # more tokens than a phone's column holds: a step each
    assert fixed["width"] == {"step": CG.TOKEN_PX} and "autosize" not in fixed and "container" not in json.dumps(fixed)
