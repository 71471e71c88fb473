"""seqviz's own Seq2Seq saved in bentrevett's layout: bentrevett's module loads it strictly, seqviz.load reopens it,
and all three give the same logits."""

from __future__ import annotations

import torch
from safetensors.torch import load_file

import seqviz
from seqviz.seq2seq.config import Seq2SeqConfig
from seqviz.seq2seq.model import Seq2Seq
from seqviz.seq2seq.plain_export import save_plain_layout
from seqviz.seq2seq.vocab import BOS_ID, EOS_ID
from tests.seq2seq.conftest import make_model
from tests.seq2seq.plain_layouts import Bentrevett, randomize

SENTENCE = "我 昨天 在 公园 吃 了"


def test_the_round_trip_traces_like_the_original(tmp_path):
    for cell, attention, bidirectional in (("gru", True, True), ("lstm", False, True), ("gru", True, False)):
        model = make_model(cell=cell, attention=attention, bidirectional=bidirectional)
        folder = save_plain_layout(model, tmp_path / f"{cell}-{attention}-{bidirectional}")
        again = seqviz.load(folder)
        assert again.config.score == ("additive" if attention else None) and again.config.cell == cell
        assert again.tgt_vocab.tokens == model.tgt_vocab.tokens and again.tgt_vocab.user_ids == list(
            range(len(model.tgt_vocab)))
        mine, theirs = model.trace(SENTENCE, "I ate"), again.trace(SENTENCE, "I ate")
        assert torch.allclose(mine["logits"], theirs["logits"], atol=1e-5), (cell, attention, bidirectional)
        if attention:
            assert torch.allclose(mine["decoder.attn.weights"], theirs["decoder.attn.weights"], atol=1e-5)
        assert model.translate(SENTENCE)[0] == again.translate(SENTENCE)[0]
    assert seqviz.load(tmp_path / "gru-True-True").config.layout == "bentrevett-3"


def test_bentrevetts_own_module_loads_the_file_strictly_and_agrees(tmp_path):
    base = make_model()
    cfg = Seq2SeqConfig(d_embed=6, d_encoder=5, d_decoder=7, d_attention=7, src_vocab_size=len(base.src_vocab),
                        tgt_vocab_size=len(base.tgt_vocab), max_target_len=20)  # bentrevett: attention size = D
    model = randomize(Seq2Seq(cfg, base.src_vocab, base.tgt_vocab), 1, scale=0.5)
    folder = save_plain_layout(model, tmp_path / "b3")
    theirs = Bentrevett(3, cfg.src_vocab_size, cfg.tgt_vocab_size, emb=6, hid=5).eval()
    theirs.load_state_dict(load_file(str(folder / "model.safetensors")))  # strict: every name and shape
    src = model.src_vocab.encode(SENTENCE).ids
    gold = model.tgt_vocab.encode("I ate").ids + [EOS_ID]
    with torch.no_grad():
        logits, weights, _ = theirs.run(src, gold, len(gold), BOS_ID)
    trace = model.trace(SENTENCE, "I ate")
    assert torch.allclose(trace["logits"][0], logits, atol=1e-5)
    assert torch.allclose(trace["decoder.attn.weights"][0], weights, atol=1e-5)


def test_train_seq2seq_can_also_save_the_layout(tmp_path):
    from seqviz.cli import main

    out = tmp_path / "tiny"
    code = main(["train", "seq2seq", "--steps", "2", "--batch-size", "8", "--train-pairs", "32", "--test-pairs", "8",
                 "--eval-every", "1", "--max-clauses", "2", "--embed", "6", "--encoder", "5", "--decoder", "7",
                 "--attention-size", "4", "--device", "cpu", "--out", str(out), "--save-layout", "bentrevett"])
    assert code == 0
    original, plain = seqviz.load(out), seqviz.load(out / "bentrevett-layout")
    assert torch.allclose(original.trace(SENTENCE)["logits"], plain.trace(SENTENCE)["logits"], atol=1e-5)
