"""Cached work of the exposure-bias page: training snapshots, held-out error matrices, decoding tables.

Keys are (checkpoint path, content key, snapshot step, ...), so a changed folder is never
served from a stale entry; every cache has ``max_entries``.
"""

from __future__ import annotations

import streamlit as st

from appkit import cache


@st.cache_resource(max_entries=8, show_spinner="Loading the training snapshot...")
def model_at(path: str, key: str, step: int | None):
    """The seq2seq model at ``path``, or its snapshot from training step ``step`` (shared, read-only)."""
    if step is None:
        return cache.load_model(path)
    from seqviz.seq2seq.checkpoints import load_seq2seq

    model = load_seq2seq(path, snapshot=step)
    model.source_path, model.source_key = path, key
    model.requires_grad_(False)
    return model.eval()


def snapshots(path: str) -> list[int]:
    from seqviz.checkpoints import list_snapshots

    return list_snapshots(path)


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
