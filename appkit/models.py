"""The app's only caches: the checkpoint catalogue, shared read-only models, and their cached results.

The sidebar picker returns a ``ModelRef`` (a resolved path, a content fingerprint, a training
snapshot); every cached function here takes one and calls one library function. Models are
cached with ``st.cache_resource`` and shared by every visitor, so they are never mutated:
``seqviz.load`` returns them in eval mode without gradients, and nothing here sets attributes,
adds hooks or trains. Because the fingerprint is part of the ref, re-training into the same
folder gives a new ref and the new weights, not a stale entry. Every cache has ``max_entries``.

torch is imported lazily (inside the loaders) so pages without a model start fast.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import hashlib
import importlib
import json
import os
import re
import threading
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from appkit import background
from seqviz.views.spec import on_canvas
from appkit.i18n import N_, _
from appkit.registry import ROOT

# Networks held at once across all sessions: the 11 shipped ones (~40 MB together) and a few snapshots or visitors'
# own. Evicting one drops what was computed on it (seqviz.views.memo): with 8, a visit of every page (11 networks and
# the trajectory snapshots) pushed the six LMs out, and the Gradient flow page's Tokens slider recomputed its six G's.
MAX_MODELS = 16
MAX_VECTORS = 2  # word-vector sets held at once (a 100k x 300 file takes ~120 MB: unit rows are normalised as read)
TORCH_THREADS = int(os.environ.get("SEQVIZ_TORCH_THREADS", "1"))

try:  # Altair's data transformer is process-global; Streamlit switches it under this lock
    from streamlit.elements.vega_charts import _altair_globals_lock as _ALTAIR_LOCK
except ImportError:  # pragma: no cover - a Streamlit without it: at least serialise our own use
    _ALTAIR_LOCK = threading.Lock()
try:  # True while a cached function computes: a spinner there would only repeat the outer one's
    from streamlit.runtime.caching.cache_utils import in_cached_function as _IN_CACHED
except ImportError:  # pragma: no cover - a Streamlit without it: always show ours
    _IN_CACHED = None


def cached(kind, spinner: str | None = None, **options):
    """``kind`` (``st.cache_data`` / ``st.cache_resource``) with ``options``, showing ``spinner`` (marked
    ``N_``) on a cache miss in the visitor's language.

    A cache's own ``show_spinner`` text is fixed when this module is imported, before any session
    has a language (seqviz/locale/README.md), so the cache is made with ``show_spinner=False`` and
    the translated text travels as a ``_spin`` argument (left out of the cache key, as every
    argument named with a leading underscore) to a body that shows it while it computes. As with
    Streamlit's own spinner, nothing is shown for a call from inside another cached function.
    """
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
            # no spinner inside another cached function, nor on the background worker (no page to show it on)
            nested = _IN_CACHED is not None and _IN_CACHED.get() or get_script_run_ctx(suppress_warning=True) is None
            return cache(*args, _spin=None if nested or spinner is None else _(spinner), **kwargs)

        call.clear = cache.clear
        return call

    return decorate


# Heavy libraries every model page needs, in import order: torch alone is ~2-3 s of CPU on the 2-core server.
WARM_MODULES = ("torch", "safetensors.torch", "pandas", "altair")
_warm_lock = threading.Lock()
_warm_future = None


def _import_heavy() -> None:
    for name in WARM_MODULES:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a warm-up must never fail: the page imports it again and reports
            return
        if name == "torch":
            import torch

            torch.set_num_threads(TORCH_THREADS)  # as _load does, before any model runs
            # Loading builds the network on the meta device and allocates it with to_empty
            # (seqviz.checkpoints.materialize); the first such call imports torch's symbolic-shape
            # machinery and sympy: do it here, on a throwaway cell.
            with torch.device("meta"):
                cell = torch.nn.GRU(2, 2)
            cell.to_empty(device="cpu")
    # The objects the imports made live as long as the process: out of the cyclic collector's sight,
    # a full collection walks only what the app made since.
    gc.freeze()


def complete(fn, *args) -> None:
    """Compute ``fn(*args)`` on the background worker once this run is done: the one computation a shown view
    is a slice of (e.g. each compared model's G at the Tokens slider's maximum), so the control's next value
    is sliced, not computed. The library memoises it per model (``seqviz.views.memo``) for every visitor of
    the server, and a run that needs it meanwhile waits for it instead of computing it twice; a task not
    started when the next run begins is cancelled (``app.py``). A failure stays in the task: the run that
    needs the result computes it again and reports it. It starts once the server has nothing to serve
    (``background.when_idle``): the browser is still fetching the code of what this run sent."""
    background.when_idle(fn, *args)


def warm_up():
    """Import the heavy libraries on the background worker, once per process (a later call returns its Future).

    ``app.py`` calls it after the first run, and each later run waits for it first (``warmed``). Only
    third-party modules are imported there (never seqviz or appkit ones), so the worker and a page
    importing our modules never wait on each other's module locks.
    """
    global _warm_future
    with _warm_lock:
        if _warm_future is None:
            _warm_future = background.submit(_import_heavy)
        return _warm_future


def warmed() -> None:
    """Wait for the warm-up, if it was started and is still importing (a no-op once it is done)."""
    future = _warm_future
    if future is not None and not future.cancelled():
        future.exception()  # waits; a failed warm-up is the page's to report when it imports the module


def fast_altair() -> None:
    """Build this process's Altair charts without Altair's debug mode (call it before any chart is built).

    In debug mode (Altair's default) every schema object validates itself against the Vega-Lite
    schema when it is made, a third of the time a chart builder takes. Every builder's output is
    validated in tests/charts instead.
    """
    from altair.utils.schemapi import disable_debug_mode

    disable_debug_mode()


def checkpoint_roots() -> list[Path]:
    """Folders holding shipped checkpoints: ``$SEQVIZ_CHECKPOINTS`` (os.pathsep list) or ./checkpoints."""
    env = os.environ.get("SEQVIZ_CHECKPOINTS")
    if env:
        return [Path(p).expanduser() for p in env.split(os.pathsep) if p]
    return [ROOT / "checkpoints"]


def content_key(path: Path) -> str:
    """Fingerprint of a checkpoint: JSON bytes + name, size and mtime of every file of the folder (or beside it)."""
    h = hashlib.sha1()
    files = sorted(p for p in path.iterdir() if p.is_file()) if path.is_dir() else \
        [path, path.with_suffix(".json"), path.parent / "spec.json", path.parent / "vocab.json"]
    for f in files:
        if not f.is_file():
            continue
        stat = f.stat()
        h.update(f"{f.name}:{stat.st_size}:{stat.st_mtime_ns};".encode())
        if f.suffix == ".json" and stat.st_size < (1 << 20):
            h.update(f.read_bytes())
    return h.hexdigest()


@dataclass(frozen=True)
class ModelRef:
    """What the picker hands a page: which model, in which state. Hashable, so caches key on it."""

    path: str  # resolved folder or file that seqviz.load opens (an upload's file name for uploaded vectors)
    key: str  # content fingerprint (an upload's SHA-1): changed files make a new ref
    model_type: str  # "recurrent_lm", "seq2seq" or "word2vec"
    snapshot: int | None = None  # training step of snapshots/step-<n>.safetensors; None = final weights
    limit: int | None = None  # word vectors: read only the N most frequent words
    family: str = ""  # seqviz.registry family name ("state_dict", "transformers" ...): for display
    label: str = ""  # shown to the user
    source: str = "Shipped"  # which picker source it came from

    @classmethod
    def of(cls, path, label: str = "", source: str = "Shipped", limit: int | None = None) -> "ModelRef":
        """A ref to ``path`` as it is now; CheckpointError when no seqviz family opens it."""
        from seqviz.registry import detect

        p = Path(path).expanduser()
        if not p.exists():
            from seqviz.files import CheckpointError

            raise CheckpointError(path, "no such file or folder")
        p = p.resolve()
        family = detect(p)
        return cls(str(p), content_key(p), family.model_type, None,
                   limit if family.model_type == "word2vec" and p.is_file() else None,
                   family.name, label or p.name, source)

    def at(self, snapshot: int | None) -> "ModelRef":
        """The same checkpoint at another training step (None: its final weights)."""
        return dataclasses.replace(self, snapshot=snapshot)


# ------------------------------------------------------------------ the catalogue of shipped checkpoints
@dataclass(frozen=True)
class Shipped:
    """A checkpoint folder found under a root, with its card (empty dict if it has none)."""

    name: str
    path: str
    model_type: str
    card: dict = field(default_factory=dict, hash=False, compare=False)

    def ref(self) -> ModelRef:
        """``ModelRef.of`` this folder, made again only when one of its files changed (name, size or mtime):
        fingerprinting it reads its JSON files, which pages would otherwise pay per run for each model listed."""
        return _shipped_ref(self.path, self.name, _stat_key(Path(self.path)))


def _stat_key(folder: Path) -> tuple:
    """Name, size and mtime of every file of ``folder``: what tells a changed checkpoint folder, cheaply."""
    try:
        return tuple((f.name, info.st_size, info.st_mtime_ns) for f in sorted(folder.iterdir())
                     if f.is_file() and (info := f.stat()))
    except OSError:
        return ()


@functools.lru_cache(maxsize=64)
def _shipped_ref(path: str, name: str, stats: tuple) -> ModelRef:
    return ModelRef.of(path, name)


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def _listing_key(roots: list[Path]) -> tuple:
    """Cheap fingerprint of the roots (folder names + config/card mtimes) for the catalogue cache."""
    key = []
    for root in roots:
        for config in sorted(root.glob("*/config.json")):
            card = config.parent / "card.json"
            key.append((str(config), config.stat().st_mtime_ns, card.stat().st_mtime_ns if card.exists() else 0))
    return tuple(key)


@st.cache_data(max_entries=4, show_spinner=False)
def _catalogue(roots: tuple[str, ...], fingerprint: tuple) -> list[Shipped]:
    from seqviz.files import CheckpointError
    from seqviz.registry import detect  # torch-free: reads config.json only

    found = []
    for root in map(Path, roots):
        for config in sorted(root.glob("*/config.json")):
            try:
                family = detect(config.parent)
            except CheckpointError:
                continue  # an unreadable config is not offered (loading it would fail)
            found.append(Shipped(config.parent.name, str(config.parent.resolve()), family.model_type,
                                 _read_json(config.parent / "card.json")))
    return found


def classic_cells(names: list[str]) -> list[str]:
    """Of checkpoint names, the RNN, GRU and LSTM in that order (what a comparison's "RNN vs GRU vs LSTM" title
    names, the default choice), or the first three when fewer than two of them are there."""
    classic = [n for cell in ("rnn", "gru", "lstm") for n in names if n.endswith(f"-{cell}")]
    return classic[:3] if len(classic) >= 2 else list(names[:3])


def list_checkpoints(model_type: str | None = None, roots=None) -> list[Shipped]:
    """Shipped checkpoints (optionally of one model_type) under ``roots`` (default: checkpoint_roots())."""
    roots = checkpoint_roots() if roots is None else [Path(r) for r in roots]
    items = _catalogue(tuple(map(str, roots)), _listing_key(roots))
    return [c for c in items if model_type is None or c.model_type == model_type]


def snapshots(ref: ModelRef) -> list[int]:
    """Training steps whose weights the checkpoint folder keeps."""
    from seqviz.files import list_snapshots

    return list_snapshots(ref.path) if Path(ref.path).is_dir() else []


# ------------------------------------------------------------------ models
def _load(ref: ModelRef, **options):
    if ref.model_type != "word2vec":  # word vectors are numpy: their pages never import torch
        import torch

        # One intra-op thread: the app's tensors are small, and several threads per request
        # oversubscribe a small server.
        torch.set_num_threads(TORCH_THREADS)
    import seqviz

    if ref.limit is not None:
        options["limit"] = ref.limit
    return seqviz.load(ref.path, snapshot=ref.snapshot, **options)


@contextlib.contextmanager
def _progress_bar(after: float = 1.0):
    """``progress(fraction)`` for a vector file's load: a bar once it has taken ``after`` seconds, gone at the end.

    Made inside the cached function, as a cache hit's replay needs (an element made outside breaks it),
    and only when needed: a quick load adds no element.
    """
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
    return _load(ref)


@cached(st.cache_resource, N_("Reading the word vectors..."), max_entries=MAX_VECTORS)
def _vectors(ref: ModelRef):
    with _progress_bar() as progress:
        return _load(ref, progress=progress)


def model(ref: ModelRef):
    """``seqviz.load`` of the ref, once per content and shared read-only (CheckpointError for bad files)."""
    return (_vectors if ref.model_type == "word2vec" else _network)(ref)


class Drawn:
    """A ``seqviz.views`` View made ready to draw: its chart as a Vega-Lite spec in the visitor's language.

    ``spec`` None: the view draws no chart (its facts say why, or its data is a table). ``data`` is
    the View's DataFrame, built on first use when the view came from the checkpoint's shipped results
    (so a page's first chart needs neither torch nor pandas).
    """

    def __init__(self, spec: dict | None, data, facts: dict, title: str, compute=None):
        self.spec, self.facts, self.title, self.shipped = spec, facts, title, compute is not None
        self._data, self._compute = data, compute

    @functools.cached_property
    def data(self):
        if isinstance(self._data, dict):  # shipped as a table: pandas' split orient
            import pandas as pd

            return pd.DataFrame(self._data["data"], columns=self._data["columns"])
        if self._data is None and self._compute is not None:  # a shipped chart's numbers: the view made now
            return self._compute().data
        return self._data


@dataclass(frozen=True)
class Info:
    """What a page needs of a model before it draws: its config, tokenizer and card (no weights)."""

    config: object
    tokenizer: object
    card: dict


@st.cache_resource(max_entries=MAX_MODELS, show_spinner=False)
def info(ref: ModelRef) -> Info:
    """The model's config, tokenizer and card: read from a seqviz language-model (or encoder-decoder: no tokenizer)
    folder without torch (so a page's first chart can come from the shipped results), else from the loaded model."""
    folder = Path(ref.path)
    if ref.family in ("recurrent_lm", "seq2seq") and folder.is_dir():
        from seqviz.config import LMConfig
        from seqviz.data.tokenizers import Tokenizer, read_vocab
        from seqviz.files import CheckpointError, read_json
        from seqviz.seq2seq.config import Seq2SeqConfig

        try:
            config = {k: v for k, v in read_json(folder / "config.json").items() if k != "format_version"}
            card = read_json(folder / "card.json") if (folder / "card.json").is_file() else {}
            if ref.family == "seq2seq":  # its pages need the card first; its two vocabularies come with the model
                return Info(Seq2SeqConfig.from_dict(config), None, {**card, "path": str(folder)})
            return Info(LMConfig.from_dict(config), Tokenizer.from_dict(read_vocab(folder / "vocab.json")),
                        {**card, "path": str(folder)})
        except (CheckpointError, ValueError, TypeError, OSError):
            pass  # loading the model says exactly what is wrong
    m = model(ref)  # an encoder-decoder has no one tokenizer
    return Info(getattr(m, "config", None), getattr(m, "tokenizer", None), getattr(m, "card", None) or {})


def shape(ref: ModelRef):
    """The model's config (family, sizes) without torch where its format reads one from the folder's files
    (``seqviz.registry.Family.read_shape``), else ``info(ref).config``: what a page asks of other checkpoints."""
    from seqviz.registry import FAMILIES

    row = FAMILIES.get(ref.family)
    if row is not None and Path(ref.path).is_dir():
        try:
            if (found := row.read_shape(ref.path)) is not None:
                return found
        except (OSError, ValueError, TypeError, AttributeError):
            pass  # loading the model says exactly what is wrong
    return info(ref).config


def view(fn, ref: ModelRef, **choices) -> Drawn:
    """``fn(model(ref), **choices)``, a ``seqviz.views`` function, in the session's language: computed and
    serialised once per (function, model, choices, language) and shared read-only by every visitor.

    Taken from the checkpoint's shipped results (``seqviz.results``, written by ``seqviz precompute``)
    when they hold it (a training snapshot's under its weights file's SHA-1), without loading the model.
    Choices must be hashable (numbers, strings, tuples of token ids); a bad one raises the view's ValueError.
    A choice that is a ``ModelRef`` (also inside a tuple) reaches the view as its loaded model: the space a
    snapshot is drawn in, the models a comparison overlays (such a view is shipped only while every compared
    checkpoint ships results that fit its files; never one of an uploaded file's bytes).
    """
    from appkit.i18n import current_language

    lang = current_language()
    keyed = {k: _peers(v) for k, v in choices.items()}  # a compared model enters the key as its files' SHA-1s
    if ref.snapshot is not None:  # a training snapshot's view: under its weights file's SHA-1 too
        from seqviz.results import Snapshot

        keyed["at_snapshot"] = Snapshot(Path(ref.path), ref.snapshot)
    if Path(ref.path).is_dir() and not any(map(_unkeyed, keyed.values())) \
            and not any(isinstance(v, bytes) for v in choices.values()):  # an uploaded file's view is never shipped
        shipped = _shipped_view(qualified(fn), fn, ref, lang, tuple(sorted(choices.items())), keyed)
        if shipped is not None:
            return shipped
    return _view(qualified(fn), fn, ref, lang, tuple(sorted(choices.items())))


def ships_views(ref: ModelRef) -> bool:
    """Whether the ref's views can come from its checkpoint's shipped results (no model loaded for them)."""
    from seqviz.results import ships

    return ref.snapshot is None and Path(ref.path).is_dir() and ships(ref.path)


def _shipped_view(name: str, _fn, ref: ModelRef, lang: str, choices: tuple, keyed: dict) -> Drawn | None:
    from seqviz.results import read_view, view_key

    entry = read_view(ref.path, view_key(_fn, keyed, lang))
    if entry is None:
        return None
    return Drawn(entry["spec"], entry["data"], entry["facts"], entry["title"],
                 compute=lambda: _view(name, _fn, ref, lang, choices))


def _peers(choice):
    """A choice as a shipped view's key holds it: each ``ModelRef`` in it (also inside tuples) as the folder name
    and file SHA-1s its own shipped results record (``seqviz.results.peer_key``), or ``_UNKEYED``."""
    if isinstance(choice, ModelRef):
        from seqviz.results import peer_key

        key = peer_key(choice.path) if choice.snapshot is None and Path(choice.path).is_dir() else None
        return _UNKEYED if key is None else key
    return tuple(_peers(c) for c in choice) if isinstance(choice, tuple) else choice


_UNKEYED = object()  # a compared model no shipped view can name (an upload, a snapshot, a folder shipping none)


def _unkeyed(choice) -> bool:
    return choice is _UNKEYED or (isinstance(choice, tuple) and any(map(_unkeyed, choice)))


def _models(choice):
    """A view's choice with every ``ModelRef`` in it (also inside tuples) replaced by its loaded model."""
    if isinstance(choice, ModelRef):
        return model(choice)
    return tuple(_models(c) for c in choice) if isinstance(choice, tuple) else choice


@st.cache_resource(max_entries=256, show_spinner=False)
def _view(name: str, _fn, ref: ModelRef, lang: str, choices: tuple) -> Drawn:
    from appkit.i18n import language
    from seqviz.text import translator

    with language(lang), translator(_):  # the views' own titles, as the page's (app.py installs it too)
        return _drawn(_fn(_model_of(ref), **{k: _models(v) for k, v in choices}))


def _drawn(done) -> Drawn:
    """A View as a Drawn: its chart serialised (in the language being used, as ``seqviz precompute`` ships it)
    with its datasets' Arrow form."""
    import altair as alt

    from seqviz.views.spec import to_spec

    spec = None
    if done.chart is not None:
        with _ALTAIR_LOCK:
            alt.data_transformers.disable_max_rows()  # called, not entered: see _chart_spec
            spec = to_spec(done.chart, _)
        for key, values in spec.get("datasets", {}).items():
            _arrow(key, values)
    return Drawn(spec, done.data, dict(done.facts), done.title)


def view_of_path(fn, ref: ModelRef, **choices) -> Drawn | None:
    """``fn(ref.path, ref.snapshot, **choices)``, a ``seqviz.views`` function of a checkpoint's files (a view
    read from what the folder ships, without loading the model or importing torch), cached as ``view`` is;
    None, also kept, when the files do not hold that view (then the page asks ``view`` for it)."""
    from appkit.i18n import current_language

    return _view_of_path(qualified(fn), fn, ref, current_language(), tuple(sorted(choices.items())))


@st.cache_resource(max_entries=256, show_spinner=False)
def _view_of_path(name: str, _fn, ref: ModelRef, lang: str, choices: tuple) -> Drawn | None:
    from appkit.i18n import language
    from seqviz.text import translator

    with language(lang), translator(_):
        done = _fn(ref.path, ref.snapshot, **dict(choices))
        return None if done is None else _drawn(done)


def view_of_data(fn, **choices) -> Drawn:
    """``fn(**choices)``, a ``seqviz.views`` function of other views' numbers (several models' tables of one
    text), computed once per (function, choices, language); the choices may hold DataFrames (hashed)."""
    from appkit.i18n import current_language

    return _view_of_data(qualified(fn), fn, current_language(), **choices)


@st.cache_data(max_entries=64, show_spinner=False)
def _view_of_data(name: str, _fn, lang: str, **choices) -> Drawn:
    from appkit.i18n import language
    from seqviz.text import translator

    with language(lang), translator(_):
        return _drawn(_fn(**choices))


@cached(st.cache_resource, N_("Reading the vector file..."), max_entries=MAX_VECTORS)
def uploaded_vectors(digest: str, _data: bytes, name: str, limit: int | None):
    """``seqviz.word2vec.formats.load_vector_bytes`` once per uploaded file (shared, read-only)."""
    from seqviz.word2vec.formats import load_vector_bytes

    with _progress_bar() as progress:
        return load_vector_bytes(_data, name, limit=limit, progress=progress)


# ------------------------------------------------------------------ uploaded word vectors (pages/word2vec.py)
_HELD: "weakref.WeakValueDictionary[ModelRef, object]" = weakref.WeakValueDictionary()


def hold(ref: ModelRef, loaded) -> None:
    """Name ``loaded`` (an uploaded vector file, read by ``uploaded_vectors``) by its ``ref``, so that ``view``
    finds it as it finds a checkpoint by its ref: held while ``uploaded_vectors`` keeps it (the page names it
    again on each run; an upload's ref carries its SHA-1, so a view cached for it is of these vectors)."""
    _HELD[ref] = loaded


def _model_of(ref: ModelRef):
    """The model a view of ``ref`` computes on: a held upload, else ``model(ref)``."""
    held = _HELD.get(ref)
    return model(ref) if held is None else held


# ------------------------------------------------------------------ traces (gates)
@st.cache_resource(max_entries=32, show_spinner=False)
def trace(ref: ModelRef, ids: tuple[tuple[int, ...], ...]):
    """``model.trace`` of a batch of id sequences (right-padded), shared read-only."""
    return model(ref).trace([list(s) for s in ids])


@cached(st.cache_resource, N_("Reading the whole search text (once per model and layer)..."), max_entries=2)
def state_index(ref: ModelRef, layer: int):
    """h of one layer over the whole held-out corpus, for the pattern search."""
    from seqviz.introspect.projection import corpus_text
    from seqviz.introspect.units import build_state_index

    text, source = corpus_text()
    index = build_state_index(model(ref), text, layer)
    index.info["source"] = source
    return index


# ------------------------------------------------------------------ charts
def qualified(fn) -> str:
    """``module.qualname`` of a function: what a cache keys a function argument on (Streamlit cannot hash one)."""
    return f"{fn.__module__}.{fn.__qualname__}"


def chart_spec(builder, *args, **kwargs) -> dict:
    """``builder(*args, **kwargs)``, a ``seqviz.charts`` function, as a Vega-Lite spec, built once per input.

    Building an Altair chart and validating it costs 0.05-0.3 s per chart on a small CPU, whatever
    its data size; a cached spec costs a rerun only the hashing of its inputs. Draw it with ``show``.
    """
    return _chart_spec(qualified(builder), builder, *args, **kwargs)


@st.cache_data(max_entries=96, show_spinner=False)
def _chart_spec(name: str, _builder, *args, **kwargs) -> dict:
    import altair as alt

    chart = _builder(*args, **kwargs)
    with _ALTAIR_LOCK:
        # Called, not entered: leaving `with disable_max_rows()` restores the registry as it was on
        # entry, dropping a transformer another visitor's st.altair_chart registered meanwhile
        # (Streamlit registers it outside this lock) -> "No 'to_arrow_dataset' entry point found".
        alt.data_transformers.disable_max_rows()
        # Unvalidated: seqviz/charts' own tests validate every builder's output.
        return on_canvas(chart.to_dict(validate=False))


_ARROW_LOCK = threading.Lock()
_ARROW: dict[str, bytes] = {}  # dataset name -> Arrow IPC bytes, oldest first
ARROW_BYTES = 64 << 20  # kept at most; the oldest go first


def _arrow(name: str, values) -> bytes | None:
    """The Arrow IPC form Streamlit sends ``values`` in, made once per dataset name, or None for a
    dataset that is not a list of rows named by its content (Altair names each ``data-<md5 of its
    rows>``: the same name is the same rows)."""
    if not (isinstance(values, list) and re.fullmatch(r"data-[0-9a-f]{32}", name)):
        return None
    with _ARROW_LOCK:
        found = _ARROW.get(name)
    if found is None:
        from streamlit import dataframe_util

        found = dataframe_util.convert_anything_to_arrow_bytes(values)
        with _ARROW_LOCK:
            _ARROW[name] = found
            total = sum(map(len, _ARROW.values()))
            while total > ARROW_BYTES and len(_ARROW) > 1:
                total -= len(_ARROW.pop(next(iter(_ARROW))))
    return found


def show(where, spec: dict, **kwargs):
    """``where.vega_lite_chart(spec, **kwargs)`` (``where``: ``st``, a column, a tab), each dataset handed
    over in the Arrow form Streamlit would make of it, made once per dataset (``_arrow``).

    Streamlit converts every named dataset of a spec to Arrow on each draw; it passes bytes through
    unchanged. ``spec`` itself is not changed: Streamlit
    edits the spec it is given in place (a legend's ``title: null`` becomes ``" "``), and a cached spec is
    shared, so it gets a copy of everything but the rows.
    """
    import copy

    datasets = spec.get("datasets")
    spec = copy.deepcopy({k: v for k, v in spec.items() if k != "datasets"})
    if datasets:
        sent = {}
        for key, values in datasets.items():
            converted = _arrow(key, values)
            sent[key] = values if converted is None else converted
        spec["datasets"] = sent
    return where.vega_lite_chart(spec, **kwargs)


