"""Cached work of the exposure-bias page: training snapshots, held-out error matrices, decoding tables.

Keys are (checkpoint path, content key, snapshot step, ...), so a changed folder is never
served from a stale entry; every cache has ``max_entries``.
"""

from __future__ import annotations

import streamlit as st

from appkit import cache
from appkit.cache import model_at, snapshots  # noqa: F401 - the pages reach them through this module


def key_of(path: str) -> str:
    from pathlib import Path

    return cache.content_key(Path(path))


@st.cache_data(max_entries=16, show_spinner=False)
def heldout(path: str, key: str):
    from seqviz.seq2seq.checkpoints import load_heldout

    return load_heldout(path)


@st.cache_data(max_entries=32, show_spinner="Decoding the held-out set teacher-forced and free-running...")
def dataset_view(path: str, key: str, step: int | None, n: int) -> dict:
    """Error curves and the summary of one model (or snapshot) on its first ``n`` held-out pairs."""
    from seqviz.introspect import exposure as ex

    pairs = heldout(path, key)[:n]
    errors = ex.error_matrices(model_at(path, key, step), pairs)
    return {"by_position": ex.error_by_position(errors), "after": ex.after_first_error(errors),
            "matrix": ex.conditional_matrix(errors), "summary": ex.summary(errors),
            "first_errors": ex.first_errors(errors)}


@st.cache_data(max_entries=16, show_spinner="Decoding with greedy, beam search and sampling...")
def strategies(path: str, key: str, step: int | None, n: int, ks: tuple[int, ...]):
    from seqviz.decoding import strategy_table

    return strategy_table(model_at(path, key, step), heldout(path, key)[:n], ks=ks)


def same_task(path: str, task) -> list:
    """The other shipped seq2seq checkpoints trained on ``task`` (the candidates to compare with)."""
    return [c for c in cache.list_checkpoints("seq2seq") if c.card.get("task") == task and c.path != path]


def stage_of(path: str, step: int | None) -> int | None:
    """``step`` if that checkpoint kept a snapshot there, else None (its final weights)."""
    return step if step in snapshots(path) else None
