"""Views sized to the model (``seqviz.budget``): a model too large for a whole trace gets the same numbers from one
layer's trace, corpus samples and texts shrink with its size and say so, edited runs go in batches, and a page
offers one layer where every layer would not fit. The tiny models stand in for large ones by shrinking the budget."""

from __future__ import annotations

import pytest
import torch

import seqviz
from seqviz import budget
from seqviz.views import gates as gv
from tests.conftest import build_tiny_lm, build_tiny_mamba

TEXT = "To be, or not to be, that is the question:\nWhether 'tis nobler in the mind to suffer\n"


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return build_tiny_mamba(tmp_path_factory.mktemp("sized") / "tiny-mamba")


def fresh(folder):
    return seqviz.load(folder)  # its own memo: what one budget computed is not read under another


@pytest.fixture
def large(monkeypatch):
    """Every model counts as one of real size: no whole traces, a budget of 100 parameter-tokens a view."""
    monkeypatch.setattr(budget, "WHOLE_TRACE", 0)
    monkeypatch.setattr(budget, "WORK", 100 * 2 ** 10)


def test_the_parameters_are_read_from_the_weights_files_as_the_loaded_model_counts_them(folder, tmp_path):
    lstm = build_tiny_lm("lstm")
    from tests.conftest import tiny_card

    lstm.save_pretrained(tmp_path / "lstm", tiny_card(lstm, "lstm"))
    assert budget.parameters(tmp_path / "lstm") == lstm.num_parameters() == budget.parameters(lstm)
    assert budget.parameters(folder) == fresh(folder).num_parameters()
    assert budget.parameters(tmp_path) == 0  # no weights: nothing is sized down


def test_tokens_shrink_with_the_model_and_never_below_the_fewest(monkeypatch):
    monkeypatch.setattr(budget, "parameters", lambda model: model)
    assert budget.tokens_for(10 ** 5, 1000) == 1000  # a shipped model reads every token
    assert budget.tokens_for(130 * 10 ** 6, 1000) == int(budget.WORK // (130 * 10 ** 6))  # ~190
    assert budget.tokens_for(10 ** 12, 1000) == budget.FEWEST_TOKENS
    assert budget.pairs_for(130 * 10 ** 6, 400) == 100 and budget.pairs_for(10 ** 6, 400) == 400


@pytest.mark.parametrize("view, choices", [
    (gv.heat_map, {"layer": 1, "signal": "decay", "order_by": "variance", "position": 3}),
    (gv.gate_means, {"layer": 1, "position": 5}), (gv.memory_spans, {"layer": 0, "position": 2, "delta": 0.0}),
    (gv.memory_product, {"layer": 1, "position": 0, "delta": 0.0}), (gv.unit_on_text, {"layer": 1, "unit": 3})])
def test_a_view_of_one_layer_computes_from_that_layer_alone_the_numbers_of_the_whole_trace(view, choices, folder,
                                                                                            monkeypatch):
    model = fresh(folder)
    ids = tuple(model.tokenizer.encode(TEXT).ids)
    whole = view(model, ids, **choices)
    monkeypatch.setattr(budget, "WHOLE_TRACE", 0)
    model = fresh(folder)
    asked = []
    trace = model.trace
    monkeypatch.setattr(model, "trace", lambda *a, **k: (asked.append(k.get("names")), trace(*a, **k))[1])
    alone = view(model, ids, **choices)
    assert asked and all(names is not None and {n.split(".")[1] for n in names if n.startswith("layers.")} ==
                         {str(choices["layer"])} for names in asked)  # one layer's names, never every name
    assert alone.facts == whole.facts
    assert alone.data.equals(whole.data)


def test_saturation_of_one_layer_is_that_layers_rows_and_says_so(folder, monkeypatch):
    model = fresh(folder)
    every = gv.saturation(model)
    one = gv.saturation(model, layer=1)
    assert "note" not in every.facts and "layer 1 alone" in one.facts["note"]
    assert one.data.reset_index(drop=True).equals(every.data[every.data["layer"] == 1].reset_index(drop=True))
    assert gv.one_layer(model.config, 1) == {}  # 2 layers of 24 channels: one chart holds them all
    monkeypatch.setattr(gv, "FACET_UNITS", 24)
    assert gv.one_layer(model.config, 1) == {"layer": 1}


def test_a_large_model_reads_a_smaller_corpus_sample(folder, large):
    texts, source = gv.sample_texts(fresh(folder))
    assert len(texts) == 1 and len(texts[0]) == budget.FEWEST_TOKENS and source.startswith("1 chunks x 64")
    assert gv.sample_texts(build_tiny_lm("lstm")) == gv.sample_texts(build_tiny_lm("gru"))  # budgets alike


def test_edited_runs_in_batches_equal_one_batch(folder, monkeypatch):
    from seqviz.models.edit_batch import edited_traces
    from seqviz.models.edits import ablate

    for model in (fresh(folder), build_tiny_lm("gru")):
        name = "layers.0.s" if "s" in budget.default_leaves(model) else "layers.0.h"
        plain = model.trace([model.tokenizer.encode(TEXT).ids])
        sets = [[ablate(name, [u], span=(3, 40))] for u in range(5)]
        together = edited_traces(model, plain, sets, ("logits", "loss"))
        monkeypatch.setattr("seqviz.models.edit_batch.BATCH_BYTES", 1)  # one set a batch
        alone = edited_traces(model, plain, sets, ("logits", "loss"))
        monkeypatch.undo()
        for a, b in zip(together, alone):
            assert torch.allclose(a["logits"], b["logits"], atol=1e-5) and torch.allclose(a["loss"], b["loss"],
                                                                                          atol=1e-5)


def test_a_page_cuts_a_long_text_for_a_large_model_and_says_why(folder, large):
    from types import SimpleNamespace

    from seqviz import inputs as tx

    info = SimpleNamespace(tokenizer=fresh(folder).tokenizer, card={"path": str(folder)})
    ids, notes = tx.read_texts(info, TEXT * 3)
    assert len(ids[0]) == budget.FEWEST_TOKENS
    assert any("This model is large" in n and f"{len(TEXT * 3) - budget.FEWEST_TOKENS:,} tokens were cut" in n
               for n in notes)


def test_the_gradient_views_of_a_large_model_read_fewer_tokens_and_its_top_layer_and_say_so(folder, large,
                                                                                             monkeypatch):
    from seqviz.views import gradients as grv

    monkeypatch.setattr(budget, "PAIR_WORK", 1.0)  # as few tokens as a view reads (64)
    model = fresh(folder)
    curves = grv.distance_curve(model, TEXT, tokens=80)
    assert curves.facts["tokens"] == 64 and curves.facts["fewer"] == (("chosen model", 64),)
    assert "reads the first 64 tokens" in grv.distance_caption(curves.facts)
    assert grv.matrix(model, TEXT, tokens=80)[0].shape == (63, 64)
    per_layer = grv.layers(model, TEXT, tokens=80)
    assert set(per_layer.data["model"]) == {"layer 1"} and "top layer alone" in per_layer.facts["note"]


def test_switching_units_off_on_a_large_model_reads_fewer_tokens_and_says_so(folder, monkeypatch):
    from seqviz.views import interventions as iv

    model = fresh(folder)
    ids = tuple(model.tokenizer.encode(TEXT).ids)
    whole = iv.switch_off_text(model, ids, layer=1, pick="one", unit=2)
    assert "note" not in whole.facts and whole.facts["stop"] == len(ids)
    monkeypatch.setattr(budget, "WORK", 40 * (1 + iv.DRAWS) * model.num_parameters())  # 40 tokens, read 6 times
    monkeypatch.setattr(budget, "FEWEST_TOKENS", 8)
    cut = iv.switch_off_text(fresh(folder), ids, layer=1, pick="one", unit=2)
    assert cut.facts["stop"] == 40 and f"first 40 tokens are read ({len(ids) - 40:,} cut)" in cut.facts["note"]
    assert cut.data["delta"].tolist() == pytest.approx(whole.data["delta"][:39].tolist(), abs=1e-5)  # causal


def test_a_large_model_continues_fewer_tokens_and_says_so(folder, monkeypatch):
    from seqviz.views import exposure as ev

    model = fresh(folder)
    whole = ev.gold_logprob(model, TEXT, prompt=10, n=30)
    assert "note" not in whole.facts and len(whole.data) == 30
    monkeypatch.setattr(budget, "WORK", 24 * ev.READINGS * model.num_parameters())  # 24 tokens, read 3 times
    monkeypatch.setattr(budget, "FEWEST_TOKENS", 8)
    cut = ev.gold_logprob(fresh(folder), TEXT, prompt=10, n=30)
    assert cut.facts["n"] == 14 and len(cut.data) == 14 and "14 of the 30 tokens" in cut.facts["note"]
    assert cut.data["gold_logp_tf"].tolist() == pytest.approx(whole.data["gold_logp_tf"][:14].tolist(), abs=1e-5)
