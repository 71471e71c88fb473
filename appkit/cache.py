"""The app's only caches: shared read-only models, the checkpoint catalogue, per-text results.

Models are cached with ``st.cache_resource`` and shared by every visitor, so they are never
mutated after loading: eval mode, ``requires_grad`` off, no hooks. The cache key is the
resolved path plus a content fingerprint, so overwriting a checkpoint in place (re-training
into the same folder) loads the new weights instead of serving stale ones.

torch is imported lazily (inside the loaders) so pages without a model start fast.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import streamlit as st

from appkit.registry import ROOT

MAX_MODELS = 8  # models held at once across all sessions (~4 MB each for the shipped LMs)
TORCH_THREADS = int(os.environ.get("SEQVIZ_TORCH_THREADS", "1"))


def checkpoint_roots() -> list[Path]:
    """Folders holding shipped checkpoints: ``$SEQVIZ_CHECKPOINTS`` (os.pathsep list) or ./checkpoints."""
    env = os.environ.get("SEQVIZ_CHECKPOINTS")
    if env:
        return [Path(p).expanduser() for p in env.split(os.pathsep) if p]
    return [ROOT / "checkpoints"]


@dataclass(frozen=True)
class Shipped:
    """A checkpoint folder found under a root, with its card (empty dict if it has none)."""

    name: str
    path: str
    model_type: str
    card: dict = field(default_factory=dict, hash=False, compare=False)


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
        for folder in sorted(root.glob("*/config.json")):
            card = folder.parent / "card.json"
            key.append((str(folder), folder.stat().st_mtime_ns, card.stat().st_mtime_ns if card.exists() else 0))
    return tuple(key)


@st.cache_data(max_entries=4, show_spinner=False)
def _catalogue(roots: tuple[str, ...], fingerprint: tuple) -> list[Shipped]:
    from seqviz.hf_seq2seq import model_family  # torch-free

    found = []
    for root in map(Path, roots):
        for config in sorted(root.glob("*/config.json")):
            data = _read_json(config)
            if not data:
                continue  # unreadable config: the folder is not offered (loading it would fail)
            # Recurrent LMs written before model_type existed have none: that is the default;
            # a transformers encoder-decoder (marian, t5, bart ...) is listed as seq2seq.
            model_type = model_family(data)
            found.append(Shipped(config.parent.name, str(config.parent.resolve()), model_type,
                                 _read_json(config.parent / "card.json")))
    return found


def list_checkpoints(model_type: str | None = None, roots=None) -> list[Shipped]:
    """Shipped checkpoints (optionally of one model_type) under ``roots`` (default: checkpoint_roots())."""
    roots = checkpoint_roots() if roots is None else [Path(r) for r in roots]
    items = _catalogue(tuple(map(str, roots)), _listing_key(roots))
    return [c for c in items if model_type is None or c.model_type == model_type]


def content_key(path: Path) -> str:
    """Fingerprint of a checkpoint: config/spec bytes + name, size and mtime of every weight file."""
    h = hashlib.sha1()
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file())
    else:
        files = [path, path.with_suffix(".json"), path.parent / "spec.json"]
    for f in files:
        if not f.is_file():
            continue
        stat = f.stat()
        h.update(f"{f.name}:{stat.st_size}:{stat.st_mtime_ns};".encode())
        if f.suffix == ".json" and stat.st_size < (1 << 20):
            h.update(f.read_bytes())
    return h.hexdigest()


@st.cache_resource(max_entries=MAX_MODELS, show_spinner="Loading checkpoint...")
def _load(path: str, key: str):
    import torch

    from seqviz.loading import load_any

    # One intra-op thread: the app's tensors are small, and several threads per request
    # oversubscribe a small server (measured 20x slower sampling on a loaded 2-core machine).
    torch.set_num_threads(TORCH_THREADS)

    model = load_any(path)
    model.eval()
    model.requires_grad_(False)
    # Where it came from, so per-text caches can key on (path, key) instead of the model.
    model.source_path, model.source_key = path, key
    return model


def load_model(path):
    """The model at ``path`` (folder or weight file), loaded once per content and shared read-only.

    Raises ``seqviz.checkpoints.CheckpointError`` with a readable message for bad files.
    """
    p = Path(path).expanduser()
    if not p.exists():
        from seqviz.checkpoints import CheckpointError

        raise CheckpointError(path, "no such file or folder")
    p = p.resolve()
    return _load(str(p), content_key(p))


# ------------------------------------------------------------------ per-text results
@st.cache_data(max_entries=256, show_spinner=False)
def score_text(path: str, key: str, text: str, max_tokens: int):
    """``seqviz.introspect.language.score_text`` for the model at (path, key), cached per text."""
    from seqviz.introspect.language import score_text as score

    return score(_load(path, key), text, max_tokens=max_tokens)


@st.cache_data(max_entries=256, show_spinner=False)
def continue_text(path: str, key: str, text: str, n: int, temperature: float, seed: int,
                  max_tokens: int) -> str:
    """``seqviz.introspect.language.continue_text`` cached per (model, prompt, settings)."""
    from seqviz.introspect.language import continue_text as cont

    return cont(_load(path, key), text, n=n, temperature=temperature, seed=seed, max_tokens=max_tokens)


@st.cache_data(max_entries=64, show_spinner="Translating...")
def hf_translate(path: str, key: str, text: str) -> dict:
    """``seqviz.hf_seq2seq.translate_text`` for the transformers model at (path, key), cached per text."""
    from seqviz.hf_seq2seq import translate_text

    return translate_text(_load(path, key), text)


# ------------------------------------------------------------------ word vectors (pages/word2vec.py)
# ``key`` identifies the vectors (a checkpoint's content_key or an upload's SHA-1); the vectors
# themselves are passed as ``_wv`` so Streamlit does not hash a [V, D] matrix on every call.
@st.cache_resource(max_entries=2, show_spinner="Reading the vector file...")
def vectors_from_upload(digest: str, _data: bytes, name: str):
    """``seqviz.word2vec.formats.load_vector_bytes`` once per uploaded file (shared, read-only)."""
    from seqviz.word2vec.formats import load_vector_bytes

    wv = load_vector_bytes(_data, name)
    wv.source_path, wv.source_key = name, digest
    return wv


@st.cache_data(max_entries=16, show_spinner="Computing the word map...")
def word_map(key: str, _wv, n: int, method: str, perplexity: float, seed: int, extra: tuple):
    """``seqviz.introspect.wordmap.word_map`` cached per (vectors, settings, extra words)."""
    from seqviz.introspect.wordmap import word_map as make

    return make(_wv, n=n, method=method, perplexity=perplexity, seed=seed, extra_words=extra)


@st.cache_data(max_entries=8, show_spinner="Evaluating on the Google analogies, WordSim-353 and SimLex-999...")
def evaluate_vectors(key: str, _wv) -> dict:
    """``seqviz.word2vec.evaluate.evaluate_all`` cached per vectors."""
    from seqviz.word2vec.evaluate import evaluate_all

    return evaluate_all(_wv)


@st.cache_resource(max_entries=12, show_spinner="Loading the training snapshot...")
def model_at(path: str, key: str, step: int | None):
    """The model at ``path``, or its weights from training step ``step`` (shared, read-only)."""
    if step is None:
        return load_model(path)
    from seqviz.loading import load_any

    model = load_any(path, snapshot=step)
    model.eval()
    model.requires_grad_(False)
    model.source_path, model.source_key = path, key
    return model


def snapshots(path: str) -> list[int]:
    """Training steps whose weights the checkpoint folder keeps."""
    from seqviz.checkpoints import list_snapshots

    return list_snapshots(path)
