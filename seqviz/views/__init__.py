"""Views: each thing a page, a lesson step, ``seqviz figure`` and the HTML export draws, as one function.

A view function is ``fn(model, **choices) -> View``: it computes on a loaded model (read-only: edits
go to copies) and returns the chart, the numbers behind it and the facts its caption quotes, so a
caption is formatted from the same numbers the chart draws. Choices are plain hashable values (ints,
strings, tuples of token ids), so an app can cache a view by (function, model, choices). Titles are
English msgids passed through ``seqviz.text._``; the app installs its translator around the call.
"""

from __future__ import annotations

import importlib
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd


@dataclass
class View:
    """What one view draws: its chart, the numbers behind it, the facts its captions quote."""

    chart: object  # an Altair chart from seqviz.charts (None: the view has nothing to draw, facts say why)
    data: pd.DataFrame | None = None  # the numbers behind the chart, one row per mark (CSV, the HTML file)
    facts: dict = field(default_factory=dict)  # name -> number/str/bool, quoted by captions and lesson notes
    title: str = ""  # the chart's name in English: download file names, its section in the HTML file


class deferred:  # noqa: N801 - used like a module
    """A module imported on first use (``gr = deferred("seqviz.introspect.gradients")``): a view module whose
    computations need torch imports without it, so a page reads that module's shipped views before torch is
    imported. ``importlib.import_module`` takes the import lock: safe from several script threads."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr):
        return getattr(importlib.import_module(self._name), attr)


_LOCK = threading.Lock()
_KEPT: "weakref.WeakKeyDictionary[object, OrderedDict]" = weakref.WeakKeyDictionary()
KEPT_PER_MODEL = 16  # results kept per model: a text's trace, a corpus pass, a what-if
_BUSY: "weakref.WeakKeyDictionary[object, dict]" = weakref.WeakKeyDictionary()  # (model, key) being computed


def memo(model, key: tuple, compute):
    """``compute()`` once per (model, key) for the views that share it (a trace, a pass over a corpus sample).

    Compute once, slice many: one trace holds every layer and gate, so a layer, order or position change
    reads it again instead of running the model. Kept while the model lives (a weak key), the last
    ``KEPT_PER_MODEL`` results per model; shared read-only, like the model. A caller asking for a result
    another thread is computing waits for it instead of computing it again (visitors of one server, or the
    app's background worker, share one computation).
    """
    while True:
        with _LOCK:
            kept = _KEPT.setdefault(model, OrderedDict())
            if key in kept:
                kept.move_to_end(key)
                return kept[key]
            busy = _BUSY.setdefault(model, {})
            running = busy.get(key)
            if running is None:
                running = busy[key] = threading.Event()
                break
        running.wait()  # then read what it kept (or, had it failed, compute it here)
    try:
        value = compute()
        with _LOCK:
            kept[key] = value
            while len(kept) > KEPT_PER_MODEL:
                kept.popitem(last=False)
        return value
    finally:
        with _LOCK:
            _BUSY.get(model, {}).pop(key, None)
        running.set()


def traced(model, ids: tuple[int, ...], layer: int | None = None, head: bool = False):
    """``model.trace`` of one id sequence (``memo``'d): what the views of one text share. While the whole trace is
    small (``seqviz.budget.whole``: every shipped model's at 1,000 tokens) it holds every name, so a layer, signal or
    position change slices it; beyond, it holds what ``layer`` draws (that layer's default leaves, and the head's
    names with ``head``): a model of real size never holds every layer of a text at once."""
    from seqviz import budget

    key = tuple(int(i) for i in ids)
    if layer is None or budget.whole(model, len(key)):
        return memo(model, ("trace", key), lambda: model.trace([list(key)]))
    names = budget.layer_names(model, layer, head)
    return memo(model, ("trace", key, int(layer), bool(head)), lambda: model.trace([list(key)], names=names))
