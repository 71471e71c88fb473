"""A view's chart as the Vega-Lite spec the app draws and ``seqviz precompute`` ships: one function for both.

The titles the chart builders write (``seqviz/charts``, English constants the catalogue extracts) are
translated here; data rows (tokens, model names) are left alone.
"""

from __future__ import annotations

import functools

from seqviz.export import CJK_FAMILIES

# Charts in the browser: Streamlit's own font for Latin text, then CJK families of each platform (macOS,
# Windows), then those the exported images use (seqviz.export), then the generic family.
CJK_FONT_STACK = ", ".join(f'"{f}"' for f in ("Source Sans", "Source Sans Pro", "PingFang SC", "Hiragino Sans GB",
                                              "Microsoft YaHei", *CJK_FAMILIES)) + ", sans-serif"
THEME = "seqviz-cjk"


def cjk_theme() -> dict:
    """An Altair theme whose only change is the CJK-capable font stack (Streamlit keeps its colours)."""
    return {"config": {"font": CJK_FONT_STACK}}


@functools.cache
def _register_cjk_theme() -> None:
    """Once per process: ``alt.theme.names()`` reads every installed package's entry points (~40 ms a call)."""
    import altair as alt

    if THEME not in alt.theme.names():
        alt.theme.register(THEME, enable=False)(cjk_theme)


def enable_cjk_theme() -> None:
    """Register (once per process) and enable the CJK font theme: the app's charts and the shipped ones alike."""
    import altair as alt

    _register_cjk_theme()
    if alt.theme.active != THEME:
        alt.theme.enable(THEME)


class Drawn:
    """A ``seqviz.views`` View made ready to draw: its chart as a Vega-Lite spec in the reader's language (``to_spec``),
    computed now or read from a checkpoint's shipped results (``seqviz.results``; ``compute`` makes the view then).

    ``spec`` None: the view draws no chart (its facts say why, or its data is a table). ``data`` is the View's
    DataFrame, built on first use when the view came from shipped results (a first chart needs no torch, no pandas).
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


def fast_altair() -> None:
    """Build this process's Altair charts without Altair's debug mode (call it before any chart is built).

    In debug mode (Altair's default) every schema object validates itself against the Vega-Lite
    schema when it is made, a third of the time a chart builder takes. Every builder's output is
    validated in tests/charts instead.
    """
    from altair.utils.schemapi import disable_debug_mode

    disable_debug_mode()


def to_spec(chart, gettext=None) -> dict:
    """``chart.to_dict`` unvalidated (``tests/charts`` validates every builder), on a canvas when it is large
    (``on_canvas``), its titles through ``gettext`` (``str -> str``) when given."""
    spec = on_canvas(chart.to_dict(validate=False))
    if gettext is not None:
        translate_titles(spec, gettext)
    return spec


def translated(chart, gettext):
    """A copy of an Altair chart or a Vega-Lite spec (its data rows shared, not copied) with its titles through
    ``gettext`` (``translate_titles``); a spec's tooltip fields without a title get their field's
    (``seqviz.charts.fields``: else the column name shows, in English)."""
    if isinstance(chart, dict):
        import copy

        from seqviz.charts.fields import titled

        chart = {k: (v if k in ("data", "datasets") else copy.deepcopy(v)) for k, v in chart.items()}
        titled(chart)
    else:
        chart = chart.copy(deep=True)
    translate_titles(chart, gettext)
    return chart


def translate_titles(node, gettext) -> None:
    """Every chart, axis, legend, header and tooltip title of a spec (a dict) or an Altair chart (a copy), in place,
    through ``gettext``; an empty title stays empty (gettext("") is the catalogue's header: a 3-D trajectory's
    untitled half showed it)."""
    _translate(node, lambda text: gettext(text) if text else text)


def _translate(node, tr) -> None:
    node = getattr(node, "_kwds", node)  # an Altair object: its keywords, as a spec holds them
    if isinstance(node, dict):
        for key, value in node.items():
            value = getattr(value, "_kwds", value) if key == "title" else value  # alt.TitleParams
            if key == "title" and isinstance(value, str):
                node[key] = tr(value)
            elif key == "title" and isinstance(value, list):
                node[key] = [tr(v) if isinstance(v, str) else v for v in value]
            elif key == "title" and isinstance(value, dict):
                value.update({k: tr(v) for k, v in value.items() if k in ("text", "subtitle") and isinstance(v, str)})
                _translate({k: v for k, v in value.items() if k not in ("text", "subtitle")}, tr)
            elif key in ("data", "datasets", "values"):
                continue  # data rows: tokens and names stay as they are
            else:
                _translate(value, tr)
    elif isinstance(node, list | tuple):
        for item in node:
            _translate(item, tr)


CANVAS_ROWS = 500  # data rows in a spec above which the browser draws it on a canvas, not as SVG


def on_canvas(spec: dict) -> dict:
    """``spec`` drawn on a canvas (vega-embed's ``usermeta.embedOptions.renderer``) when its datasets hold
    more than ``CANVAS_ROWS`` rows, unless it names a renderer; a canvas spec also leaves out the
    per-mark ARIA descriptions (``config.aria = false``), which only SVG output carries.

    Streamlit's own switch to a canvas counts one layer's marks and starts at 2,000, while a page of
    several charts of a few hundred marks each is already slow to draw as SVG. Exports (SVG, PNG) do not
    read ``usermeta``; hover, tooltips and selections work the same on a canvas. The descriptions are
    one string per mark that Streamlit's expression interpreter formats field by field.
    """
    rows = sum(len(v) for v in spec.get("datasets", {}).values() if isinstance(v, list))
    meta = spec.get("usermeta") or {}
    if rows > CANVAS_ROWS and "renderer" not in (meta.get("embedOptions") or {}):
        spec["usermeta"] = {**meta, "embedOptions": {**(meta.get("embedOptions") or {}), "renderer": "canvas"}}
        spec["config"] = {**(spec.get("config") or {}), "aria": False}
    return spec


def printable(spec: dict, width=720) -> dict:
    """A copy of a container-wide Vega-Lite spec with a fixed ``width`` (pixels, or {"step": n}) for a file.

    An exported SVG/PNG has no container: vl-convert would draw "container" at its 300 px default.
    """
    def fix(node):
        if isinstance(node, dict):
            out = {k: (v if k in ("data", "datasets") else fix(v)) for k, v in node.items() if k != "autosize"}
            if out.get("width") == "container":
                out["width"] = width
            return out
        if isinstance(node, list):
            return [fix(v) for v in node]
        return node

    return fix(spec)


def fits_by_rows(spec: dict) -> bool:
    """A column of plots (vconcat) whose rows are single or layered views: Vega-Lite fits it to the container's width
    (autosize fit-x), axes included. Streamlit fits only rows without layers and pads the others (a guard against
    nested concatenations, its issue 13410), which draws their axes past the column (issue 51: the memory knockout
    bars ran 74 px past a 940 px column)."""
    rows = spec.get("vconcat")
    return isinstance(rows, list) and not any(isinstance(r, dict) and {"hconcat", "vconcat", "concat", "facet",
                                                                       "repeat"} & set(r) for r in rows)
