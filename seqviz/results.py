"""Views shipped with a checkpoint: what its pages open on, drawn in each language, read back without torch.

``results.json`` in a checkpoint folder holds, per view (function, choices, language), the chart's
Vega-Lite spec, the facts its captions quote and the numbers behind it, so a page opened from a
shared link on a freshly started server draws its first charts before torch is imported. Written by
``seqviz precompute`` as a fresh clone computes them (on the passage shipped with seqviz, where the
corpus sample is read); used only while the files it was measured on (config, vocabulary, weights)
are unchanged (a view of a training snapshot while that snapshot's file is, too); a view that read the reference text (the corpus
sample) only while that is the same (not once the Shakespeare corpus is fetched).
"""

from __future__ import annotations

import functools
import json
import platform
import threading
from dataclasses import dataclass
from pathlib import Path

from seqviz.files import sha1_of

RESULTS_FILE = "results.json"
MEASURED_WITH = ("config.json", "vocab.json", "src_vocab.json", "tgt_vocab.json", "model.safetensors")  # a missing one: None
_lock = threading.Lock()
_read: dict[str, tuple] = {}  # folder -> (its files' stat key, {view key: entry} or None)


@dataclass(frozen=True)
class Peer:
    """A checkpoint a shipped view compares with (a ``models=`` choice): it enters the view's key as its folder's
    name and the SHA-1s of its files, so the view is used only while that checkpoint is unchanged too."""

    folder: Path

    def key(self) -> dict:
        return {"checkpoint": Path(self.folder).name,
                "files": {name: sha1_of(Path(self.folder) / name) for name in MEASURED_WITH}}


@dataclass(frozen=True)
class Snapshot:
    """The training snapshot a view was computed on (its ``at_snapshot`` key entry): the weights file's name and SHA-1,
    so the view is used only while that file is unchanged (the folder's own files are checked as for any view)."""

    folder: Path
    step: int

    def key(self) -> dict:
        path = Path(self.folder) / "snapshots" / f"step-{int(self.step)}.safetensors"
        return {"file": path.name, "sha1": _file_sha1(str(path), *_stat(path))}


def _stat(path: Path) -> tuple:
    try:
        st = path.stat()
        return st.st_mtime_ns, st.st_size
    except OSError:
        return None, None


@functools.lru_cache(maxsize=256)
def _file_sha1(path: str, _mtime, _size) -> str | None:
    """``sha1_of``, once per (file, mtime, size): a page reading a snapshot's shipped view hashes its file once."""
    return sha1_of(path)


def peer_key(folder) -> dict | None:
    """``Peer(folder).key()`` from the folder's own shipped results (its files' SHA-1s, checked when they were
    read): None when it ships none that fit, and a view comparing with it is then computed."""
    body = _body(Path(folder))
    return None if body is None else {"checkpoint": Path(folder).name, "files": body["files"]}


def view_key(fn, choices: dict, lang: str) -> str:
    """The key of one view: its declared name with its version (``seqviz.views.registry.Declared.key``), its
    choices (sorted, as JSON) and the language. A view whose chart changed shape bumps its declared version, so
    results written before are not read for it (it is computed until ``seqviz precompute`` writes it again)."""
    from seqviz.views.registry import declared

    return f"{declared(fn).key}|{json.dumps(_plain(choices), sort_keys=True)}|{lang}"


def _plain(value):
    if isinstance(value, (Peer, Snapshot)):
        return value.key()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    return value


def _float32(value):
    """Numbers at float32's precision (7 significant digits): what the model computed, in half the characters."""
    if isinstance(value, float):
        return float(f"{value:.7g}")
    if isinstance(value, dict):
        return {k: _float32(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_float32(v) for v in value]
    return value


def measured_with(folder) -> dict:
    """{file name: SHA-1} of the files a shipped view depends on (None for a missing one), and the reference
    text its corpus-sample views read (``seqviz.introspect.projection.reference_source``)."""
    from seqviz.introspect.projection import reference_source

    return {**{name: sha1_of(Path(folder) / name) for name in MEASURED_WITH}, "reference text": reference_source()}


def provenance() -> dict:
    """How the shipped numbers were computed: float32 on this CPU, one thread, one text per batch."""
    import torch

    return {"torch": torch.__version__, "dtype": "float32", "device": "cpu", "threads": torch.get_num_threads(),
            "machine": platform.machine(), "batch": "one text per trace"}


def dumps_by_line(body: dict) -> str:
    """``body`` as JSON with each entry of its "views" and "datasets" on a line of its own, in key order: a
    precompute that rebuilds one view changes that view's lines only, so a commit of shipped results carries the
    views that changed, not the whole file (one line per file rewrote 12 MB of results for one chart)."""
    def one(value) -> str:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))

    parts = []
    for name, value in body.items():
        if name in ("views", "datasets") and isinstance(value, dict):
            rows = ",\n".join(f"{one(key)}:{one(value[key])}" for key in sorted(value))
            parts.append(f"{one(name)}:{{\n{rows}\n}}")
        else:
            parts.append(f"{one(name)}:{one(value)}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def write_views(folder, entries: dict) -> Path:
    """``results.json`` of ``entries`` ({view key: {"spec", "facts", "data", "title"}}, ``data`` a DataFrame or
    None). A chart's rows are kept once per file (every language draws the same ones), at float32's
    precision; its numbers as a table only for a view without a chart (a chart's are made again when a
    CSV is asked for)."""
    folder = Path(folder)
    views, datasets = {}, {}
    for key, entry in entries.items():
        spec, data = entry.get("spec"), entry.get("data")
        names = []
        if spec is not None:
            spec = dict(spec)
            for name, rows in (spec.pop("datasets", None) or {}).items():
                datasets[name] = _float32(rows)
                names.append(name)
        views[key] = {"spec": spec, "datasets": names, "facts": _plain(entry.get("facts") or {}),
                      "reads_reference": bool(entry.get("reads_reference", True)),
                      "title": entry.get("title", ""),
                      "data": _split(data) if data is not None and spec is None else None}
    body = {"measured_with": measured_with(folder), "computed": provenance(), "views": views, "datasets": datasets}
    path = folder / RESULTS_FILE
    path.write_text(dumps_by_line(body), encoding="utf-8")
    with _lock:
        _read.pop(str(folder.resolve()), None)
    return path


def _split(data) -> dict:
    """A view's table as pandas' split JSON (a table read back from a results file is one already)."""
    return data if isinstance(data, dict) else json.loads(data.to_json(orient="split", index=False))


def read_entries(folder) -> dict:
    """Every entry the folder's results hold while the files they were measured on (and the reference text) are
    unchanged, as ``write_views`` takes them: what ``seqviz precompute`` keeps of a view whose key is the same."""
    body = _body(Path(folder))
    if body is None or not body["same_reference"]:
        return {}
    return {key: read_view(folder, key) for key in body["views"]}


def ships(folder) -> bool:
    """Whether the folder ships results that still fit its files (its final weights can be drawn without torch)."""
    return _body(Path(folder)) is not None


def read_view(folder, key: str) -> dict | None:
    """The shipped entry for ``key`` ({"spec", "facts", "title", "data": split-JSON or None}), or None when the
    folder ships none, it is unreadable, or the config, vocabulary or weights changed since it was written."""
    body = _body(Path(folder))
    raw = None if body is None else body["views"].get(key)
    entry = None if raw is None else json.loads(raw)
    if entry is None or entry.get("reads_reference", True) and not body["same_reference"]:
        return None
    spec = entry["spec"]
    if spec is not None and entry["datasets"]:
        spec = {**spec, "datasets": {name: json.loads(body["datasets"][name]) for name in entry["datasets"]}}
    return {**entry, "spec": spec}


def _body(folder: Path) -> dict | None:
    """The folder's results.json, parsed once per change of its files; None when it ships none that fit."""
    path = folder / RESULTS_FILE
    from seqviz.introspect.projection import reference_source

    try:
        stats = tuple((n, (folder / n).stat().st_mtime_ns, (folder / n).stat().st_size)
                      for n in (RESULTS_FILE, *MEASURED_WITH) if (folder / n).exists()) + (reference_source(),)
    except OSError:
        return None
    name = str(folder.resolve())
    with _lock:
        kept = _read.get(name)
    if kept is None or kept[0] != stats:
        body = None
        try:
            found = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
            now, measured = measured_with(folder), dict(found.get("measured_with") or {}) if found else {}
            same = measured.pop("reference text", None) == now.pop("reference text")
            if found is not None and measured == now:
                # each view and dataset kept as its JSON text: strings, not objects every full garbage collection
                # of the server walks (seqviz.lessons.shipped measured that cost per visitor)
                body = {"views": {k: json.dumps(v, ensure_ascii=False) for k, v in found["views"].items()},
                        "datasets": {k: json.dumps(v) for k, v in found["datasets"].items()}, "same_reference": same,
                        "files": measured}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            body = None
        kept = (stats, body)
        with _lock:
            _read[name] = kept
    return kept[1]
