"""seqviz.views.decoding against hand loops: a translator's two runs, an injected error, the beam, the held-out set."""

from __future__ import annotations

import math

import pytest
import torch

from seqviz import figures
from seqviz.introspect import exposure as ex
from seqviz.lessons.views import run_view
from seqviz.seq2seq.checkpoints import load_heldout, save_heldout
from seqviz.seq2seq.data import make_splits
from seqviz.seq2seq.model import EOS_ID, NEVER_EMITTED, Seq2Seq
from seqviz.views import decoding as views
from tests.seq2seq.conftest import make_model
from tests.views.test_attention_views import greedy

SRC, REF = "我 昨天 在 公园 吃 了", "i ate in the park yesterday"


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    splits = make_splits("zh-en", 300, 10, 30, seed=0, max_clauses=3)
    root = tmp_path_factory.mktemp("decoding-views") / "zh-en-small-teacher-forcing"
    make_model(seed=1, scale=0.8, pairs=splits.train + splits.test).save_pretrained(root, {"name": "tf", "task": "zh-en"})
    save_heldout(splits.test, root, "zh-en")
    return root


@pytest.fixture(scope="module")
def model(folder):
    return Seq2Seq.from_pretrained(folder)


def logp(model, src: str, prefix: list[int]) -> torch.Tensor:
    """log p(· | src, prefix) at every position of ``prefix`` + <eos>, read teacher-forced; never-emitted ids at -inf."""
    out = torch.log_softmax(model.trace([src], [prefix])["logits"][0].double(), -1)
    out[:, list(NEVER_EMITTED)] = -math.inf
    return out


def levenshtein(a: list, b: list) -> int:
    d = {(i, j): max(i, j) if min(i, j) == 0 else 0 for i in range(len(a) + 1) for j in range(len(b) + 1)}
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i, j] = min(d[i - 1, j] + 1, d[i, j - 1] + 1, d[i - 1, j - 1] + (a[i - 1] != b[j - 1]))
    return d[len(a), len(b)]


def test_the_two_runs_are_a_greedy_loop_and_teacher_forcing_by_hand(model):
    view = views.gold_logprob(model, SRC, REF)
    gold = model.tgt_vocab.encode(REF.split()).ids + [EOS_ID]
    tf = logp(model, SRC, gold[:-1])
    assert view.data["gold_logp_tf"].tolist() == pytest.approx([float(tf[t, g]) for t, g in enumerate(gold)], abs=1e-6)
    own = greedy(model, SRC) + [EOS_ID]
    fr = logp(model, SRC, own[:-1])  # the free-running run's log p are those of its own prefix read back
    shared = min(len(own), len(gold))
    assert view.data["gold_logp_fr"].tolist()[:shared] == pytest.approx(
        [float(fr[t, gold[t]]) for t in range(shared)], abs=1e-6)
    wrong = [t for t in range(len(gold)) if t >= len(own) or own[t] != gold[t]]
    assert view.facts["first_divergence"] == (wrong[0] if wrong else None)
    assert view.facts["wrong_fr"] == len(wrong)
    assert view.facts["free_running"] == " ".join(model.tgt_vocab.strings(own[:-1]))
    assert view.facts["edit_distance"] == levenshtein(model.tgt_vocab.strings(own[:-1]), REF.split())
    assert views.divergence(model, SRC, REF).facts["mean_kl"] >= 0


@pytest.mark.parametrize("k, token", [(2, None), (0, "park"), (4, "<eos>")])
def test_an_injected_error_continues_as_a_greedy_loop_from_the_forced_prefix(model, k, token):
    gold = model.tgt_vocab.encode(REF.split()).ids + [EOS_ID]
    if token is None:  # the model's own second choice at k
        row = logp(model, SRC, gold[:-1])[k].clone()
        row[gold[k]] = -math.inf
        forced = int(row.argmax())
    else:
        forced = model.tgt_vocab.index[token]
    view = views.injection(model, SRC, REF, k, token)
    out = gold[:k] + [forced]
    while out[-1] != EOS_ID and len(out) < model.config.max_target_len:
        row = logp(model, SRC, out)[len(out)]
        out.append(int(row.argmax()))
    emitted, out = out, [t for t in out if t != EOS_ID]  # emitted: with its <eos>, unless it ran to the limit
    assert view.facts["output"] == " ".join(model.tgt_vocab.strings(out))
    assert view.facts["injected"] == model.tgt_vocab.strings([forced])[0]
    assert view.facts["errors_after"] == levenshtein(emitted[k + 1:], gold[k + 1:])  # aligned, as WER counts
    distance = levenshtein(out, gold[:-1])
    assert view.facts["edit_distance"] == distance and view.facts["recovered"] == (distance <= 1)
    assert token is None or token not in views.injectable(model, REF, k).facts["tokens"] or token != REF.split()[k]


def test_a_one_wide_beam_is_greedy(model):
    view = views.beam(model, SRC, REF, 1)
    assert view.facts["best"] == " ".join(model.tgt_vocab.strings(greedy(model, SRC)))
    assert view.facts["shown"] <= view.facts["steps"] and len(view.data)


def test_held_out_error_rates_by_hand_and_read_back_from_exposure_json(model, folder):
    n = 12
    pairs = load_heldout(folder)[:n]
    wrong = total = 0
    for p in pairs:
        gold = model.tgt_vocab.encode(list(p.tgt)).ids + [EOS_ID]
        best = logp(model, list(p.src), gold[:-1]).argmax(-1).tolist()
        wrong += sum(b != g for b, g in zip(best, gold))
        total += len(gold)
    view = views.held_out(model, "by_position", n)
    assert view.facts["tf_token_error"] == pytest.approx(wrong / total)
    assert view.facts["sentences"] == n and len(view.facts["first_errors"]) == n
    assert views.shipped_held_out(str(folder), None, "by_position", n) is None  # nothing shipped yet
    ex.write_study(folder, n=n, strategy_pairs=6)
    try:
        shipped = views.shipped_held_out(str(folder), None, "by_position", n)
        assert shipped.facts == view.facts
        assert views.shipped_strategies(str(folder), None, 6, (1, 2, 4, 8)).data["strategy"].iloc[0] == "greedy"
        assert views.shipped_strategies(str(folder), None, 7, (1, 2, 4, 8)) is None
    finally:
        (folder / "exposure.json").unlink()
    both = views.held_out_compared({"a": view.data, "b": view.data}, "by_position")
    assert both.facts["models"] == ("a", "b") and len(both.data) == 2 * len(view.data)
    summary = views.held_out_summary({"a": view.facts}).data
    assert summary["TF token error"].iloc[0] == view.facts["tf_token_error"]
    menu = views.menu(str(folder), None, view.facts["first_errors"])
    assert all(label.split(":")[0].isdigit() for label, _s, _r in menu.facts["pairs"])


def test_compared_models_figure_and_lesson(model):
    table = views.comparison(model, SRC, REF, (("again", model),), 2).data
    assert table["model"].tolist() == ["again"]
    assert table["free-running output"].iloc[0] == views.gold_logprob(model, SRC, REF).facts["free_running"]
    chart, frame, _line = figures.render("exposure_bias", model, SRC, reference=REF)
    assert frame.equals(views.gold_logprob(model, SRC, REF).data)
    lesson = run_view("injection", {"m": model}, {}, 2, {"source": SRC, "reference": REF})
    assert lesson.numbers["errors"] == views.injection(model, SRC, REF, 2).facts["errors_after"]
