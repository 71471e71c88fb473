"""Fixtures for the word2vec tests: the shipped skip-gram vectors (skipped where not shipped)."""

from __future__ import annotations

from pathlib import Path

import pytest

SHIPPED = Path(__file__).resolve().parents[2] / "checkpoints"


@pytest.fixture(scope="session")
def shipped_vectors():
    from seqviz.word2vec.formats import load_checkpoint

    folder = SHIPPED / "word2vec-shakespeare"
    if not folder.is_dir():
        pytest.skip(f"{folder} is not shipped in this copy")
    return load_checkpoint(folder)
