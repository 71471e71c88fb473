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
import heapq
import importlib
import itertools
import json
import os
import queue
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import streamlit as st

from appkit.i18n import N_, _
from appkit.registry import ROOT
from appkit.texts import SAMPLE_CHUNKS, SAMPLE_LENGTH, token_ids

MAX_MODELS = 8  # networks held at once across all sessions (~4 MB each for the shipped LMs)
MAX_VECTORS = 2  # word-vector sets held at once (a 100k x 300 file takes ~240 MB with its unit copy)
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
    has a language (appkit/locale/README.md), so the cache is made with ``show_spinner=False`` and
    the translated text travels as a ``_spin`` argument (left out of the cache key, as every
    argument named with a leading underscore) to a body that shows it while it computes. As with
    Streamlit's own spinner, nothing is shown for a call from inside another cached function.
    """
    def decorate(func):
        @functools.wraps(func)  # the cache keys on func's name, source and signature (``_wv`` stays unhashed)
        def body(*args, _spin: str | None = None, **kwargs):
            if _spin is None:
                return func(*args, **kwargs)
            with st.spinner(_spin):
                return func(*args, **kwargs)

        cache = kind(show_spinner=False, **options)(body)

        @functools.wraps(func)
        def call(*args, **kwargs):
            nested = _IN_CACHED is not None and _IN_CACHED.get()
            return cache(*args, _spin=None if nested or spinner is None else _(spinner), **kwargs)

        call.clear = cache.clear
        call.quiet = lambda *args, **kwargs: cache(*args, _spin=None, **kwargs)  # no spinner: for prefetch()
        return call

    return decorate


# Heavy libraries every model page needs, in import order: torch alone is ~2-3 s of CPU on the 2-core server.
WARM_MODULES = ("torch", "safetensors.torch", "pandas", "altair")
_warm_lock = threading.Lock()
_warm_thread: threading.Thread | None = None


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
            # machinery and sympy (~0.7 s of CPU, measured): do it here, on a throwaway cell.
            with torch.device("meta"):
                cell = torch.nn.GRU(2, 2)
            cell.to_empty(device="cpu")
    # The ~260,000 objects the imports made live as long as the process: move them out of the
    # cyclic collector's sight, so a full collection walks only what the app made since (0.25 s
    # of CPU before, measured with torch, pandas, Altair and Streamlit loaded; microseconds after).
    # The collection itself holds the interpreter ~0.1-0.2 s: not while a visitor's first page runs.
    deadline = time.monotonic() + 30
    while _active_runs and time.monotonic() < deadline:
        time.sleep(0.05)
    gc.collect()
    gc.freeze()


def warm_up() -> threading.Thread:
    """Import the heavy libraries in a background thread, once per process (a later call returns it).

    ``app.py`` calls it before the first run's page: the imports (~2 s on the 2-core server) then
    overlap the landing page's run and the time the visitor reads it. Started after the landing
    page's run instead, the first model page opened right away waited for them longer (measured
    with chromium, 3 runs each: first chart of the Language model page 2.4 s after the click
    instead of 2.0 s; the landing page 0.3 s faster, 2.2 s instead of 2.5 s). Only third-party
    modules are imported there (never seqviz or appkit ones), so the thread and a page importing
    our modules at the same time can never wait on each other's module locks.
    """
    global _warm_thread
    with _warm_lock:
        if _warm_thread is None:
            _warm_thread = threading.Thread(target=_import_heavy, name="seqviz-warm-up", daemon=True)
            _warm_thread.start()
        return _warm_thread


# ------------------------------------------------------------------ background prefetch
PREFETCH_QUEUE = 48  # tasks waiting at most; more are dropped (a visitor clicking fast outruns any prefetch)
IDLE_AFTER = 5.0  # seconds since the last run ended before the costly guesses (prefetch_idle) start
_prefetch_lock = threading.Lock()
# (-the run that queued it, its place in the queue, the task): the newest run's guesses first, each run's in
# the order the page queued them (its likeliest first). In arrival order, a page's slider neighbours waited
# behind what the pages visited just before had queued, and the visitor's first move missed them
# (Gradient flow's Tokens: 0.47 s for a move whose prefetched answer takes 0.07 s).
_prefetch_queue: queue.PriorityQueue = queue.PriorityQueue(maxsize=PREFETCH_QUEUE)
_queued = itertools.count()
_runs_begun = 0  # script runs begun in this process (run_started)
_idle_queue: queue.Queue = queue.Queue(maxsize=PREFETCH_QUEUE)
_prefetch_seen: dict = {}  # keys queued recently (bounded): each is prefetched once, not on every rerun
_prefetch_worker: threading.Thread | None = None
_active_runs = 0  # script runs in progress in this process (app.py counts them)
_last_run_end = 0.0  # time.monotonic() when the last one ended


def run_started() -> None:
    global _active_runs, _runs_begun
    with _prefetch_lock:
        _active_runs += 1
        _runs_begun += 1


def run_finished() -> None:
    global _active_runs, _last_run_end
    with _prefetch_lock:
        _active_runs = max(0, _active_runs - 1)
        _last_run_end = time.monotonic()


def prefetch(func, *args, **kwargs) -> None:
    """Compute ``func(*args, **kwargs)``, one of this module's caches, in the background: the visitor's
    likely next choice (the neighbouring slider value, another layer) then finds its result cached.

    One worker thread per process does the tasks one at a time, and only while no script run is in
    progress (app.py counts them), so a prefetch never slows the run a visitor waits for by more
    than the task it is in. The newest run's tasks go first, in the order queued. A task already queued
    is not queued again; when the queue is full an earlier run's last task gives way, else the new one
    is dropped. A failure is ignored: the page computes (and reports) it when it is asked for.
    ``SEQVIZ_PREFETCH=0`` turns it off.
    """
    _enqueue(_prefetch_queue, func, args, kwargs)


def prefetch_idle(func, *args, **kwargs) -> None:
    """``prefetch`` for a costly guess (a t-SNE fit, a pass over a corpus sample: ~0.6 s each): done only
    once ``prefetch``'s own queue is empty and no run has been in progress for ``IDLE_AFTER`` seconds,
    so that a visitor moving controls in quick succession does not wait behind one already under way."""
    if _enqueue(_idle_queue, func, args, kwargs):
        try:  # wakes the worker, which may be waiting on the other queue
            _prefetch_queue.put_nowait((0, next(_queued), None))
        except queue.Full:
            pass


def _enqueue(tasks: queue.Queue, func, args: tuple, kwargs: dict) -> bool:
    global _prefetch_worker
    if os.environ.get("SEQVIZ_PREFETCH", "1") == "0":  # off (the tests' default: see tests/conftest.py)
        return False
    key = _frozen((getattr(func, "__qualname__", repr(func)), args, tuple(sorted(kwargs.items()))))
    try:
        hash(key)
    except TypeError:
        return False
    with _prefetch_lock:
        if key in _prefetch_seen:
            return False
        _prefetch_seen[key] = None
        while len(_prefetch_seen) > 512:
            _prefetch_seen.pop(next(iter(_prefetch_seen)))
        if _prefetch_worker is None:
            _prefetch_worker = threading.Thread(target=_prefetch_loop, name="seqviz-prefetch", daemon=True)
            _prefetch_worker.start()
    item = (getattr(func, "quiet", func), args, kwargs)
    if tasks is _prefetch_queue:
        item = (-_runs_begun, next(_queued), item, key)
        _make_room(item)
    try:
        tasks.put_nowait(item)
    except queue.Full:
        with _prefetch_lock:
            _prefetch_seen.pop(key, None)
        return False
    return True


def _make_room(item: tuple) -> None:
    """A full queue gives up its stalest guess (an earlier run's, queued last) for a newer run's ``item``."""
    with _prefetch_queue.mutex:
        waiting = _prefetch_queue.queue
        if len(waiting) < PREFETCH_QUEUE:
            return
        stalest = max(waiting, key=lambda t: t[:2])
        if stalest[0] <= item[0]:  # nothing older than the new guess's run
            return
        waiting.remove(stalest)
        heapq.heapify(waiting)
    if len(stalest) > 3:
        with _prefetch_lock:
            _prefetch_seen.pop(stalest[3], None)  # it may be queued again later


def _frozen(value):
    """``value`` with its lists as tuples (a hashable key for the same call)."""
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    return value


def _next_task():
    """The next task: ``prefetch``'s first, then, after ``IDLE_AFTER`` s without a run, ``prefetch_idle``'s.

    Nothing is taken while a run is in progress: that run may still queue guesses that go first."""
    while True:
        if _active_runs:
            time.sleep(0.05)
            continue
        try:  # a time limit, so that a run begun meanwhile is seen (a task queued now wakes it at once)
            task = _prefetch_queue.get(timeout=0.25)[2]
        except queue.Empty:
            task = None
        if task is not None:
            return task
        if not _active_runs and time.monotonic() - _last_run_end >= IDLE_AFTER:
            try:
                return _idle_queue.get_nowait()
            except queue.Empty:
                pass


def _prefetch_loop() -> None:
    while True:
        func, args, kwargs = _next_task()
        while _active_runs:  # a visitor's run goes first
            time.sleep(0.05)
        try:
            func(*args, **kwargs)
        except Exception:  # noqa: BLE001 - see prefetch(): the page reports it when asked
            pass


def fast_altair() -> None:
    """Build this process's Altair charts without Altair's debug mode (call it before any chart is built).

    In debug mode (Altair's default) every schema object validates itself against the Vega-Lite
    schema when it is made: a third of the time a chart builder takes (measured on the trajectory
    chart: 0.137 s with it, 0.090 s without, the same spec). The specs are not validated when they
    are drawn either (``chart_spec``); every builder's output is validated in tests/charts instead.
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
            from seqviz.checkpoints import CheckpointError

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
        fingerprinting it reads its JSON files, 0.03 s a checkpoint that pages paid per run for each
        shipped model they list (measured)."""
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


def list_checkpoints(model_type: str | None = None, roots=None) -> list[Shipped]:
    """Shipped checkpoints (optionally of one model_type) under ``roots`` (default: checkpoint_roots())."""
    roots = checkpoint_roots() if roots is None else [Path(r) for r in roots]
    items = _catalogue(tuple(map(str, roots)), _listing_key(roots))
    return [c for c in items if model_type is None or c.model_type == model_type]


def snapshots(ref: ModelRef) -> list[int]:
    """Training steps whose weights the checkpoint folder keeps."""
    from seqviz.checkpoints import list_snapshots

    return list_snapshots(ref.path) if Path(ref.path).is_dir() else []


# ------------------------------------------------------------------ models
def _load(ref: ModelRef, **options):
    import torch

    # One intra-op thread: the app's tensors are small, and several threads per request
    # oversubscribe a small server (measured 20x slower sampling on a loaded 2-core machine).
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


@cached(st.cache_resource, N_("Reading the vector file..."), max_entries=MAX_VECTORS)
def uploaded_vectors(digest: str, _data: bytes, name: str, limit: int | None):
    """``seqviz.word2vec.formats.load_vector_bytes`` once per uploaded file (shared, read-only)."""
    from seqviz.word2vec.formats import load_vector_bytes

    with _progress_bar() as progress:
        return load_vector_bytes(_data, name, limit=limit, progress=progress)


# ------------------------------------------------------------------ language models (pages/language_model.py)
@st.cache_data(max_entries=256, show_spinner=False)
def shipped_score(ref: ModelRef, text: str, max_tokens: int):
    """The checkpoint's own ``scores.json`` entry for ``text`` (its final weights), or None; never imports torch."""
    from seqviz.introspect.language import read_scores

    return read_scores(ref.path, text, max_tokens) if ref.snapshot is None and Path(ref.path).is_dir() else None


@st.cache_data(max_entries=256, show_spinner=False)
def score_text(ref: ModelRef, text: str, max_tokens: int):
    """``seqviz.introspect.language.score_text``, cached per text: from the checkpoint's ``scores.json``
    when it holds the text (the sample texts; no model is loaded), else computed."""
    from seqviz.introspect.language import score_text as score

    shipped = shipped_score(ref, text, max_tokens)
    return shipped if shipped is not None else score(model(ref), text, max_tokens=max_tokens)


@st.cache_data(max_entries=256, show_spinner=False)
def continue_text(ref: ModelRef, text: str, n: int, temperature: float, seed: int, max_tokens: int) -> str:
    """``seqviz.introspect.language.continue_text`` cached per (model, prompt, settings)."""
    from seqviz.introspect.language import continue_text as cont

    return cont(model(ref), text, n=n, temperature=temperature, seed=seed, max_tokens=max_tokens)


def continue_sample(ref: ModelRef, text: str, n: int, temperature: float, seed: int, max_tokens: int) -> str:
    """``continue_text`` of the text as the page reads it (``score_text(...).text``): the Language model page's
    continuation of a sample, for the prefetch."""
    return continue_text(ref, score_text(ref, text, max_tokens).text, n, temperature, seed, max_tokens)


@st.cache_data(max_entries=64, show_spinner=False)
def lm_exposure(ref: ModelRef, text: str, prompt: int, n: int, temperature: float, seed: int) -> dict:
    """``seqviz.introspect.exposure.compare_continuation`` cached per (model, text, settings)."""
    from seqviz.introspect.exposure import compare_continuation

    return compare_continuation(model(ref), text, prompt, n, temperature=temperature, seed=seed)


# ------------------------------------------------------------------ word vectors (pages/word2vec.py)
# ``ref`` names the vectors (an upload's ref carries its SHA-1); the vectors themselves are passed
# as ``_wv`` so Streamlit does not hash a [V, D] matrix on every call.
@cached(st.cache_data, N_("Computing the word map..."), max_entries=16)
def word_map(ref: ModelRef, _wv, n: int, method: str, perplexity: float, seed: int, extra: tuple):
    """``seqviz.introspect.wordmap.word_map`` cached per (vectors, settings, extra words)."""
    from seqviz.introspect.wordmap import word_map as make

    return make(_wv, n=n, method=method, perplexity=perplexity, seed=seed, extra_words=extra)


@cached(st.cache_data, N_("Evaluating on the Google analogies, WordSim-353 and SimLex-999..."), max_entries=8)
def evaluate_vectors(ref: ModelRef, _wv) -> dict:
    """``seqviz.word2vec.evaluate.evaluate_all`` cached per vectors."""
    from seqviz.word2vec.evaluate import evaluate_all

    return evaluate_all(_wv)


# ------------------------------------------------------------------ seq2seq (attention, exposure bias)
@cached(st.cache_resource, N_("Translating..."), max_entries=64)  # shared read-only: no copy per rerun
def hf_translate(ref: ModelRef, text: str) -> dict:
    """``seqviz.hf_seq2seq.translate_text`` for a transformers model, cached per text (shared, read-only)."""
    from seqviz.hf_seq2seq import translate_text

    return translate_text(model(ref), text)


@st.cache_resource(max_entries=64, show_spinner=False)  # shared read-only: no copy per rerun
def translate(ref: ModelRef, text: str) -> dict:
    """``seqviz.introspect.attention.translate_text`` for one of seqviz's seq2seq models, cached per text."""
    from seqviz.introspect.attention import translate_text

    return translate_text(model(ref), text)


@st.cache_data(max_entries=16, show_spinner=False)
def heldout(ref: ModelRef) -> list:
    """The held-out pairs kept in a seq2seq folder (empty when it keeps none)."""
    from seqviz.seq2seq.checkpoints import load_heldout

    return load_heldout(ref.path)


@cached(st.cache_data, N_("Decoding the held-out set teacher-forced and free-running..."), max_entries=32)
def dataset_view(ref: ModelRef, n: int) -> dict:
    """Error curves and the summary of one model (or snapshot) on its first ``n`` held-out pairs: read from
    the folder's exposure.json when it was measured on these weights, else computed."""
    from seqviz.introspect import exposure as ex

    shipped = ex.read_study(ref.path, ref.snapshot, n)
    if shipped is not None:
        return {k: shipped[k] for k in ("by_position", "after", "matrix", "summary", "first_errors")}
    return ex.dataset_view(model(ref), heldout(ref.at(None))[:n])


@cached(st.cache_data, N_("Decoding with greedy, beam search and sampling..."), max_entries=16)
def strategies(ref: ModelRef, n: int, ks: tuple[int, ...]):
    """BLEU and time per sentence of each strategy: exposure.json's table when it holds these settings."""
    from seqviz.decoding import strategy_table
    from seqviz.introspect.exposure import shipped_strategies

    shipped = shipped_strategies(ref.path, ref.snapshot, n, ks)
    return shipped if shipped is not None else strategy_table(model(ref), heldout(ref.at(None))[:n], ks=ks)


# One sentence on pages/exposure_bias.py: each widget change reuses what it has computed before.
@st.cache_data(max_entries=128, show_spinner=False)
def translation_run(ref: ModelRef, src: str, gold: tuple[str, ...]) -> dict:
    """``seqviz.introspect.exposure.compare_translation`` of one sentence, cached."""
    from seqviz.introspect.exposure import compare_translation

    return compare_translation(model(ref), src, list(gold))


@st.cache_data(max_entries=128, show_spinner=False)
def injection(ref: ModelRef, src: str, gold: tuple[str, ...], k: int, token: str | None) -> dict:
    """``seqviz.introspect.exposure.inject_error``, cached per position and token."""
    from seqviz.introspect.exposure import inject_error

    return inject_error(model(ref), src, list(gold), k, token)


@st.cache_data(max_entries=64, show_spinner=False)
def model_comparison(refs: tuple[tuple[str, ModelRef], ...], src: str, gold: tuple[str, ...], k: int | None = None,
                     token: str | None = None):
    """``seqviz.introspect.exposure.compare_models`` of (name, ref) pairs, cached."""
    from seqviz.introspect.exposure import compare_models

    return compare_models({name: model(r) for name, r in refs}, src, list(gold), k, token)


@st.cache_data(max_entries=64, show_spinner=False)
def beam(ref: ModelRef, src: str, gold: tuple[str, ...], k: int) -> dict:
    """``seqviz.decoding.beam_view`` of one sentence, cached per beam size."""
    from seqviz.decoding import beam_view

    return beam_view(model(ref), src, list(gold), k)


# ------------------------------------------------------------------ traces and projections (trajectories, gates)
@st.cache_resource(max_entries=32, show_spinner=False)
def trace(ref: ModelRef, ids: tuple[tuple[int, ...], ...]):
    """``model.trace`` of a batch of id sequences (right-padded), shared read-only."""
    return model(ref).trace([list(s) for s in ids])


@cached(st.cache_resource, N_("Reading the reference sample..."), max_entries=8)
def reference_trace(ref: ModelRef):
    """(the model's trace of the projection reference sample, where the sample came from), shared read-only.

    One trace holds every layer's h, so fitting another layer's (or method's) projection does not
    read the sample again (0.35-0.4 s with every gate for a shipped LM on the 2-core server, measured).
    """
    from seqviz.introspect.projection import reference_texts

    m = model(ref)
    texts, source = reference_texts()
    names = ["mask"] + [f"layers.{i}.h" for i in range(m.config.n_layers)]  # h only: fused kernels, no gates
    return m.trace(texts, names=names), source


@cached(st.cache_resource, N_("Fitting the projection on the reference sample..."), max_entries=24)
def projection(ref: ModelRef, layer: int, method: str, dims: int):
    """A projection of ``layers.{layer}.h`` fitted once on the reference sample and kept."""
    from seqviz.introspect.projection import fit_projection, valid_states

    trace, source = reference_trace(ref)
    info = {"checkpoint": ref.path, "snapshot": ref.snapshot, "layer": layer, "sample": source}
    return fit_projection(valid_states(trace, layer), method, dims, info=info)


@st.cache_data(max_entries=64, show_spinner=False)
def trajectory(ref: ModelRef, space: ModelRef, layer: int, method: str, dims: int, ids: tuple[tuple[int, ...], ...]):
    """Projected trajectory frame of ``ids`` read by ``ref``, in the space fitted on ``space``."""
    from seqviz.introspect.projection import trajectory_frame

    return trajectory_frame(trace(ref, ids), projection(space, layer, method, dims), layer)


@cached(st.cache_resource, N_("Reading a corpus sample..."), max_entries=8)
def sample_trace(ref: ModelRef):
    """The model's trace of the corpus sample used for saturation and the unit finder."""
    from seqviz.introspect.projection import reference_texts

    return model(ref).trace(reference_texts(SAMPLE_CHUNKS, SAMPLE_LENGTH)[0])


@cached(st.cache_data, N_("Counting saturated gates over a corpus sample..."), max_entries=8)
def saturation(ref: ModelRef, lo: float, hi: float):
    """Karpathy-style saturation fractions per unit, gate and layer over the corpus sample."""
    from seqviz.introspect.gates import saturation_counts, saturation_frame

    cfg = model(ref).config
    return saturation_frame(saturation_counts(sample_trace(ref), cfg.cell, cfg.n_layers, lo, hi))


@st.cache_data(max_entries=16, show_spinner=False)
def unit_ranking(ref: ModelRef, layer: int, signal: str):
    """Every (feature, unit) pair of one signal ranked by |r| over the corpus sample; and N tokens."""
    import pandas as pd

    from seqviz.introspect.gates import row_tokens, signal_key
    from seqviz.introspect.units import rank_units, text_features

    t = sample_trace(ref)
    values = t[signal_key(layer, signal)][t["mask"]].double().numpy()
    # features per text, so a bracket left open at the end of one chunk does not leak into the next
    features = pd.concat([text_features(row_tokens(t, b)) for b in range(len(t["mask"]))], ignore_index=True)
    return rank_units(values, features, top=None), len(values)


@st.cache_data(max_entries=16, show_spinner=False)
def what_if_gates(ref: ModelRef, ids: tuple, layer: int, delta: float):
    """``seqviz.introspect.memory.what_if_gates``: the retention gate [T, U] of ``layer`` with its bias shifted."""
    from seqviz.introspect.memory import what_if_gates as shifted

    return shifted(model(ref), ids, layer, delta)


@cached(st.cache_resource, N_("Reading the whole search text (once per model and layer)..."), max_entries=2)
def state_index(ref: ModelRef, layer: int):
    """h of one layer over the whole held-out corpus, for the pattern search."""
    from seqviz.introspect.projection import corpus_text
    from seqviz.introspect.units import build_state_index

    text, source = corpus_text()
    index = build_state_index(model(ref), text, layer)
    index.info["source"] = source
    return index


# ------------------------------------------------------------------ gradient flow (pages/gradient_flow.py)
@cached(st.cache_data, N_("Backpropagating every loss to every earlier step..."), max_entries=64)
def curves(ref: ModelRef, text: str, max_tokens: int, layer: int = -1, wrt: str = "h", edit: tuple = ()):
    """(G matrix, by-distance table, tokens, info) of one model; ``edit``: an ``edited_copy`` argument
    (name, value), applied to a private copy (the shared model is never changed)."""
    from seqviz.introspect import gradients as gr

    m = model(ref)
    ids, pieces = token_ids(m, text, max_tokens)
    info = {}
    if edit:
        m = gr.edited_copy(m, **{edit[0]: edit[1]})
        info = {"spectrum": gr.recurrent_spectrum(m, layer if layer >= 0 else m.config.n_layers - 1)}
    G = gr.gradient_matrix(m, ids, layer=layer, wrt=wrt)
    return G, gr.by_distance(G), pieces, info


@st.cache_data(max_entries=64, show_spinner=False)
def forget(ref: ModelRef, text: str, max_tokens: int, layer: int):
    from seqviz.introspect.gradients import forget_product

    ids, _pieces = token_ids(model(ref), text, max_tokens)
    return forget_product(model(ref).trace(ids, names=[f"layers.{layer}.gates.forget"])
                          [f"layers.{layer}.gates.forget"][0])


@st.cache_data(max_entries=64, show_spinner=False)
def connectivity(ref: ModelRef, text: str, max_tokens: int, target: int):
    from seqviz.introspect.gradients import connectivity as conn

    ids, _pieces = token_ids(model(ref), text, max_tokens)
    return conn(model(ref), ids, target)


@st.cache_data(max_entries=16, show_spinner=False)
def linear_chain(ref: ModelRef, ids: tuple):
    """``clipping.linear_chain`` once per model and text: at ρ = 1; any other ρ rescales it exactly."""
    from seqviz.introspect import clipping as cl

    return cl.linear_chain(model(ref), ids)


@st.cache_data(max_entries=64, show_spinner=False)
def radius_bench(ref: ModelRef, ids: tuple, rho: float):
    """(linear chain by distance, trained RNN by distance, numbers) with the top W_hh at spectral radius ``rho``."""
    from seqviz.introspect import clipping as cl
    from seqviz.introspect import gradients as gr

    lin = linear_chain(ref, ids)
    tanh = cl.tanh_chain(model(ref), ids, rho, lin["rho_trained"])
    info = {k: v for k, v in {**lin, **tanh}.items() if k not in ("G1", "G")}
    return gr.by_distance(cl.scale_chain(lin["G1"], rho)), gr.by_distance(tanh["G"]), info


@st.cache_data(max_entries=1, show_spinner=False)
def clipping_corpus() -> tuple[str, bool]:
    """The clipping run's training slice, and whether it is the held-out plays (else the shipped sample)."""
    from seqviz.introspect.projection import corpus_text

    text, source = corpus_text()
    return text[:20000], source.startswith("held-out")


@st.cache_data(max_entries=32, show_spinner=False)
def clipping_run(clip: float | None, lr: float, seed: int):
    """One ``clipping.train_run``; the unclipped run is shared by every threshold."""
    from seqviz.introspect import clipping as cl

    return cl.train_run(clipping_corpus()[0], clip, lr=lr, seed=seed)


# ------------------------------------------------------------------ charts
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
        # Unvalidated: the JSON-schema check is a third of the cost (measured 0.03-0.08 s per chart) and
        # seqviz/charts' own tests validate every builder's output.
        return on_canvas(chart.to_dict(validate=False))


@st.cache_resource(max_entries=128, show_spinner=False)
def view_spec(maker: str, *args) -> dict:
    """``appkit.sections.<module>.<function>(*args)``: a page's spec made from cached parts, kept under
    its small arguments (model refs, numbers, names) and shared, never changed (read-only).

    ``chart_spec`` keys on the DataFrames a chart is drawn from: finding a kept spec there costs
    hashing them (~5 ms a frame, measured; two or three per chart). A page that knows a chart by a
    few small arguments asks here instead; the datasets' Arrow form is made at the same time, so a
    background prefetch of the view leaves the page only the sending (``show``).
    """
    module, name = maker.split(".")
    spec = getattr(importlib.import_module(f"appkit.sections.{module}"), name)(*args)
    for key, values in spec.get("datasets", {}).items():
        _arrow(key, values)
    return spec


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

    Streamlit converts every named dataset of a spec to Arrow on each draw (~3-15 ms each, three per
    trajectory chart, measured); it passes bytes through unchanged. ``spec`` itself is not changed.
    """
    datasets = spec.get("datasets")
    if datasets:
        sent = {}
        for key, values in datasets.items():
            converted = _arrow(key, values)
            sent[key] = values if converted is None else converted
        spec = {**spec, "datasets": sent}
    return where.vega_lite_chart(spec, **kwargs)


CANVAS_ROWS = 500  # data rows in a spec above which the browser draws it on a canvas, not as SVG


def on_canvas(spec: dict) -> dict:
    """``spec`` drawn on a canvas (vega-embed's ``usermeta.embedOptions.renderer``) when its datasets hold
    more than ``CANVAS_ROWS`` rows, unless it names a renderer; a canvas spec also leaves out the
    per-mark ARIA descriptions (``config.aria = false``), which only SVG output carries.

    Streamlit's own switch to a canvas counts one layer's marks and starts at 2,000; a trajectory chart
    is ~650 SVG nodes (its reference cloud, a layer of up to 600 points) and the trajectories page draws
    four. As SVG, chromium spent ~1 s of its main thread on a warm visit of that page (measured with
    DevTools' Performance metrics on the 2-core machine, server 0.16 s). Exports (SVG, PNG) do not
    read ``usermeta``; hover, tooltips and selections work the same on a canvas.

    The descriptions are one string per mark built by Streamlit's expression interpreter (it runs
    Vega's expressions without compiling them), formatting every field: left out, the 4,950-cell
    gradient heat map ran its dataflow in 214 ms instead of 361 ms (Vega 6 in node, this machine).
    """
    rows = sum(len(v) for v in spec.get("datasets", {}).values() if isinstance(v, list))
    meta = spec.get("usermeta") or {}
    if rows > CANVAS_ROWS and "renderer" not in (meta.get("embedOptions") or {}):
        spec["usermeta"] = {**meta, "embedOptions": {**(meta.get("embedOptions") or {}), "renderer": "canvas"}}
        spec["config"] = {**(spec.get("config") or {}), "aria": False}
    return spec
