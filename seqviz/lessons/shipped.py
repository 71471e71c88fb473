"""Lesson views shipped with seqviz: every step's view at each option of its control (a slider: its default), in
every language.

``seqviz/lessons/data/results.json`` holds, per step, the chart's Vega-Lite spec, the numbers its notes
quote and its table, so a class opening a step on a freshly started server sees it without a pass
over a model (nor, for most steps, importing torch). Written by ``python -m seqviz precompute --lessons``
as a fresh clone computes them (on the shipped passage where a step reads the corpus); used only
while the checkpoints a step reads (config, vocabulary, weights, card) and the reference text are the
ones it was measured on; a step that reads the reference text (the held-out plays once fetched, else the
shipped passage) only while that is the one it was measured on, so fetching the corpus leaves the other steps
shipped. Steps that train a model on the fly (``LIVE``) are not shipped: SGD at a large learning rate
amplifies another CPU's rounding into another run.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

from seqviz.files import sha1_of
from seqviz.results import dumps_by_line

FILE = Path(__file__).with_name("data") / "results.json"
CHECKED = ("config.json", "vocab.json", "model.safetensors", "card.json")
LIVE = ("clipping",)  # views that train on the fly: computed where they are shown
_lock = threading.Lock()
_read: dict[str, tuple] = {}  # "body" -> (stat key, parsed body or None)


def step_key(step, value, lang: str) -> str:
    """One shipped view: the step's view, params, checkpoints, control value and language."""
    return json.dumps([step.view, step.params, list(step.models), list(step.cards), value, lang], sort_keys=True,
                      ensure_ascii=False)


def fingerprint(folders: dict) -> dict:
    """{checkpoint name: {file: SHA-1}} of the folders the steps read, and the reference text now."""
    from seqviz.introspect.projection import reference_source

    return {"reference text": reference_source(),
            **{name: {f: sha1_of(Path(folder) / f) for f in CHECKED} for name, folder in sorted(folders.items())}}


def shipped_values(step) -> tuple:
    """The control values a step ships: every option of a control that has a few (a class moves it through them
    all, and each would otherwise load the models: 1-4 s on a fresh server), the default of a slider."""
    return tuple(step.control.options) if step.control.options else (step.control.default,)


def write(folders: dict, path: Path = FILE, everything: bool = False, log=print) -> Path:
    """Every shippable step at its shipped values in every language; ``folders``: checkpoint name -> folder. A step
    already shipped under its key (its view, params, checkpoints, value) while the checkpoints and the reference
    text are those it was measured on is kept as written, unless ``everything``: a changed step is computed alone."""
    import torch

    from seqviz.files import read_json
    from seqviz.introspect.projection import passage_only, reading_reference
    from seqviz.lessons.load import lessons
    from seqviz.lessons.views import run_view
    from seqviz.registry import load
    from seqviz.text import LANGUAGES, in_language
    from seqviz.views.spec import enable_cjk_theme

    torch.set_num_threads(1)  # as the app runs
    enable_cjk_theme()  # the app's font stack, as its own charts get it
    models, views, computed = {}, {}, 0
    steps = [step for lesson in lessons().values() for step in lesson.steps if step.view not in LIVE]
    used = {name for step in steps for name in (*step.models, *step.cards)}
    with passage_only():
        measured = fingerprint({n: folders[n] for n in used})
        kept = {} if everything else _previous(path, measured)
        for step in steps:
            cards = {name: read_json(Path(folders[name]) / "card.json") for name in step.cards}
            for value in shipped_values(step):
                keys = [step_key(step, value, lang) for lang in LANGUAGES]
                if all(key in kept for key in keys):
                    views.update({key: kept[key] for key in keys})
                    continue
                computed += 1
                for name in step.models:
                    models.setdefault(name, load(folders[name]))
                with reading_reference() as read:  # over every language: a later one may find the sample kept
                    for key, lang in zip(keys, LANGUAGES):
                        with in_language(lang):
                            view = run_view(step.view, {n: models[n] for n in step.models}, cards, value,
                                            step.params, step.choice, step.table)
                        views[key] = {"spec": view.spec(), "numbers": view.numbers, "table": None if view.table
                                      is None else json.loads(view.table.to_json(orient="split"))}
                for key in keys:
                    views[key]["reads_reference"] = bool(read)
        body = {"measured_with": measured, "views": views}
    log(f"lesson views: {computed} steps' values computed, {len(views) // len(LANGUAGES) - computed} kept as shipped")
    path.write_text(dumps_by_line(body), encoding="utf-8")
    with _lock:
        _read.clear()
    return path


def _previous(path: Path, measured: dict) -> dict:
    """The views of the file at ``path`` when it was measured on ``measured`` (else none: all are computed again)."""
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return found.get("views", {}) if found.get("measured_with") == measured else {}


def read(step, value, lang: str, folders: dict, path: Path = FILE):
    """The shipped (spec, numbers, table) of a step at ``value`` in ``lang``, or None: not shipped, or a
    checkpoint or the reference text changed since (``folders``: checkpoint name -> the folder used now)."""
    import pandas as pd

    body, same_reference = _body(path, folders)
    raw = None if body is None else body["views"].get(step_key(step, value, lang))
    entry = None if raw is None else json.loads(raw)
    if entry is None or entry.get("reads_reference", True) and not same_reference:
        return None
    table = None if entry["table"] is None else pd.DataFrame(entry["table"]["data"], columns=entry["table"]["columns"])
    return entry["spec"], entry["numbers"], table


def _body(path: Path, folders: dict):
    """(the parsed file while the checkpoints it was measured on are unchanged, or None; whether the reference
    text is the one it was measured on), checked once per change of the files' stats."""
    from seqviz.introspect.projection import reference_source

    try:
        stats = (path.stat().st_mtime_ns, reference_source(),
                 tuple((n, f, (Path(d) / f).stat().st_mtime_ns) for n, d in sorted(folders.items()) for f in CHECKED
                       if (Path(d) / f).exists()))
    except OSError:
        return None, False
    with _lock:
        kept = _read.get("body")
    if kept is None or kept[0] != stats:
        body, same = None, False
        try:
            found = json.loads(path.read_text(encoding="utf-8"))
            names = {n: folders[n] for n in found["measured_with"] if n != "reference text" and n in folders}
            now = fingerprint(names)
            measured = dict(found["measured_with"])
            same = measured.pop("reference text", None) == now.pop("reference text")
            if measured == now:  # each view kept as its JSON text: one string, not a million objects that
                # every full garbage collection of the server would walk (2.6 MB of specs cost each visitor ~0.03 s)
                body = {"views": {k: json.dumps(v, ensure_ascii=False) for k, v in found["views"].items()}}
        except (OSError, ValueError, KeyError, TypeError):
            body = None
        kept = (stats, body, same)
        with _lock:
            _read["body"] = kept
    return kept[1], kept[2]
