"""seqviz.views.attention against references by hand: softmax of the stored energies, a greedy loop, sacrebleu."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sacrebleu
import torch

from seqviz import figures
from seqviz.lessons.views import run_view
from seqviz.seq2seq.checkpoints import save_heldout
from seqviz.seq2seq.data import make_splits
from seqviz.seq2seq.model import EOS_ID, NEVER_EMITTED, Seq2Seq
from seqviz.views import attention as views
from tests.seq2seq.conftest import make_model
from tests.seq2seq.test_hf_cross_attention import hf_root  # noqa: F401 - the tiny transformers folders

SENTENCE = "我 昨天 在 公园 吃 了 一 个 苹果"


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    splits = make_splits("zh-en", 300, 10, 24, seed=0, max_clauses=3)
    model = make_model(pairs=splits.train + splits.test)
    root = tmp_path_factory.mktemp("attention-views") / "zh-en-attention-gru"
    model.save_pretrained(root, {"name": "zh-en-attention-gru", "task": "zh-en"})
    save_heldout(splits.test, root, "zh-en")
    return root


@pytest.fixture(scope="module")
def model(folder):
    return Seq2Seq.from_pretrained(folder)


def greedy(model, src: str, limit: int = 40) -> list[int]:
    """Greedy decoding by hand: the whole prefix read again teacher-forced, the likeliest emittable token appended."""
    out = []
    for _ in range(limit):
        logits = model.trace([src], [out] if out else [[]])["logits"][0, len(out)].double()
        logits[list(NEVER_EMITTED)] = -math.inf
        token = int(logits.argmax())
        if token == EOS_ID:
            break
        out.append(token)
    return out


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_the_translation_is_a_greedy_loop_by_hand(model):
    f = views.translation(model, SENTENCE).facts
    assert f["translation"] == model.tgt_vocab.decode(greedy(model, SENTENCE))
    assert f["pieces"] == tuple(SENTENCE.split()) and f["unknown"] == ()
    with pytest.raises(ValueError, match="no tokens"):
        views.translation(model, "   ")


@pytest.mark.parametrize("temperature", [0.3, 1.0, 4.0])
def test_weights_are_the_softmax_of_the_stored_energies_over_t(model, temperature):
    view = views.alignment(model, SENTENCE, temperature)
    trace = model.translate([SENTENCE])[1]
    n_tgt, n_src = int(trace.lengths()[0]), len(SENTENCE.split())
    energies = trace["decoder.attn.scores"][0, :n_tgt, :n_src].double().numpy()
    by_hand = softmax(energies / temperature)
    drawn = view.data.pivot(index="t", columns="j", values="weight").to_numpy()
    assert drawn == pytest.approx(by_hand, abs=1e-6)
    assert view.facts["max_lo"] == pytest.approx(by_hand.max(1).min(), abs=1e-6)
    assert view.facts["max_hi"] == pytest.approx(by_hand.max(1).max(), abs=1e-6)
    assert view.facts["uniform"] == pytest.approx(1 / n_src)
    if temperature == 1.0:  # the model's own α, the one its context vector read: c_t = Σ_j α_tj h_j
        h = trace["encoder.h"][0, :n_src].double().numpy()
        assert trace["decoder.context"][0, :n_tgt].double().numpy() == pytest.approx(by_hand @ h, abs=1e-5)
    t = view.facts["target"]
    bar = views.target_weights(model, SENTENCE, temperature, target=t)
    row = by_hand[t]
    assert bar.facts["max_weight"] == pytest.approx(row.max(), abs=1e-6)
    assert bar.facts["source"] == SENTENCE.split()[int(row.argmax())]
    assert bar.facts["entropy"] == pytest.approx(-(row * np.log(row)).sum(), abs=1e-6)
    assert bar.facts["diffuse"] == (-(row * np.log(row)).sum() / math.log(n_src) >= 0.5)
    assert bar.data["weight"].to_numpy() == pytest.approx(row, abs=1e-6)


def test_entropy_table_and_a_bad_target(model):
    stats = views.entropy(model, SENTENCE, 2.0).data
    weights = views.alignment(model, SENTENCE, 2.0).data.pivot(index="t", columns="j", values="weight").to_numpy()
    assert stats["entropy"].to_numpy() == pytest.approx(-(weights * np.log(weights)).sum(1), abs=1e-6)
    with pytest.raises(ValueError, match="target must be in"):
        views.target_weights(model, SENTENCE, target=len(stats))


@pytest.mark.parametrize("temperature", [0.3, 1.0, 50.0])
def test_the_captions_quote_the_weights_at_that_temperature(model, temperature):
    weights = softmax(model.translate([SENTENCE])[1]["decoder.attn.scores"][0].double().numpy() / temperature)
    n_tgt, n_src = len(views.translation(model, SENTENCE).facts["target"]), len(SENTENCE.split())
    maxima = weights[:n_tgt, :n_src].max(1)
    caption = views.alignment_caption(views.alignment(model, SENTENCE, temperature).facts)
    assert f"row maxima {maxima.min():.2f}–{maxima.max():.2f}, against 1/n = {1 / n_src:.2f}" in caption
    if maxima.max() <= 1.5 / n_src:  # near-uniform, whatever the side of 1
        assert "near-uniform" in caption
    else:
        assert ("sharper" if temperature < 1 else "closer to uniform" if temperature > 1 else "model's own") in caption
    row = views.target_weights(model, SENTENCE, temperature, target=0).facts
    entropy = -(weights[0, :n_src] * np.log(weights[0, :n_src])).sum()
    said = views.target_sentence(row)
    assert f"puts {weights[0, :n_src].max():.2f} on" in said and f"α is {entropy:.2f} nats" in said
    assert ("**not diffuse**" not in said) == (entropy / math.log(n_src) >= 0.5)
    table = views.entropy(model, SENTENCE, temperature)
    note = views.function_words_note(table.facts)
    assert (note is None) == (not table.facts["function_words"])
    for word in table.facts["diffuse"]:
        assert f"“{word}”" in note.split("Diffuse on this model")[1]


def test_a_model_without_attention_says_so():
    plain = make_model(attention=False)
    assert not views.vocabulary(plain).facts["attention"]
    with pytest.raises(ValueError, match="no attention"):
        views.alignment(plain, SENTENCE)


def test_measured_bleu_is_sacrebleu_of_greedy_translations(model, folder):
    pairs = __import__("seqviz.seq2seq.checkpoints", fromlist=["load_heldout"]).load_heldout(folder)[:12]
    table = views.measured_bleu(model, 12).data
    hyps = [" ".join(model.tgt_vocab.strings(greedy(model, list(p.src)))) for p in pairs]
    expected = sacrebleu.corpus_bleu(hyps, [[" ".join(p.tgt) for p in pairs]], tokenize="none").score
    assert table.set_index("bucket").loc["all", "bleu"] == pytest.approx(expected, abs=0.01)
    assert table.set_index("bucket").loc["all", "n"] == 12


def test_examples_are_read_from_the_folder_and_none_without_heldout(folder, tmp_path):
    shown = views.examples(str(folder), None)
    assert shown is not None and all(key.split(" units: ")[0].isdigit() for key, _s, _r in shown.facts["examples"])
    assert views.examples(str(tmp_path), None) is None


def test_bottleneck_curves_are_the_cards_tables():
    cards = {"a": {"bleu_by_length": [{"bucket": "1-10", "min_len": 1, "n": 3, "bleu": 40.0, "exact": 0.1},
                                      {"bucket": "all", "min_len": 1, "n": 3, "bleu": 40.0, "exact": 0.1}]},
             "b": {}}
    view = views.bottleneck(cards)
    assert view.data["bleu"].tolist() == [40.0] and view.facts["models"] == ("a",)
    assert views.bleu_table(cards).data.loc["a", "1-10"] == 40.0
    assert views.bottleneck({"b": {}}).chart is None


def test_figure_and_lesson_draw_the_view(model):
    chart, frame, _line = figures.render("attention", model, SENTENCE, temperature=0.5)
    assert frame.equals(views.alignment(model, SENTENCE, 0.5).data)
    lesson = run_view("alignment_map", {"m": model}, {}, SENTENCE, {})
    bar = views.target_weights(model, SENTENCE, target=lesson.numbers["t"] - 1).facts  # the note counts from 1
    assert lesson.numbers["weight"] == pytest.approx(bar["max_weight"]) and lesson.numbers["source"] == bar["source"]
    assert lesson.numbers["j"] == bar["j"] + 1 and lesson.numbers["t"] == bar["t"] + 1


def test_a_transformers_models_head_mean_and_temperature(hf_root):  # noqa: F811
    from seqviz.hf_seq2seq import HFSeq2Seq

    hf = HFSeq2Seq.from_pretrained(hf_root / "tiny-marian")
    text = "the cat sat"
    f = views.translation(hf, text).facts
    trace = views.run(hf, text)["trace"]
    per_head = trace["decoder.cross_attn.weights"][0, f["layers"] - 1].double().numpy()  # [H, T, S]
    n_tgt, n_src = len(f["target"]), len(f["pieces"])
    mean = per_head.mean(0)[:n_tgt, :n_src]
    drawn = views.alignment(hf, text, 2.0).data.pivot(index="t", columns="j", values="weight").to_numpy()
    assert drawn == pytest.approx(softmax(np.log(mean) / 2.0), abs=1e-5)
    one = views.alignment(hf, text, 0.5, layer=0, head=1).data.pivot(index="t", columns="j", values="weight")
    head = trace["decoder.cross_attn.weights"][0, 0, 1].double().numpy()[:n_tgt, :n_src]
    assert one.to_numpy() == pytest.approx(softmax(np.log(head) / 0.5), abs=1e-5)
    grid = views.heads(hf, text, layer=0).data
    assert grid[grid["head"] == 1].pivot(index="t", columns="j", values="weight").to_numpy() == pytest.approx(head)
    assert torch.is_tensor(trace["decoder.cross_attn.weights"])
