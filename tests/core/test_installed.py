"""Shipped checkpoints by name from any folder, a missing relative path said to be missing here before the Hub,
and the command ``seqviz app`` runs (seqviz/installed.py, seqviz/hub.py, seqviz/serve.py)."""

from __future__ import annotations

import argparse
import os
import sys

import pytest

from seqviz.checkpoints import CheckpointError
from seqviz.hub import resolve
from seqviz.installed import dashboard, names, shipped
from seqviz.serve import command
from tests.conftest import ROOT


def test_shipped_names_resolve_from_any_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert {"shakespeare-char-lstm", "zh-en-attention-gru"} <= set(names())
    assert resolve("shakespeare-char-lstm") == ROOT / "checkpoints" / "shakespeare-char-lstm"
    assert resolve("checkpoints/zh-en-attention-gru") == ROOT / "checkpoints" / "zh-en-attention-gru"
    assert shipped("elsewhere/zh-en-attention-gru") is None and shipped("..") is None and shipped("") is None
    (tmp_path / "shakespeare-char-lstm").mkdir()  # a folder here wins over the shipped name
    assert resolve("shakespeare-char-lstm").resolve() == tmp_path.resolve() / "shakespeare-char-lstm"


def test_a_missing_relative_path_is_no_folder_here_before_anything_about_the_hub(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SEQVIZ_HUB", "0")
    with pytest.raises(CheckpointError, match=r"no such file or folder here; as a Hugging Face Hub id: the Hub"):
        resolve("checkpoints/no-such-model")
    with pytest.raises(CheckpointError, match=r"no such file or folder here$"):
        resolve("no-such-model")


def test_seqviz_app_runs_streamlit_on_the_dashboard_with_your_folders_first(tmp_path, monkeypatch):
    monkeypatch.delenv("SEQVIZ_CHECKPOINTS", raising=False)
    cmd, env = command(argparse.Namespace(checkpoints=[str(tmp_path)]), ["--server.port", "8502"])
    assert cmd == [sys.executable, "-m", "streamlit", "run", str(dashboard() / "app.py"), "--server.port", "8502"]
    assert env["SEQVIZ_CHECKPOINTS"].split(os.pathsep) == [str(tmp_path.resolve()), str(ROOT / "checkpoints")]
    assert (dashboard() / ".streamlit" / "config.toml").is_file()  # read by Streamlit as the script's own config
    with pytest.raises(SystemExit, match="no such folder"):
        command(argparse.Namespace(checkpoints=[str(tmp_path / "nope")]), [])
