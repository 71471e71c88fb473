"""seqviz.views.language against torch: surprisal per token, perplexity, the shipped scores, the comparison."""

from __future__ import annotations

import math
import shutil

import pytest
import torch
import torch.nn.functional as F

from seqviz import figures, load
from seqviz.introspect import language as lang
from seqviz.lessons import run_view
from seqviz.views import language as views
from tests.conftest import build_tiny_lm
from tests.float32 import ATOL, RTOL

TEXT = "Whether 'tis nobler in the mind to suffer\nThe slings and arrows"


@pytest.fixture(scope="module")
def gru():
    return build_tiny_lm("gru", seed=4)


def by_hand(model, text: str) -> torch.Tensor:
    """−log p(token t | tokens before it) for t = 1.., from the model's own forward pass."""
    ids = torch.tensor([model.tokenizer.encode(text).ids])
    logits, _ = model(ids)
    return F.cross_entropy(logits[0, :-1].double(), ids[0, 1:], reduction="none")


def test_surprisal_per_token_is_torch_s_cross_entropy(gru):
    view = views.surprisal(gru, TEXT)
    nll = by_hand(gru, TEXT)
    assert view.data["loss"].isna().tolist() == [True] + [False] * len(nll)  # the first token is never scored
    assert view.data["loss"][1:].to_numpy() == pytest.approx(nll.numpy(), rel=RTOL, abs=ATOL)
    assert view.data["prob"][1:].to_numpy() == pytest.approx(torch.exp(-nll).numpy(), rel=RTOL, abs=ATOL)
    assert view.facts["scored"] == len(nll) == len(TEXT) - 1 and view.facts["vocab_size"] == len(gru.tokenizer)


def test_perplexity_is_exp_of_the_mean_log_softmax_loss(gru):
    ids = gru.tokenizer.encode(TEXT).ids
    logits, _ = gru(torch.tensor([ids]))
    logp = torch.log_softmax(logits[0].double(), -1)
    mean = -sum(float(logp[t - 1, ids[t]]) for t in range(1, len(ids))) / (len(ids) - 1)
    nats, bits = views.surprisal(gru, TEXT), views.surprisal(gru, TEXT, unit="bits")
    assert nats.facts["perplexity"] == pytest.approx(math.exp(mean), rel=RTOL)
    assert nats.facts["mean"] == pytest.approx(mean, rel=RTOL)
    assert bits.facts["mean"] == pytest.approx(mean / math.log(2), rel=RTOL)
    assert bits.facts["perplexity"] == nats.facts["perplexity"]  # the unit changes the axis, not the model
    worst = int(torch.argmax(-logp[torch.arange(len(ids) - 1), torch.tensor(ids[1:])])) + 1
    assert nats.facts["worst_position"] == worst and nats.facts["worst"] == TEXT[worst]
    encoded = nats.chart.to_dict(validate=False)["encoding"]
    assert encoded["y"]["field"] == "loss" and bits.chart.to_dict(validate=False)["encoding"]["y"]["field"] == "bits"
    assert encoded["color"]["scale"]["domain"][1] == pytest.approx(math.log(len(gru.tokenizer)))  # ln V


def test_the_text_is_read_once_per_model_whatever_the_unit(gru, monkeypatch):
    calls = []
    real = lang.score_text
    monkeypatch.setattr(lang, "score_text", lambda model, text, **kw: calls.append(text) or real(model, text, **kw))
    text = "a text read once"
    views.surprisal(gru, text, "nats")
    views.surprisal(gru, text, "bits")
    assert calls == [text]


def test_left_out_and_cut_tokens_are_in_the_facts(gru):
    view = views.surprisal(gru, "naïve café, or not")
    assert set(view.facts["unknown"]) == {"ï", "é"} and view.facts["text"] == "nave caf, or not"
    cut = views.surprisal(gru, "abcdefghij", max_tokens=4)
    assert (cut.facts["tokens"], cut.facts["truncated"]) == (4, 6)
    assert views.reading_notes(views.surprisal(gru, TEXT).facts) == []
    unknown, = views.reading_notes(view.facts)
    assert unknown.startswith("2 character(s)") and "'ï'" in unknown and "'é'" in unknown
    assert views.reading_notes(cut.facts) == ["The text is longer than 4 tokens: only the first 4 were read "
                                              "(6 tokens cut)."]
    one = views.surprisal(gru, "a")
    assert one.chart is None and one.facts["scored"] == 0 and math.isnan(one.facts["perplexity"])
    with pytest.raises(ValueError, match="vocabulary"):
        views.surprisal(gru, "ééé")
    with pytest.raises(ValueError, match="unit"):
        views.surprisal(gru, TEXT, unit="hartleys")


def test_the_shipped_view_is_the_model_s_view_without_the_model(tiny_lm_dir, tmp_path):
    folder = shutil.copytree(tiny_lm_dir / "tiny-gru", tmp_path / "tiny-gru")
    model = load(folder)
    lang.write_scores(folder, [TEXT])
    shipped, live = views.shipped_surprisal(str(folder), None, TEXT, "bits"), views.surprisal(model, TEXT, "bits")
    assert shipped.title == live.title and shipped.facts == pytest.approx(live.facts, rel=RTOL)
    assert shipped.data["loss"][1:].to_numpy() == pytest.approx(by_hand(model, TEXT).numpy(), rel=RTOL, abs=ATOL)
    assert views.shipped_surprisal(str(folder), 100, TEXT) is None  # a training snapshot: not these weights
    assert views.shipped_surprisal(str(folder), None, "a text of my own") is None


def test_greedy_continuation_is_the_argmax_chain(gru):
    prompt = "To be, or not"
    ids = gru.tokenizer.encode(prompt).ids
    for _ in range(12):  # the whole prefix through the model each step, the likeliest token that is not special
        logits, _state = gru(torch.tensor([ids]))
        last = logits[0, -1].clone()
        last[gru.tokenizer.special_ids] = -float("inf")
        ids.append(int(last.argmax()))
    view = views.continuation(gru, prompt, n=12, temperature=0.0)
    assert view.facts["sample"] == gru.tokenizer.decode(ids[-12:]) and view.facts["prompt_tail"] == prompt
    sampled = [views.continuation(gru, prompt, n=30, temperature=1.0, seed=s).facts["sample"] for s in (1, 1, 2)]
    assert sampled[0] == sampled[1] != sampled[2]


def test_the_comparison_and_its_summary_read_each_model_s_table():
    models = {f"tiny-{cell}": build_tiny_lm(cell, seed=i) for i, cell in enumerate(("rnn", "lstm"))}
    tables = {name: views.surprisal(m, TEXT).data for name, m in models.items()}
    table = views.summary(tables)
    for name, m in models.items():
        row = table.data.set_index("model").loc[name]
        nll = by_hand(m, TEXT)
        assert row["perplexity"] == pytest.approx(math.exp(float(nll.mean())), rel=RTOL)
        assert row["bits/token"] == pytest.approx(float(nll.mean()) / math.log(2), rel=RTOL)
        assert row["tokens scored"] == len(nll)
    best = min(models, key=lambda n: float(by_hand(models[n], TEXT).mean()))
    assert table.facts["best"] == best
    along = views.comparison(tables, unit="bits", window=5)
    assert len(along.data) == 2 * len(TEXT) and set(along.data["model"]) == set(models)
    assert along.chart.to_dict(validate=False)["encoding"]["y"]["title"] == "5-token mean (bits)"


def test_the_cli_figure_and_the_lesson_draw_the_page_s_view(gru):
    chart, frame, footnote = figures.render("language_model", gru, TEXT, unit="bits")
    view = views.surprisal(gru, TEXT, "bits")
    assert frame.equals(view.data) and f"perplexity: {view.facts['perplexity']:.2f}" in footnote
    models = {"tiny-rnn": build_tiny_lm("rnn", seed=0), "tiny-gru": gru}
    step = run_view("perplexity", models, {}, "tiny-gru", {"text": TEXT})
    assert step.numbers["ppl"] == view.facts["perplexity"] and step.numbers["n"] == len(TEXT) - 1
    assert step.numbers["best_is_gru"] == (step.numbers["best"] == "tiny-gru")
    _bars, surprise = step.chart  # every model's perplexity, then the chosen one's surprisal, its tallest labelled
    assert surprise.to_dict(validate=False)["layer"][0]["encoding"] == views.surprisal(gru, TEXT).chart.to_dict(
        validate=False)["encoding"]


def test_summary_says_whether_the_models_cut_the_text_into_the_same_tokens():
    import pandas as pd

    from seqviz.views.language import summary

    a = pd.DataFrame({"token": ["T", "o", " "], "loss": [float("nan"), 1.0, 2.0]})
    b = pd.DataFrame({"token": ["To", " "], "loss": [float("nan"), 1.5]})
    assert summary({"a": a, "a again": a}).facts["same_tokens"]
    assert not summary({"a": a, "b": b}).facts["same_tokens"]
