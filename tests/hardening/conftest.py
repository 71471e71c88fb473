"""A checkpoint root for the hardening tests: the tiny random LMs plus the shipped word2vec and seq2seq.

Tiny language models keep every page fast; the shipped word-vector and translation folders (linked,
not copied) give the word2vec and attention pages a real model.
"""

from __future__ import annotations

import pytest

from tests.conftest import ROOT

SHIPPED = ("word2vec-shakespeare", "zh-en-attention-gru", "zh-en-noattention-gru")


@pytest.fixture(scope="session")
def hardening_root(tiny_lm_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("hardening-checkpoints")
    for folder in sorted(tiny_lm_dir.iterdir()):
        (root / folder.name).symlink_to(folder, target_is_directory=True)
    for name in SHIPPED:
        if (ROOT / "checkpoints" / name).is_dir():
            (root / name).symlink_to(ROOT / "checkpoints" / name, target_is_directory=True)
    return root
