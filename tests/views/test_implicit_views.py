"""The memory-as-attention views: what they draw and say is the library's unrolling, read independently here (the
traced forget gates' product, a single-token knockout, scipy's Spearman ρ, an entropy by hand)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.stats import spearmanr

import seqviz
from seqviz.introspect.implicit import contributions, knockout
from seqviz.views import implicit as views
from seqviz.views import implicit_compare as compared
from tests.conftest import ROOT, build_tiny_lm

TEXT = "the cat sat on the mat and the dog sat on the log. " * 2  # 102 tokens: the window starts after 0


@pytest.fixture(scope="module")
def lstm():
    model = build_tiny_lm("lstm", seed=5)
    return model, tuple(model.tokenizer.encode(TEXT).ids)


def test_a_unit_map_is_a_window_of_one_units_rows_and_its_weight_is_the_product_of_forget_gates(lstm):
    model, ids = lstm
    c = contributions(model, list(ids), layer=1).contributions
    position = 70
    got = views.unit_map(model, ids, layer=1, position=position)
    u = got.facts["unit"]
    last = np.abs(c[-1, :, u])
    assert got.facts["reach"] == pytest.approx(last[: len(ids) - views.FAR].sum() / last.sum(), abs=1e-6)
    first = position - views.WINDOW + 1
    assert got.facts["first"] == first and sorted(got.data["t"].unique()) == list(range(first, position + 1))
    row = got.data[got.data["t"] == position].sort_values("j")
    mag = np.abs(c[position, : position + 1, u])
    assert np.allclose(row["weight"], [mag[:first].sum() / mag.sum(), *(mag[first:] / mag.sum())], atol=1e-6)
    assert row["source"].iloc[0] == "…" and np.allclose(row["contribution"].iloc[1:], c[position, first:position + 1, u])
    assert got.data.groupby("t")["weight"].sum().between(1 - 1e-5, 1 + 1e-5).all()  # "…" keeps each row whole
    assert got.facts["far_share"] == pytest.approx(mag[: position - views.FAR + 1].sum() / mag.sum(), abs=1e-6)
    assert got.facts["mostly_far"] == (got.facts["far_share"] > 0.5) != got.facts["mostly_recent"]
    # what is left of the top token's write is ∏ f since then, read off the traced forget gates
    j = got.facts["top_source"]
    f = model.trace([list(ids)])["layers.1.gates.forget"][0, :, u].double()
    assert got.facts["kept"] == pytest.approx(float(f[j + 1: position + 1].prod()), rel=1e-4)
    assert f"{got.facts['far_share']:.0%}" in views.caption(got.facts)
    got.chart.to_dict(validate=True)
    assert views.unit_map(model, ids, layer=1, unit=u, scale="max", position=position).data["weight"].max() == \
        pytest.approx(1.0)
    with pytest.raises(ValueError, match="scale must be"):
        views.unit_map(model, ids, scale="log")


def test_the_layer_map_sums_every_unit_and_opens_on_the_last_scored_step(lstm):
    model, ids = lstm
    c = np.abs(contributions(model, list(ids), layer=0).contributions).sum(-1)
    got = views.layer_map(model, ids, layer=0)
    p = len(ids) - 2
    assert got.facts["position"] == views.last_step(len(ids)) == p
    assert got.facts["far_share"] == pytest.approx(c[p, : p - views.FAR + 1].sum() / c[p, : p + 1].sum(), abs=1e-6)
    assert got.facts["beyond"] == pytest.approx(c[p, : p - views.WINDOW + 1].sum() / c[p, : p + 1].sum(), abs=1e-6)


def test_the_bars_are_shares_and_each_knockout_is_a_single_exact_knockout(lstm):
    model, ids = lstm
    position = 60
    got = views.target(model, ids, layer=0, position=position)
    c = np.abs(contributions(model, list(ids), layer=0).contributions[position]).sum(-1)
    share = c / c.sum()
    first = position - views.WINDOW + 1
    assert np.allclose(got.data["weight"], [share[:first].sum(), *share[first:position + 1]], atol=1e-6)
    assert got.facts["beyond"] == pytest.approx(share[:first].sum(), abs=1e-6)
    for j in (first, got.facts["top_source"], position - 1):  # the window's batch against one knockout each
        row = got.data[got.data["j"] == j]
        alone = knockout(model, list(ids), j, layer=0)["delta"][position]
        assert float(row["delta_loss"].iloc[0]) == pytest.approx(alone, abs=1e-5)
    assert np.isnan(got.data["delta_loss"].iloc[0]) and np.isnan(got.data["delta_loss"].iloc[-1])  # "…", own token
    effects = np.abs(got.data["delta_loss"].to_numpy()[1:-1])
    rho = spearmanr(share[first:position], effects).statistic
    assert got.facts["rho"] == pytest.approx(rho, abs=1e-6) and got.facts["knocked"] == position - first
    assert got.facts["ranks"] == (rho >= 0.5) and got.facts["unranked"] == (rho < 0.2)
    assert got.facts["largest_source"] == first + int(np.argmax(effects))
    expected = "yes, mostly" if rho >= 0.5 else "only loosely" if rho >= 0.2 else "no"
    assert f"{expected}:" in views.target_caption(got.facts)
    got.chart.to_dict(validate=True)  # the builder's output against the Vega-Lite schema (the app skips the check)
    assert set(got.data.loc[got.data["named"], "j"]) == {first - 1, got.facts["top_source"], position}


def test_what_the_next_step_reads_is_computed_ahead(lstm, monkeypatch):
    """``sources`` at a step computes the knockouts the bars at that step and the steps beside it read: moving the
    step by one then runs no model."""
    from seqviz.introspect import implicit

    model, ids = lstm
    views.sources(model, ids, layer=1, position=70)
    ran, real = [], implicit.knockouts
    monkeypatch.setattr(implicit, "knockouts", lambda *a, **k: ran.append(a) or real(*a, **k))
    for p in (69, 70, 71):
        views.target(model, ids, layer=1, position=p)
    assert not ran
    blocks = [views.knocked_block(model, ids, 1, b) for b in range((len(ids) - 1) // views.BLOCK + 1)]
    assert sum(len(b) for b in blocks) == len(ids) - 1  # every token with a later loss, in one block


def test_a_tanh_rnn_view_refuses_with_its_sentence():
    model = build_tiny_lm("rnn")
    with pytest.raises(ValueError, match="no gated linear form"):
        views.layer_map(model, tuple(model.tokenizer.encode(TEXT).ids))


def test_two_memories_side_by_side_are_each_ones_own_map(lstm):
    model, ids = lstm
    gru = build_tiny_lm("gru", seed=2)
    got = compared.memory_pair(model, TEXT, 0, 50, (("gru", gru),))
    alone = views.layer_map(gru, tuple(gru.tokenizer.encode(TEXT).ids), 0, 50).facts
    assert got.facts["far_1"] == pytest.approx(alone["far_share"]) and got.facts["title_1"] == "GRU"
    assert got.facts["far_0"] == pytest.approx(views.layer_map(model, ids, 0, 50).facts["far_share"])
    assert got.facts["first_farther"] == (got.facts["far_0"] > got.facts["far_1"]) != got.facts["second_farther"]
    spec = got.chart.to_dict(validate=True)
    assert len(spec["vconcat"]) == 2 and "LSTM" in compared.pair_caption(got.facts)


def test_a_translation_in_recurrent_memories_sums_each_words_tokens():
    translator = seqviz.load(ROOT / "checkpoints" / "zh-en-attention-gru")
    lm = build_tiny_lm("lstm", seed=3)
    got = compared.word_maps(translator, "我昨天在公园吃了一个苹果", (("tiny", lm),))
    words = got.facts["translation"].split()
    # by hand: the LM reads "w0 w1 ..." token by token; a word's row is its last token's memory, summed per word
    ids, owner = [], []
    for w, word in enumerate(words):
        piece = lm.tokenizer.encode(word if w == 0 else " " + word).ids
        ids, owner = ids + piece, owner + [w] * len(piece)
    mass = np.abs(contributions(lm, ids).contributions).sum(-1)
    owner = np.array(owner)
    lstm = got.data[got.data["model"] == "LSTM"]
    for a in (0, len(words) // 2, len(words) - 1):
        end = int(np.flatnonzero(owner == a)[-1])
        row = np.bincount(owner[: end + 1], weights=mass[end, : end + 1], minlength=len(words))[: a + 1]
        assert np.allclose(lstm[lstm["t"] == a].sort_values("j")["weight"], row / row.sum(), atol=1e-6)
    alpha = got.data[got.data["model"] == "Bahdanau"].pivot(index="t", columns="j", values="weight").to_numpy()
    assert alpha.shape[0] == len(words)  # the translation's word rows: no end-of-sentence row
    entropy = -(alpha * np.log(alpha)).sum(1) / np.log(alpha.shape[1])
    assert got.facts["alignment_spread"] == pytest.approx(entropy.mean(), abs=1e-6)
    assert got.facts["alignment_sharper"] == (got.facts["alignment_spread"] < got.facts["spreads"][0])
    assert len(got.chart.to_dict(validate=True)["vconcat"]) == 2 and "LSTM" in compared.word_caption(got.facts)


def test_the_mamba_hidden_attention_map_opens_on_a_tiny_transformers_mamba(tmp_path):
    from tests.conftest import build_tiny_mamba

    torch.manual_seed(0)
    model = seqviz.load(build_tiny_mamba(tmp_path / "m"))
    ids = tuple(model.tokenizer.encode(TEXT[:40]).ids)
    got = views.target(model, ids, layer=1)
    alone = knockout(model, list(ids), got.facts["top_source"], layer=1)["delta"][got.facts["position"]]
    assert got.facts["top_delta"] == pytest.approx(alone, abs=1e-5)
    assert views.layer_map(model, ids, 1).data.groupby("t")["weight"].sum().between(1 - 1e-5, 1 + 1e-5).all()


def test_the_pages_background_work_prepares_every_layer_of_a_small_model_and_the_chosen_one_of_a_large(lstm,
                                                                                                        monkeypatch):
    """``prepare`` is what the page computes while the visitor reads: every layer's sources where one trace of every
    layer is small, the chosen layer's alone for a model of real size (mamba-130m's 24 layers took minutes)."""
    from seqviz import budget

    model, ids = lstm
    prepared = []
    monkeypatch.setattr(views, "sources", lambda m, i, layer, position: prepared.append(layer))
    views.prepare(model, ids, layer=1, position=70)
    assert prepared == [1, 0]  # the chosen layer first
    prepared.clear()
    monkeypatch.setattr(budget, "WHOLE_TRACE", 1)  # as if every layer's trace were too large to keep
    views.prepare(model, ids, layer=1, position=70)
    assert prepared == [1]


def test_a_model_of_real_size_unrolls_fewer_tokens_and_the_shipped_ones_every_token():
    """T² · U · N products per layer: mamba-130m's 1,536 channels x 16 states unroll 72 tokens (was every one of 172:
    18.6 s to the first chart); every shipped model unrolls the whole default text, so its shipped views still match."""
    from types import SimpleNamespace

    from seqviz.views.implicit import tokens_for

    for name in ("lstm", "gru", "mamba", "mingru", "minlstm", "rwkv", "xlstm"):
        model = seqviz.load(ROOT / "checkpoints" / f"shakespeare-char-{name}")
        n = len(model.tokenizer.encode(views.DEFAULT_TEXT).ids)
        assert n == 172 and tokens_for(model.config, n) == n, name
    large = SimpleNamespace(d_hidden=768, channels=1536, states=16)
    assert tokens_for(large, 1000) == int((views.UNROLL_WORK / (1536 * 16)) ** 0.5) == 72
    assert tokens_for(large, 30) == 30
    assert "72 of the text's 172 tokens" in views.cut_note(172, 72)
