"""Cached work of the trajectory and gate pages: snapshot models, traces, fitted projections, corpus statistics.

Every function is keyed by ``(path, key)`` (a model's ``source_path``/``source_key`` from
``appkit.cache``), never by the model object, so cache hits survive reruns and sessions.
Cached objects (models, traces, projections, state indexes) are shared read-only.
"""

from __future__ import annotations

import importlib
import threading

import streamlit as st

from appkit import cache
from appkit.cache import model_at, snapshots  # noqa: F401 - the pages reach them through this module

try:  # Altair's data transformer is process-global; Streamlit switches it under this lock
    from streamlit.elements.vega_charts import _altair_globals_lock as _ALTAIR_LOCK
except ImportError:  # pragma: no cover - a Streamlit without it: at least serialise our own use
    _ALTAIR_LOCK = threading.Lock()

MAX_TOKENS = 1000  # tokens read per text on these pages; longer texts are cut with a notice
MAX_TEXTS = 6  # texts overlaid on one trajectory plot; more are left out with a notice
SEPARATOR = "---"  # a line holding only this separates several texts in one text box
SAMPLE_CHUNKS, SAMPLE_LENGTH = 16, 500  # corpus sample for saturation and the unit finder


def split_texts(raw: str) -> list[str]:
    """Texts separated by a line holding only ``---`` (empty ones dropped)."""
    parts, current = [], []
    for line in (raw or "").split("\n"):
        if line.strip() == SEPARATOR:
            parts.append("\n".join(current))
            current = []
        else:
            current.append(line)
    parts.append("\n".join(current))
    return [p for p in parts if p.strip()]


def read_texts(model, raw: str, limit: int = MAX_TOKENS) -> tuple[list[tuple[int, ...]], list[str]]:
    """Token ids per text (unknown pieces left out, cut at ``limit``) and notices for the user."""
    from seqviz.introspect.language import prepare

    ids, notices, texts = [], [], split_texts(raw)
    if len(texts) > MAX_TEXTS:
        notices.append(f"Only the first {MAX_TEXTS} of {len(texts)} texts are read.")
    for n, text in enumerate(texts[:MAX_TEXTS], start=1):
        kept, _, unknown, truncated = prepare(model.tokenizer, text, limit)
        if unknown:
            notices.append(f"Text {n}: {len(unknown)} piece(s) not in the vocabulary were left out: "
                           + " ".join(repr(u) for u in unknown[:20]))
        if truncated:
            notices.append(f"Text {n} is longer than {limit:,} tokens: the last {truncated:,} were cut.")
        if kept:
            ids.append(tuple(kept))
        else:
            notices.append(f"Text {n} has no token this model knows; it is left out.")
    return ids, notices


@st.cache_resource(max_entries=32, show_spinner=False)
def trace(path: str, key: str, step: int | None, ids: tuple[tuple[int, ...], ...]):
    """``model.trace`` of a batch of id sequences (right-padded), shared read-only."""
    return model_at(path, key, step).trace([list(s) for s in ids])


@st.cache_resource(max_entries=24, show_spinner="Fitting the projection on the reference sample...")
def projection(path: str, key: str, step: int | None, layer: int, method: str, dims: int):
    """A projection of ``layers.{layer}.h`` fitted once on the reference sample and kept."""
    from seqviz.introspect.projection import fit_projection, reference_texts, valid_states

    texts, source = reference_texts()
    model = model_at(path, key, step)
    states = valid_states(model.trace(texts), layer)
    info = {"checkpoint": path, "snapshot": step, "layer": layer, "sample": source}
    return fit_projection(states, method, dims, info=info)


@st.cache_resource(max_entries=8, show_spinner="Reading a corpus sample...")
def sample_trace(path: str, key: str):
    """The model's trace of the corpus sample used for saturation and the unit finder."""
    from seqviz.introspect.projection import reference_texts

    texts, _ = reference_texts(SAMPLE_CHUNKS, SAMPLE_LENGTH)
    return cache.load_model(path).trace(texts)


@st.cache_data(max_entries=8, show_spinner="Counting saturated gates over a corpus sample...")
def saturation(path: str, key: str, lo: float, hi: float):
    """Karpathy-style saturation fractions per unit, gate and layer over the corpus sample."""
    from seqviz.introspect.gates import saturation_counts, saturation_frame

    cfg = cache.load_model(path).config
    return saturation_frame(saturation_counts(sample_trace(path, key), cfg.cell, cfg.n_layers, lo, hi))


@st.cache_data(max_entries=16, show_spinner=False)
def unit_ranking(path: str, key: str, layer: int, signal: str):
    """Every (feature, unit) pair of one signal ranked by |r| over the corpus sample; and N tokens."""
    import pandas as pd

    from seqviz.introspect.gates import row_tokens, signal_key
    from seqviz.introspect.units import rank_units, text_features

    t = sample_trace(path, key)
    values = t[signal_key(layer, signal)][t["mask"]].double().numpy()
    # features per text, so a bracket left open at the end of one chunk does not leak into the next
    features = pd.concat([text_features(row_tokens(t, b)) for b in range(len(t["mask"]))], ignore_index=True)
    return rank_units(values, features, top=None), len(values)


@st.cache_resource(max_entries=2, show_spinner="Reading the whole search text (once per model and layer)...")
def state_index(path: str, key: str, layer: int):
    """h of one layer over the whole held-out corpus, for the pattern search."""
    from seqviz.introspect.projection import corpus_text
    from seqviz.introspect.units import build_state_index

    text, source = corpus_text()
    index = build_state_index(cache.load_model(path), text, layer)
    index.info["source"] = source
    return index


@st.cache_data(max_entries=96, show_spinner=False)
def chart_spec(builder: str, *args, **kwargs) -> dict:
    """``seqviz.charts.<module>.<function>(*args, **kwargs)`` as a Vega-Lite spec, built once per input.

    Building an Altair chart and validating it against the schema costs 0.05-0.3 s per chart
    on a small CPU, whatever its data size (measured); a cached spec costs a rerun only the
    hashing of its inputs. Draw the result with ``st.vega_lite_chart``.
    """
    import altair as alt

    module, name = builder.split(".")
    chart = getattr(importlib.import_module(f"seqviz.charts.{module}"), name)(*args, **kwargs)
    with _ALTAIR_LOCK:
        # Called, not entered: leaving `with disable_max_rows()` restores the registry as it was on
        # entry, dropping a transformer another visitor's st.altair_chart registered meanwhile
        # (Streamlit registers it outside this lock) -> "No 'to_arrow_dataset' entry point found".
        alt.data_transformers.disable_max_rows()
        return chart.to_dict()


@st.cache_data(max_entries=64, show_spinner=False)
def trajectory(path: str, key: str, step: int | None, space_step: int | None, layer: int, method: str,
               dims: int, ids: tuple[tuple[int, ...], ...]):
    """Projected trajectory frame of ``ids`` read by the model at ``step``, in the space fitted at ``space_step``."""
    from seqviz.introspect.projection import trajectory_frame

    return trajectory_frame(trace(path, key, step, ids), projection(path, key, space_step, layer, method, dims), layer)

