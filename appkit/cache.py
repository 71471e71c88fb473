"""The app's only caches: the checkpoint catalogue, shared read-only models, their views, lessons' and exports' files.

Every cached function takes a ``ModelRef`` (seqviz.refs) or plain values and calls one library function. Models
are ``st.cache_resource`` singletons shared by every visitor, so nothing here mutates them: ``seqviz.load``
returns them in eval mode without gradients, and no attribute, hook or training is added. Every cache has
``max_entries``. torch is imported lazily (inside the loaders), so pages without a model start fast.
"""

from __future__ import annotations

import contextlib
import functools
import json
import time
import weakref
from pathlib import Path

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from appkit.draw import ALTAIR_LOCK, arrow
from appkit.i18n import N_, _, current_language, language
from seqviz import background
from seqviz.refs import Info, ModelRef, checkpoint_roots, listing_key, scan
from seqviz.views.spec import Drawn

# Networks held at once across all sessions: the 11 shipped ones (~40 MB together) and a few snapshots or visitors'
# own. Evicting one drops what was computed on it (seqviz.views.memo): with 8, a visit of every page pushed the LMs
# out, and the Gradient flow page's Tokens slider recomputed its six G's.
MAX_MODELS = 16
MAX_VECTORS = 2  # word-vector sets held at once (a 100k x 300 file takes ~120 MB: unit rows are normalised as read)
try:  # True while a cached function computes: a spinner there would only repeat the outer one's
    from streamlit.runtime.caching.cache_utils import in_cached_function as _IN_CACHED
except ImportError:  # pragma: no cover - a Streamlit without it: always show ours
    _IN_CACHED = None


def cached(kind, spinner: str | None = None, **options):
    """``kind`` (``st.cache_data`` / ``st.cache_resource``) with ``options``, showing ``spinner`` (marked ``N_``) on a
    cache miss in the visitor's language. A cache's own ``show_spinner`` text is fixed at import, before any session
    has a language: the translated text travels as ``_spin`` instead (left out of the key, as every argument named
    with a leading underscore). No spinner inside another cached function or on the worker."""
    def decorate(func):
        @functools.wraps(func)  # the cache keys on func's name, source and signature (``_data`` stays unhashed)
        def body(*args, _spin: str | None = None, **kwargs):
            if _spin is None:
                return func(*args, **kwargs)
            with st.spinner(_spin):
                return func(*args, **kwargs)

        cache = kind(show_spinner=False, **options)(body)

        @functools.wraps(func)
        def call(*args, **kwargs):
            nested = _IN_CACHED is not None and _IN_CACHED.get() or get_script_run_ctx(suppress_warning=True) is None
            return cache(*args, _spin=None if nested or spinner is None else _(spinner), **kwargs)

        call.clear = cache.clear
        return call

    return decorate


def complete(fn, *args) -> None:
    """Compute ``fn(*args)`` on the background worker once the server is idle (``background.when_idle``): the one
    computation a shown view is a slice of, so a control's next value is sliced, not computed. The library memoises
    it per model; a task not started when the next run begins is cancelled (``app.py``)."""
    background.when_idle(fn, *args)


# ------------------------------------------------------------------ the catalogue of shipped checkpoints
@st.cache_data(max_entries=4, show_spinner=False)
def _catalogue(roots: tuple[str, ...], fingerprint: tuple) -> dict:
    return scan(roots)


def list_checkpoints(model_type: str | None = None, roots=None) -> list:
    """Shipped checkpoints (``seqviz.refs.Shipped``) under ``roots`` (default: checkpoint_roots()), all of them
    or those opening on the pages of ``model_type``."""
    roots = checkpoint_roots() if roots is None else [Path(r) for r in roots]
    return list(_catalogue(tuple(map(str, roots)), listing_key(roots)).get(model_type, []))


# ------------------------------------------------------------------ models
@contextlib.contextmanager
def _progress_bar(after: float = 1.0):
    """``progress(fraction)`` for a vector file's load: a bar once it has taken ``after`` seconds, gone at the end.
    Made inside the cached function, as a cache hit's replay needs, and only when needed."""
    start, bar = time.perf_counter(), []

    def progress(done: float) -> None:
        if not bar and time.perf_counter() - start > after:
            bar.append(st.progress(0.0))
        if bar:
            bar[0].progress(min(max(float(done), 0.0), 1.0))

    try:
        yield progress
    finally:
        if bar:
            bar[0].empty()


@cached(st.cache_resource, N_("Loading checkpoint..."), max_entries=MAX_MODELS)
def _network(ref: ModelRef):
    return ref.load()


@cached(st.cache_resource, N_("Reading the word vectors..."), max_entries=MAX_VECTORS)
def _vectors(ref: ModelRef):
    with _progress_bar() as progress:
        return ref.load(progress=progress)


def model(ref: ModelRef):
    """``seqviz.load`` of the ref, once per content and shared read-only (CheckpointError for bad files)."""
    return (_vectors if ref.row is not None and ref.row.accepts_limit else _network)(ref)


@cached(st.cache_resource, N_("Reading the vector file..."), max_entries=MAX_VECTORS)
def uploaded_vectors(digest: str, _data: bytes, name: str, limit: int | None):
    """``seqviz.word2vec.formats.load_vector_bytes`` once per uploaded file (shared, read-only)."""
    from seqviz.word2vec.formats import load_vector_bytes

    with _progress_bar() as progress:
        return load_vector_bytes(_data, name, limit=limit, progress=progress)


_HELD: "weakref.WeakValueDictionary[ModelRef, object]" = weakref.WeakValueDictionary()


def hold(ref: ModelRef, loaded) -> None:
    """Name ``loaded`` (an uploaded vector file, read by ``uploaded_vectors``) by its ``ref``, so that ``view``
    finds it as it finds a checkpoint; held while ``uploaded_vectors`` keeps it."""
    _HELD[ref] = loaded


def _model_of(ref: ModelRef):
    held = _HELD.get(ref)
    return model(ref) if held is None else held


@st.cache_resource(max_entries=MAX_MODELS, show_spinner=False)
def info(ref: ModelRef) -> Info:
    """The model's config, tokenizer and card: from the folder's files without torch where its format reads them
    (``ModelRef.read_info``), else from the loaded model."""
    return ref.read_info() or Info.of(model(ref))


def shape(ref: ModelRef):
    """The model's config (family, sizes) without torch where its format reads one from the folder's files
    (``ModelRef.read_shape``), else ``info(ref).config``: what a page asks of other checkpoints."""
    return ref.read_shape() or info(ref).config


@st.cache_resource(max_entries=32, show_spinner=False)
def trace(ref: ModelRef, ids: tuple[tuple[int, ...], ...]):
    """``model.trace`` of a batch of id sequences (right-padded), shared read-only."""
    return model(ref).trace([list(s) for s in ids])


@cached(st.cache_resource, N_("Reading the whole search text (once per model and layer)..."), max_entries=2)
def state_index(ref: ModelRef, layer: int):
    """h of one layer over the whole held-out corpus, for the pattern search."""
    from seqviz.introspect.units import corpus_state_index

    return corpus_state_index(model(ref), layer)


# ------------------------------------------------------------------ views
def qualified(fn) -> str:
    """``module.qualname`` of a function: what a cache keys a function argument on (Streamlit cannot hash one)."""
    return f"{fn.__module__}.{fn.__qualname__}"


def view(fn, ref: ModelRef, **choices) -> Drawn:
    """``fn(model(ref), **choices)``, a ``seqviz.views`` function, in the session's language: computed and serialised
    once per (function, model, choices, language) and shared read-only by every visitor; taken from the checkpoint's
    shipped results (``seqviz precompute``) when they hold it (``ModelRef.shipped_choices``), without loading the
    model. Choices must be hashable; a bad one raises the view's ValueError. A ``ModelRef`` among them (also inside
    a tuple) reaches the view as its loaded model."""
    lang, keyed = current_language(), ref.shipped_choices(choices)
    if keyed is not None:
        shipped = _shipped_view(qualified(fn), fn, ref, lang, tuple(sorted(choices.items())), keyed)
        if shipped is not None:
            return shipped
    return _view(qualified(fn), fn, ref, lang, tuple(sorted(choices.items())))


def _shipped_view(name: str, _fn, ref: ModelRef, lang: str, choices: tuple, keyed: dict) -> Drawn | None:
    from seqviz.results import read_view, view_key

    entry = read_view(ref.path, view_key(_fn, keyed, lang))
    return None if entry is None else Drawn(entry["spec"], entry["data"], entry["facts"], entry["title"],
                                            compute=lambda: _view(name, _fn, ref, lang, choices))


def _models(choice):
    """A view's choice with every ``ModelRef`` in it (also inside tuples) replaced by its loaded model."""
    if isinstance(choice, ModelRef):
        return model(choice)
    return tuple(_models(c) for c in choice) if isinstance(choice, tuple) else choice


def _drawn(lang: str, make) -> Drawn | None:
    """``make()``, a View (or None), made in ``lang`` (the views' own titles too) as a Drawn: its chart serialised in
    that language (as ``seqviz precompute`` ships it), its datasets' Arrow form made once."""
    import altair as alt

    from seqviz.text import translator
    from seqviz.views.spec import to_spec

    with language(lang), translator(_):
        done, spec = make(), None
        if done is None:
            return None
        if done.chart is not None:
            with ALTAIR_LOCK:
                # Called, not entered: leaving `with disable_max_rows()` restores the registry as it was on entry,
                # dropping a transformer another visitor's st.altair_chart registered meanwhile (outside this lock).
                alt.data_transformers.disable_max_rows()
                spec = to_spec(done.chart, _)
            for key, values in spec.get("datasets", {}).items():
                arrow(key, values)
    return Drawn(spec, done.data, dict(done.facts), done.title)


@st.cache_resource(max_entries=256, show_spinner=False)
def _view(name: str, _fn, ref: ModelRef, lang: str, choices: tuple) -> Drawn:
    return _drawn(lang, lambda: _fn(_model_of(ref), **{k: _models(v) for k, v in choices}))


def view_of_path(fn, ref: ModelRef, **choices) -> Drawn | None:
    """``fn(ref.path, ref.snapshot, **choices)``, a view read from what the checkpoint's folder ships (no model, no
    torch), cached as ``view`` is; None, also kept, when the files do not hold it (then ask ``view``)."""
    return _view_of_path(qualified(fn), fn, ref, current_language(), tuple(sorted(choices.items())))


@st.cache_resource(max_entries=256, show_spinner=False)
def _view_of_path(name: str, _fn, ref: ModelRef, lang: str, choices: tuple) -> Drawn | None:
    return _drawn(lang, lambda: _fn(ref.path, ref.snapshot, **dict(choices)))


def view_of_data(fn, **choices) -> Drawn:
    """``fn(**choices)``, a view of other views' numbers, computed once per (function, choices, language); the
    choices may hold DataFrames (hashed)."""
    return _view_of_data(qualified(fn), fn, current_language(), **choices)


@st.cache_data(max_entries=64, show_spinner=False)
def _view_of_data(name: str, _fn, lang: str, **choices) -> Drawn:
    return _drawn(lang, lambda: _fn(**choices))


# ------------------------------------------------------------------ lessons and exported files
@st.cache_resource(max_entries=1, show_spinner=False)
def all_lessons() -> dict:
    from seqviz.lessons import lessons

    return lessons()


def shipped_named(name: str):
    """The shipped checkpoint a lesson step names; ValueError when it is missing."""
    for c in list_checkpoints():
        if c.name == name:
            return c
    raise ValueError(f"the shipped checkpoint {name!r} is missing from {checkpoint_roots()[0]}")


@st.cache_resource(max_entries=96, show_spinner=False)
def lesson_view(view: str, refs: tuple, card_names: tuple, value, params_json: str, lang: str, choice: str = "",
                table: bool = False):
    """(Vega-Lite spec, numbers, table) of a lesson step's view at one control value in ``lang``."""
    from seqviz.lessons import run_view
    from seqviz.text import translator

    models = {ref.label: model(ref) for ref in refs}
    cards = {name: shipped_named(name).card for name in card_names}
    with language(lang), translator(_):
        done = run_view(view, models, cards, value, json.loads(params_json), choice, table)
        return done.spec(), done.numbers, done.table


@st.cache_data(max_entries=64, show_spinner=False)
def svg(spec_json: str, footnote: str | None) -> str:
    """A chart's spec (JSON) as SVG with its footnote (``seqviz.export``, no browser)."""
    from seqviz import export

    return export.to_svg(json.loads(spec_json), footnote)


@st.cache_data(max_entries=64, show_spinner=False)
def png(spec_json: str, footnote: str | None) -> bytes:
    """A chart's spec (JSON) as a PNG at twice its size on screen, with its footnote."""
    from seqviz import export

    return export.to_png(json.loads(spec_json), 2.0, footnote)
