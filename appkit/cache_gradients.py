"""Cached gradient-flow computations for pages/gradient_flow.py (keyed on the model's content)."""

from __future__ import annotations

import streamlit as st

from appkit.cache import _load, model_at


def _ids(model, text: str, max_tokens: int):
    import torch

    enc = model.tokenizer.encode(text)
    if len(enc.ids) < 2:
        raise ValueError("the text needs at least two known tokens")
    return torch.tensor([enc.ids[:max_tokens]]), enc


@st.cache_data(max_entries=64, show_spinner="Backpropagating every loss to every earlier step...")
def curves(path: str, key: str, text: str, max_tokens: int, layer: int, wrt: str, edit: tuple = ()):
    """(G matrix, by-distance table, tokens) for one model; ``edit`` = edited_copy/clipped_step args."""
    from seqviz.introspect import gradients as gr

    model = _load(path, key)
    ids, enc = _ids(model, text, max_tokens)
    info = {}
    if edit:
        kind, value = edit
        if kind == "clip":
            lr, clip = value
            step = gr.clipped_step(model, ids, lr=lr, clip=clip)
            model = step.pop("model")
            info = step
        else:
            model = gr.edited_copy(model, **{kind: value})
            info = {"spectrum": gr.recurrent_spectrum(model, layer if layer >= 0 else model.config.n_layers - 1)}
    G = gr.gradient_matrix(model, ids, layer=layer, wrt=wrt)
    return G, gr.by_distance(G), enc.pieces[: ids.shape[1]], info


@st.cache_data(max_entries=64, show_spinner=False)
def forget(path: str, key: str, text: str, max_tokens: int, layer: int):
    from seqviz.introspect import gradients as gr

    model = _load(path, key)
    ids, _ = _ids(model, text, max_tokens)
    return gr.forget_product(model.trace(ids)[f"layers.{layer}.gates.forget"][0])


@st.cache_data(max_entries=64, show_spinner=False)
def connectivity(path: str, key: str, text: str, max_tokens: int, target: int):
    from seqviz.introspect import gradients as gr

    model = _load(path, key)
    ids, _ = _ids(model, text, max_tokens)
    return gr.connectivity(model, ids, target)


@st.cache_data(max_entries=32, show_spinner="Backpropagating through a training snapshot...")
def snapshot_curve(path: str, key: str, step: int, text: str, max_tokens: int):
    from seqviz.introspect import gradients as gr

    model = model_at(path, key, step)
    ids, _ = _ids(model, text, max_tokens)
    return gr.by_distance(gr.gradient_matrix(model, ids))
