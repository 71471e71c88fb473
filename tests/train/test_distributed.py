"""Training under torchrun: 2 processes (gloo, CPU) take the steps 1 process takes on the same global batch
(language model: fresh and resumed; seq2seq: fresh).

Tolerance, measured on a 2-core CPU: per-step losses agree to the 4 decimals the card
stores, weights to ~3e-6 after 8 Adam steps at lr 1e-2 (float32 reductions in a different
order: the batch mean vs the mean of two half-batch means). The test allows 5e-4 on
losses and 1e-4 on weights, two orders of magnitude under one Adam step (lr = 1e-2).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file

import seqviz
from seqviz.cli import main
from tests.conftest import ROOT

TEXT = ("First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n"
        "Second Citizen:\nWould you proceed especially against Caius Marcius?\n") * 30
ARGS = ["--cell", "gru", "--layers", "1", "--embed", "8", "--hidden", "24", "--steps", "8", "--batch-size", "4",
        "--seq-len", "16", "--lr", "0.01", "--eval-every", "1", "--device", "cpu", "--threads", "1"]
LOSS_TOL, WEIGHT_TOL = 5e-4, 1e-4


def torchrun(*args, cwd=ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
               "-m", "seqviz", "train", "lm", *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def card(folder) -> dict:
    return json.loads((folder / "card.json").read_text())


def assert_same_run(one, two):
    a, b = card(one), card(two)
    assert [h["step"] for h in a["history"]] == [h["step"] for h in b["history"]] == list(range(1, 9))
    for x, y in zip(a["history"], b["history"]):
        assert x["train_loss"] == pytest.approx(y["train_loss"], abs=LOSS_TOL)
        assert x["val_loss"] == pytest.approx(y["val_loss"], abs=LOSS_TOL)
    assert a["history"][-1]["train_loss"] < a["history"][0]["train_loss"] - 0.1  # it did train
    wa, wb = load_file(str(one / "model.safetensors")), load_file(str(two / "model.safetensors"))
    assert wa.keys() == wb.keys()
    assert max((wa[k] - wb[k]).abs().max().item() for k in wa) < WEIGHT_TOL
    return a, b


@pytest.fixture(scope="module")
def corpus_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("ddp") / "citizens.txt"
    path.write_text(TEXT)
    return path


def test_two_processes_match_one_and_write_the_same_checkpoint(corpus_file, tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    assert main(["train", "lm", "--corpus", str(corpus_file), *ARGS, "--out", str(one)]) == 0
    run = torchrun("--corpus", str(corpus_file), *ARGS, "--out", str(two))
    assert run.returncode == 0, run.stderr[-2000:]
    a, b = assert_same_run(one, two)
    assert a["world_size"] == 1 and b["world_size"] == 2
    assert "x 2 processes (DistributedDataParallel, gloo)" in b["device"]
    assert b["tokens_seen"] == a["tokens_seen"] == 8 * 4 * 16
    assert sorted(p.name for p in one.iterdir()) == sorted(p.name for p in two.iterdir())
    model = seqviz.load(two)
    assert model.card["world_size"] == 2
    ids = torch.tensor([model.tokenizer.encode("Speak, speak.").ids])
    assert torch.isfinite(model(ids)[0]).all()


def test_two_processes_resume_what_one_process_saved(corpus_file, tmp_path, monkeypatch):
    """Interrupted at step 6 (progress saved at step 4): 1 and 2 processes finish it the same way."""
    from seqviz.train import lm

    args = [*ARGS[:-6], "--eval-every", "4", *ARGS[-4:]]  # progress saved at steps 4 and 8
    real = lm.train_lm

    def stop(event, info):
        if event == "step" and info["step"] == 6:
            raise KeyboardInterrupt

    monkeypatch.setattr(lm, "train_lm", lambda *a, **k: real(*a, **{**k, "callback": stop}))
    with pytest.raises(KeyboardInterrupt):
        main(["train", "lm", "--corpus", str(corpus_file), *args, "--out", str(tmp_path / "one")])
    monkeypatch.undo()
    assert json.loads((tmp_path / "one" / "train_state.json").read_text())["step"] == 4
    shutil.copytree(tmp_path / "one", tmp_path / "two")
    assert main(["train", "lm", "--corpus", str(corpus_file), *args, "--resume", "--out", str(tmp_path / "one")]) == 0
    run = torchrun("--corpus", str(corpus_file), *args, "--resume", "--out", str(tmp_path / "two"))
    assert run.returncode == 0, run.stderr[-2000:]
    a, b = card(tmp_path / "one"), card(tmp_path / "two")
    assert [h["step"] for h in a["history"]] == [h["step"] for h in b["history"]] == [4, 8]
    assert b["history"][1]["train_loss"] == pytest.approx(a["history"][1]["train_loss"], abs=LOSS_TOL)
    assert b["val_loss"] == pytest.approx(a["val_loss"], abs=LOSS_TOL)
    assert a["world_size"] == 1 and b["world_size"] == 2
    wa = load_file(str(tmp_path / "one" / "model.safetensors"))
    wb = load_file(str(tmp_path / "two" / "model.safetensors"))
    assert max((wa[k] - wb[k]).abs().max().item() for k in wa) < WEIGHT_TOL
    assert not (tmp_path / "two" / "train_state.json").exists()


def test_seq2seq_two_processes_match_one(tmp_path):
    """Each rank takes every other pair of the same batch; the loss is normalised by the whole batch."""
    args = ["--task", "dates", "--train-pairs", "64", "--test-pairs", "16", "--steps", "6", "--batch-size", "8",
            "--embed", "8", "--encoder", "8", "--decoder", "8", "--attention-size", "8", "--dropout", "0",
            "--eval-every", "1", "--lr", "0.01", "--device", "cpu", "--threads", "1"]
    one, two = tmp_path / "one", tmp_path / "two"
    assert main(["train", "seq2seq", *args, "--out", str(one)]) == 0
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
                          "-m", "seqviz", "train", "seq2seq", *args, "--out", str(two)],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    a, b = card(one), card(two)
    assert [h["step"] for h in b["history"]] == list(range(1, 7)) and b["world_size"] == 2
    for x, y in zip(a["history"], b["history"]):
        assert x["train_loss"] == pytest.approx(y["train_loss"], abs=LOSS_TOL)
        assert x["val_loss"] == pytest.approx(y["val_loss"], abs=LOSS_TOL)
    wa, wb = load_file(str(one / "model.safetensors")), load_file(str(two / "model.safetensors"))
    assert max((wa[k] - wb[k]).abs().max().item() for k in wa) < WEIGHT_TOL
    assert b["test_bleu"] == a["test_bleu"] and b["pairs_seen"] == a["pairs_seen"] == 6 * 8
    assert seqviz.load(two).card["world_size"] == 2
