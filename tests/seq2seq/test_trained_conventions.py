"""Trained modules of the two most copied seq2seq codes, saved with their vocabularies and no spec field else.

The task: read three or four digits, write them reversed ("3 1 4" -> "4 1 3"). bentrevett's notebook 1 (a
2-layer LSTM encoder-decoder, ``plain_layouts.Bentrevett(1)``) is trained on <sos> x <eos> sources with
torchtext's specials; the PyTorch tutorial's EncoderRNN + AttnDecoderRNN on x EOS with its Lang's SOS = 0,
EOS = 1. Trained briefly, so the logits mean something: a wrong framing then costs far more than rounding.
"""

from __future__ import annotations

import itertools
import json
import random

import pytest
import torch
from torch import nn

import seqviz
from seqviz.introspect import exposure as ex
from seqviz.seq2seq.framing import check_framing
from seqviz.views.pairs import tokenized
from tests.seq2seq.plain_layouts import Bentrevett, Tutorial

BEN = ["<unk>", "<pad>", "<sos>", "<eos>", *"0123456789"]
TUT = ["SOS", "EOS", *"0123456789"]
TESTS = ["3 1 4", "2 7 1 8", "9 0 5", "6 6 2 4", "8 5 3"]  # five sentences, each decoded both ways


def pairs(lengths=(3, 4)) -> list[tuple[str, str]]:
    out = [(" ".join(w), " ".join(reversed(w))) for n in lengths for w in itertools.product("0123456789", repeat=n)]
    random.Random(0).shuffle(out)
    return out


def _train(module, vocab, frame, step_fn, steps, batch=64):
    """Teacher-forced Adam on batches of one length; ``frame(ids)`` is the source as the user's code frames it."""
    torch.manual_seed(0)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small matrices: one thread is the fastest, and the machine is shared
    optim = torch.optim.Adam(module.parameters(), lr=0.01)
    data = {n: [(frame([vocab.index(t) for t in s.split()]), [vocab.index(t) for t in g.split()])
                for s, g in pairs((n,))] for n in (3, 4)}
    for step in range(steps):
        rows = data[3 + step % 2][(step // 2 * batch) % 1000:][:batch]
        src, tgt = torch.tensor([s for s, _ in rows]), torch.tensor([t for _, t in rows])
        loss = step_fn(src, tgt)
        optim.zero_grad()
        loss.backward()
        optim.step()
    torch.set_num_threads(threads)
    return module.eval()


@pytest.fixture(scope="module")
def bentrevett(tmp_path_factory):
    torch.manual_seed(0)  # the initial weights too: the trained model is the same whichever tests ran before
    module = Bentrevett(1, len(BEN), len(BEN), emb=16, hid=32, layers=2)
    sos, eos = BEN.index("<sos>"), BEN.index("<eos>")

    def step(src, tgt):  # sequence first, as the notebook
        hidden, cell = module.encoder(src.T)
        inputs = torch.cat([torch.full((len(tgt), 1), sos), tgt], 1).T
        gold = torch.cat([tgt, torch.full((len(tgt), 1), eos)], 1).T
        logits = []
        for t in range(inputs.shape[0]):
            out, hidden, cell = module.decoder(inputs[t], hidden, cell)
            logits.append(out)
        return nn.functional.cross_entropy(torch.stack(logits).reshape(-1, len(BEN)), gold.reshape(-1))

    _train(module, BEN, lambda ids: [sos] + ids + [eos], step, steps=120)
    folder = tmp_path_factory.mktemp("ben")
    torch.save(module.state_dict(), folder / "model.pt")
    for side in ("source", "target"):  # the vocabularies beside the weights, nothing else said
        (folder / f"{side}_vocab.json").write_text(json.dumps(BEN))
    return module, folder


@pytest.fixture(scope="module")
def tutorial(tmp_path_factory):
    torch.manual_seed(0)  # the initial weights too: the trained model is the same whichever tests ran before
    module = Tutorial(len(TUT), len(TUT), 32, attention=True)

    def step(src, tgt):
        outputs, hidden = module.encoder(src)
        inputs = torch.cat([torch.zeros(len(tgt), 1, dtype=torch.long), tgt], 1)
        gold = torch.cat([tgt, torch.ones(len(tgt), 1, dtype=torch.long)], 1)
        logits = []
        for t in range(inputs.shape[1]):
            out, hidden, _w = module.decoder.forward_step(inputs[:, t: t + 1], hidden, outputs)
            logits.append(out[:, 0])
        return nn.functional.cross_entropy(torch.stack(logits, 1).reshape(-1, len(TUT)), gold.reshape(-1))

    _train(module, TUT, lambda ids: ids + [1], step, steps=200)
    folder = tmp_path_factory.mktemp("tut")
    torch.save(module.encoder.state_dict(), folder / "encoder.pt")
    torch.save(module.decoder.state_dict(), folder / "decoder.pt")
    (folder / "spec.json").write_text(json.dumps({"source_vocab": TUT, "target_vocab": TUT}))
    return module, folder


def _agreement(module, model, vocab, frame, sos, eos, banned):
    """(max |Δlogit| teacher-forced on the reversal, greedy outputs equal to the module's) over ``TESTS``."""
    inverse = [model.tgt_vocab.user_ids.index(u) for u in range(len(vocab))]
    worst, same = 0.0, 0
    for s in TESTS:
        src = frame([vocab.index(t) for t in s.split()])
        gold = [vocab.index(t) for t in reversed(s.split())] + [eos]
        with torch.no_grad():
            logits, _w, _c = module.run(src, gold, len(gold), sos)
            _l, _w, chosen = module.run(src, None, 8, sos, banned)
        tr = model.trace([s], [" ".join(reversed(s.split()))])
        worst = max(worst, float((tr["logits"][0, :len(gold)][:, inverse] - logits).abs().max()))
        mine = chosen[: chosen.index(eos)] if eos in chosen else chosen
        ids, _ = model.translate([s], max_len=8)
        same += [model.tgt_vocab.user_ids[i] for i in ids[0]] == mine
    return worst, same


def test_bentrevett_with_only_its_vocabularies_decodes_as_its_module(bentrevett, tmp_path):
    module, folder = bentrevett
    sos, eos, pad = BEN.index("<sos>"), BEN.index("<eos>"), BEN.index("<pad>")
    model = seqviz.load(folder / "model.pt")
    assert model.config.layout == "bentrevett-1" and model.conventions["source_bos"].origin == "layout"
    worst, same = _agreement(module, model, BEN, lambda ids: [sos] + ids + [eos], sos, eos, [sos, pad])
    print(f"bentrevett-1, conventions from the layout: max|Δlogit| {worst:.1e}, greedy {same}/5")
    assert worst < 1e-5 and same == 5
    (folder / "model.json").write_text(json.dumps({"source_bos": False}))  # what seqviz did before: no <sos>
    try:
        before = seqviz.load(folder / "model.pt")
        worst_before, same_before = _agreement(module, before, BEN, lambda ids: [sos] + ids + [eos], sos, eos,
                                               [sos, pad])
    finally:
        (folder / "model.json").unlink()
    print(f"bentrevett-1 without <sos>: max|Δlogit| {worst_before:.2f}, greedy {same_before}/5")
    assert worst_before > 0.1


def test_the_pairs_check_picks_the_framing_the_model_was_trained_with(bentrevett):
    module, folder = bentrevett
    given = tuple(pairs((3, 4))[:100])
    model = seqviz.load(folder / "model.pt")
    check = check_framing(model, tokenized(model, given).pairs)
    assert check.best.label == "<sos> … <eos>" and check.chosen == check.best and not check.worse
    costs = {f.label: f.nats for f in check.framings}
    print("bentrevett-1 framings, nats/token:", {k: round(v, 3) for k, v in costs.items()})
    assert set(costs) == {"<sos> … <eos>", "… <eos>", "<sos> …", "…"}
    (folder / "model.json").write_text(json.dumps({"source_bos": False}))
    try:
        forced = seqviz.load(folder / "model.pt")
    finally:
        (folder / "model.json").unlink()
    check = check_framing(forced, tokenized(forced, given).pairs)
    assert check.best.label == "<sos> … <eos>" and check.chosen.label == "… <eos>" and check.worse
    assert check.fields == {"source_bos": True} and check.origin["source_bos"] == "spec"
    assert check.gap == pytest.approx(costs["… <eos>"] - costs["<sos> … <eos>"]) and check.gap > 3 * check.se
    few = check_framing(forced, tokenized(forced, given[:10]).pairs)  # a few typed sentences and their references
    assert few.pairs == 10 and few.best.label == "<sos> … <eos>"


def test_the_tutorial_on_digits_decodes_as_its_module_and_a_perfect_translation_counts_no_edit(tutorial):
    module, folder = tutorial
    model = seqviz.load(folder)
    assert model.config.layout == "pytorch-tutorial-attention" and model.src_vocab.kind == "word"
    worst, same = _agreement(module, model, TUT, lambda ids: ids + [1], 0, 1, [0])
    print(f"tutorial on digits: max|Δlogit| {worst:.1e}, greedy {same}/5")
    assert worst < 1e-5 and same == 5
    ids, _ = model.translate(["3 1 4"])
    assert model.tgt_vocab.strings(ids[0]) == ["4", "1", "3"]  # trained enough to be right here
    run = ex.compare_translation(model, "3 1 4", "4 1 3")
    assert run["free_running"] == ["4", "1", "3"] and run["edit_distance"] == 0 and run["first_divergence"] is None
    assert "EOS" not in ex.injection_choices(model, ["4", "1", "3"], 3)
