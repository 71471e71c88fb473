"""Checkpoint folders, the plain state-dict format, and refusing anything unsafe or broken.

Hostile files (pickled code, zip tricks, memory bombs ...) are in tests/hardening/test_bad_files.py.
"""

import json
import subprocess

import pytest
import torch
from safetensors.torch import save_file
from torch import nn

import seqviz
from seqviz.checkpoints import CheckpointError, list_snapshots, save_weights
from seqviz.config import LMConfig
from seqviz.data.tokenizers import Tokenizer
from seqviz.registry import load
from seqviz.models.recurrent import RecurrentLM

TEXT = "To be, or not to be, that is the question:\n"


def make_model(cell="lstm"):
    torch.manual_seed(1)
    tok = Tokenizer.train("char", TEXT)
    return RecurrentLM(LMConfig(cell=cell, n_layers=2, d_embed=5, d_hidden=8, vocab_size=len(tok)), tok).eval()


@pytest.mark.parametrize("cell", ["rnn", "gru", "lstm"])
def test_round_trip_gives_identical_trace(tmp_path, cell):
    model = make_model(cell)
    model.save_pretrained(tmp_path / "ck", {"corpus": "test"})
    loaded = seqviz.load(tmp_path / "ck")
    assert loaded.card["corpus"] == "test" and loaded.card["parameters"] == model.num_parameters()
    a, b = model.trace(TEXT), loaded.trace(TEXT)
    for name in a:
        assert torch.equal(a[name].nan_to_num(), b[name].nan_to_num()), name
    assert not any(p.requires_grad for p in loaded.parameters()) and not loaded.training


def test_snapshots_load_by_step(tmp_path):
    model = make_model()
    model.save_pretrained(tmp_path / "ck")
    (tmp_path / "ck" / "snapshots").mkdir()
    save_weights(model, tmp_path / "ck" / "snapshots" / "step-50.safetensors", torch.float16)
    assert list_snapshots(tmp_path / "ck") == [50]
    snap = seqviz.load(tmp_path / "ck", snapshot=50)
    assert torch.allclose(snap.head.weight, model.head.weight.half().float())


class PlainLSTM(nn.Module):
    """What a user writes in plain PyTorch (pytorch/examples style names)."""

    def __init__(self, vocab, emb, hid, layers):
        super().__init__()
        self.encoder = nn.Embedding(vocab, emb)
        self.rnn = nn.LSTM(emb, hid, layers, batch_first=True)
        self.decoder = nn.Linear(hid, vocab)

    def forward(self, ids):
        out, _ = self.rnn(self.encoder(ids))
        return self.decoder(out)


@pytest.mark.parametrize("suffix", [".pt", ".safetensors"])
def test_plain_pytorch_state_dict_loads_and_traces_identically(tmp_path, suffix):
    torch.manual_seed(3)
    vocab = ["\n", " ", "a", "b", "e", "o", "r", "t"]
    plain = PlainLSTM(len(vocab), 6, 10, 2).eval()
    weights = tmp_path / f"lm{suffix}"
    if suffix == ".pt":
        torch.save(plain.state_dict(), weights)
    else:
        save_file({k: v.contiguous() for k, v in plain.state_dict().items()}, str(weights))
    (tmp_path / "lm.json").write_text(json.dumps({"cell": "lstm", "tokenizer": "char", "vocab": vocab}))
    model = load(weights)
    ids = torch.tensor([[2, 3, 4, 1, 5, 6, 0, 7]])
    trace = model.trace(ids)
    with torch.no_grad():
        expected_logits = plain(ids)
        expected_h, _ = plain.rnn(plain.encoder(ids))
    assert torch.allclose(trace["logits"], expected_logits, atol=1e-5)
    assert torch.allclose(trace["layers.1.h"], expected_h, atol=1e-5)
    assert model.trace("tobe or").token_strings == [list("tobe or")]


def write_ok(tmp_path):
    make_model().save_pretrained(tmp_path / "ck")
    return tmp_path / "ck"


def test_broken_checkpoints_name_the_file_and_the_problem(tmp_path):
    ck = write_ok(tmp_path)
    cases = []

    def expect(fragment, mutate):
        folder = tmp_path / f"case{len(cases)}"
        subprocess.run(["cp", "-r", str(ck), str(folder)], check=True)
        mutate(folder)
        with pytest.raises(CheckpointError) as err:
            seqviz.load(folder)
        assert fragment in str(err.value), str(err.value)
        cases.append(str(err.value))

    # No config.json and no vocabulary: the shapes are read, and the one thing they cannot say is asked for.
    expect("the weights say: 2-layer LSTM, hidden 8, embedding 5, 19 tokens. seqviz also needs the 19 tokens",
           lambda f: ((f / "config.json").unlink(), (f / "vocab.json").unlink()))
    expect("model_type is not one seqviz opens", lambda f: (f / "config.json").write_text('{"model_type": "gpt"}'))
    expect("cell must be one of", lambda f: _edit(f / "config.json", cell="mamba"))
    expect("vocab_size=", lambda f: _edit(f / "config.json", vocab_size=999))
    expect("has shape", lambda f: _edit(f / "config.json", d_hidden=9))
    expect("not valid JSON", lambda f: (f / "vocab.json").write_text("{"))
    expect("empty (0 bytes)", lambda f: (f / "model.safetensors").write_bytes(b""))
    expect("not a valid safetensors", lambda f: (f / "model.safetensors").write_bytes(
        (f / "model.safetensors").read_bytes()[:300]))
    expect("NaN or Inf", lambda f: _poison(f / "model.safetensors"))
    expect("not UTF-8", lambda f: (f / "card.json").write_bytes(b"\xff\xfe{"))
    assert len(cases) == 10


def _edit(path, **changes):
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data))


def _poison(path):
    from safetensors.torch import load_file

    tensors = load_file(str(path))
    tensors["head.bias"][0] = float("nan")
    save_file(tensors, str(path))


def test_missing_path_and_weights_that_are_no_language_model(tmp_path):
    with pytest.raises(CheckpointError, match="no such file"):
        seqviz.load(tmp_path / "nope")
    bare = tmp_path / "w.safetensors"
    save_file({"x": torch.zeros(1)}, str(bare))
    with pytest.raises(CheckpointError, match=r"no recurrent layer found.*found x"):
        load(bare)


def test_seqviz_load_reads_a_training_snapshot_and_refuses_one_where_there_are_none(tmp_path):
    from seqviz.registry import load
    from tests.conftest import ROOT, build_tiny_lm, tiny_card

    final, early = build_tiny_lm("gru", seed=1), build_tiny_lm("gru", seed=2)
    final.save_pretrained(tmp_path / "ck", tiny_card(final, "ck"))
    (tmp_path / "ck" / "snapshots").mkdir()
    save_weights(early, tmp_path / "ck" / "snapshots" / "step-7.safetensors")
    got = load(tmp_path / "ck", snapshot=7)
    assert torch.equal(got.head.weight, early.head.weight) and got.card["snapshot"] == 7
    assert torch.equal(load(tmp_path / "ck").head.weight, final.head.weight)
    with pytest.raises(CheckpointError, match="step-8"):
        load(tmp_path / "ck", snapshot=8)
    with pytest.raises(CheckpointError, match="word vectors keep no training snapshots"):
        load(ROOT / "checkpoints" / "word2vec-shakespeare", snapshot=1)
