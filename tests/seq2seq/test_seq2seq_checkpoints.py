"""Seq2seq checkpoint folders: round trip, dispatch through seqviz.load, clear refusals, training end to end."""

import json

import pytest
import torch

from seqviz.checkpoints import CheckpointError
from seqviz.registry import FAMILIES, load
from seqviz.seq2seq.model import Seq2Seq
from seqviz.seq2seq.config import Seq2SeqConfig
from seqviz.seq2seq.train import Seq2SeqTrainConfig, train_seq2seq


@pytest.mark.parametrize("cell,attention", [("gru", True), ("lstm", False)])
def test_save_load_round_trip_gives_the_same_trace(tmp_path, make_model, pairs, cell, attention):
    model = make_model(cell, attention)
    model.save_pretrained(tmp_path / "m", {"note": "test"})
    config = json.loads((tmp_path / "m" / "config.json").read_text())
    assert config["model_type"] == "seq2seq" and config["cell"] == cell
    loaded = load(tmp_path / "m")
    assert FAMILIES["seq2seq"].cls.from_pretrained.__func__ is type(loaded).from_pretrained.__func__ and loaded.model_type == "seq2seq"
    assert loaded.config == model.config and loaded.card["note"] == "test"
    assert loaded.src_vocab.tokens == model.src_vocab.tokens and not loaded.training
    assert all(not p.requires_grad for p in loaded.parameters())
    src, tgt = [list(p.src) for p in pairs[:3]], [list(p.tgt) for p in pairs[:3]]
    a, b = model.trace(src, tgt=tgt), loaded.trace(src, tgt=tgt)
    for name in a:
        assert torch.allclose(torch.nan_to_num(a[name].float()), torch.nan_to_num(b[name].float()), atol=1e-6), name


def test_broken_folders_are_refused_with_the_file_named(tmp_path, make_model):
    folder = make_model().save_pretrained(tmp_path / "m", {})
    (folder / "tgt_vocab.json").write_text(json.dumps({"kind": "unit", "tokens": ["<pad>", "<unk>", "<bos>", "<eos>"]}))
    with pytest.raises(CheckpointError, match="tgt_vocab.json.*target vocabulary has 4 tokens"):
        Seq2Seq.from_pretrained(folder)
    folder = make_model().save_pretrained(tmp_path / "n", {})
    cfg = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**cfg, "cell": "transformer"}))
    with pytest.raises(CheckpointError, match="invalid config"):
        load(folder)
    folder = make_model().save_pretrained(tmp_path / "o", {})
    (folder / "model.safetensors").write_bytes(b"not weights")
    with pytest.raises(CheckpointError, match="model.safetensors"):
        Seq2Seq.from_pretrained(folder)


def test_training_writes_a_loadable_folder_with_bleu_by_length(tmp_path):
    events = []
    cfg = Seq2SeqConfig(d_embed=8, d_encoder=8, d_decoder=12, d_attention=6, src_vocab_size=1, tgt_vocab_size=4)
    train = Seq2SeqTrainConfig(task="dates", n_train=200, n_valid=20, n_test=40, steps=6, batch_size=16,
                               eval_every=3, snapshot_steps=(3,), scheduled_sampling=2.0)
    train_seq2seq(cfg, train, tmp_path / "d", callback=lambda e, i: events.append(e))
    assert events.count("eval") == 2 and events.count("snapshot") == 1 and events[-1] == "done"
    model = load(tmp_path / "d")
    card = model.card
    assert card["task"] == "dates" and card["training_steps"] == 6
    assert card["bleu_by_length"][-1]["bucket"] == "all" and card["bleu_by_length"][-1]["n"] == 40
    assert "scheduled sampling" in card["training"]
    snap = Seq2Seq.from_pretrained(tmp_path / "d", snapshot=3)
    assert snap.card["snapshot"] == 3
    assert not torch.equal(snap.out.weight, model.out.weight)


def test_cli_refuses_bad_settings_with_exit_code_2(tmp_path, capsys):
    from seqviz.cli import main

    assert main(["train", "seq2seq", "--dropout", "1.5", "--out", str(tmp_path / "x")]) == 2
    assert "dropout must be in [0, 1)" in capsys.readouterr().out
    assert main(["train", "seq2seq", "--steps", "0", "--out", str(tmp_path / "x")]) == 2
    assert not (tmp_path / "x").exists()
