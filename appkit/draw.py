"""Drawing in the app: a view's spec on the page, its Download buttons and its HTML file.

A chart is sent as a cached Vega-Lite spec (``show``), its datasets in the Arrow form Streamlit would make of them,
made once per dataset. Files are made on click through ``seqviz.export`` (vl-convert, no browser): a page calls
``view = view_button(page, title, model)`` (the sidebar's HTML button), then ``draw_view(drawn, footnote, view)`` or
``export_buttons(chart, name, footnote, frame, view)`` under each chart. Presenter mode is the library's
(``seqviz.charts.presenter``).
"""

from __future__ import annotations

import copy
import json
import re
import threading
from contextlib import nullcontext

import streamlit as st

from appkit.i18n import N_, _, localize_chart
from seqviz.export import slug
from seqviz.views.spec import Drawn, fits_by_rows
from seqviz.charts.presenter import fit_titles

try:  # Altair's data transformer is process-global; Streamlit switches it under this lock
    from streamlit.elements.vega_charts import _altair_globals_lock as ALTAIR_LOCK
except ImportError:  # pragma: no cover - a Streamlit without it: at least serialise our own use
    ALTAIR_LOCK = threading.Lock()

_ARROW_LOCK = threading.Lock()
_ARROW: dict[str, bytes] = {}  # dataset name -> Arrow IPC bytes, oldest first
ARROW_BYTES = 64 << 20  # kept at most; the oldest go first


def arrow(name: str, values) -> bytes | None:
    """The Arrow IPC form Streamlit sends ``values`` in, made once per dataset name, or None for a dataset that is
    not a list of rows named by its content (Altair names each ``data-<md5 of its rows>``)."""
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
    """``where.vega_lite_chart(spec, **kwargs)`` (``where``: ``st``, a column, a tab), each dataset handed over as
    Arrow bytes (``arrow``), which Streamlit passes through. Streamlit edits the spec it is given in place and a
    cached spec is shared, so it gets a copy of everything but the rows."""
    datasets = spec.get("datasets")
    spec = copy.deepcopy({k: v for k, v in spec.items() if k != "datasets"})
    if kwargs.get("width") == "stretch" and isinstance(spec.get("width"), dict) and "step" in spec["width"]:
        # a step per token (``seqviz.charts.gates.token_width``): Streamlit would squeeze it into the column and Vega
        # drop labels; drawn at its own width, it scrolls in its own box (PAGE_CSS)
        kwargs["width"] = "content"
    if kwargs.get("width") == "stretch" and fits_by_rows(spec):
        spec.setdefault("autosize", {"type": "fit-x", "contains": "padding"})
    fit_titles(spec)
    if datasets:
        spec["datasets"] = {key: values if (made := arrow(key, values)) is None else made
                            for key, values in datasets.items()}
    return where.vega_lite_chart(spec, **kwargs)


# A chart's own controls (Vega-Lite selections bound to inputs, drawn by Vega under the chart) in the app's type and
# colour, on one wrapping row; a style-only st.html takes no room in the page.
BOUND_CSS = """<style>
.vega-bindings {display: flex !important; flex-wrap: wrap !important; gap: .3rem 2.5rem !important;
  margin-top: .4rem !important; font-size: 1rem !important;}
.vega-bindings .vega-bind-name {font-weight: 600 !important; margin-right: .6rem !important;}
.vega-bindings label {margin-right: .9rem !important; cursor: pointer;}
.vega-bindings input {accent-color: #c2410c; vertical-align: middle !important; cursor: pointer;}
.vega-bindings input[type=range] {width: 14rem !important; max-width: 55vw !important;}
</style>"""


def draw_view(drawn: Drawn, footnote: str, view: list | None = None, csv: bool = True, file_width=720,
              **kwargs) -> None:
    """A drawn view (``appkit.cache.view``) across the page and its Download popover (``footnote``: the page's
    state; ``view``: the page's HTML file; ``file_width``: a container-wide chart's width in a file). Its numbers
    are taken only when a file asks for them: a view drawn from shipped results loads no model for them."""
    from seqviz.views.spec import printable

    if any("bind" in p for p in drawn.spec.get("params", [])):
        st.html(BOUND_CSS)
    show(st, drawn.spec, **{"width": "stretch", **kwargs})
    export_buttons(printable(drawn.spec, file_width), drawn.title, footnote or "", lambda: drawn.data, view, csv)


# Every page's layout rules (app.py adds them once a run): a chart wider than its column (a concatenation, which
# cannot take the container's width) scrolls sideways in its own box, never the page; and a chart or table has room
# above it for the toolbar Streamlit shows over its top right corner (44 px: 1.75rem past the 1rem gap) unless text
# or another chart is above, so the toolbar of the element under a finger never covers the control above it
# (issue 51: at 390 px the comparison table's covered the Models to compare box).
PAGE_CSS = """<style>
[data-testid=stVegaLiteChart] {max-width: 100% !important; overflow-x: auto !important;}
[data-testid=stElementContainer]:has([data-testid=stFullScreenFrame]):not(:is([data-testid=stElementContainer]:has(
  [data-testid=stMarkdown], [data-testid=stHeading], [data-testid=stCaptionContainer], [data-testid=stFullScreenFrame])
  + *)) {margin-top: 1.75rem;}
</style>"""

# A keyed container is the element with class "st-key-<key>": a chart wider than the column scrolls inside it.
WIDE_CSS = "<style>.st-key-{key} {{overflow-x: auto !important; max-width: 100% !important; min-width: 0 !important;}}</style>"


def draw_wide(drawn: Drawn, footnote: str, view: list | None, key: str, **kwargs) -> None:
    """``draw_view`` of a chart drawn at its own width (a beam tree of 24 steps is ~1,400 px), in a box of the
    column's width that scrolls sideways: the page never grows past its column, nothing is squeezed."""
    st.html(WIDE_CSS.format(key=key))
    with st.container(key=key):
        draw_view(drawn, footnote, view, width="content", **kwargs)


def draw_runs(logprob: Drawn, divergence: Drawn, file_name: str, footnote: str | None = None,
              view: list | None = None) -> None:
    """Two drawn views of one teacher-forced vs free-running position table (``seqviz.views.exposure``: log p of
    the real token, and the divergence), their SVG/PNG buttons and the table's CSV download."""
    draw_view(logprob, footnote, view, csv=False)  # the HTML file gets the table once, with this chart
    show(st, divergence.spec, width="stretch")
    export_buttons(divergence.spec, divergence.title, footnote or "", None, view)
    st.download_button(_("Download the per-position table (CSV)"), lambda: logprob.data.to_csv(index=False).encode(),
                       file_name, "text/csv", on_click="ignore")


# ------------------------------------------------------------------ files: SVG, PNG, CSV, one HTML file
def spec_json(chart_or_spec) -> str:
    """The chart's spec as JSON, taken on click (another thread) under Altair's global lock, so a chart being drawn
    meanwhile cannot lend it Streamlit's data transformer."""
    from seqviz import export

    with ALTAIR_LOCK:
        spec = export.spec_of(chart_or_spec)
    return json.dumps(spec, sort_keys=True, ensure_ascii=False, default=str)


def export_buttons(chart_or_spec, name: str, footnote: str, data=None, view: list | None = None,
                   csv: bool = True) -> None:
    """"SVG" / "PNG" (2x) buttons for one chart (and "CSV" of ``data``, a frame or a callable returning one) in a
    "Download" popover under it, made on click. ``name``: the files' names, the widget keys and the chart's heading
    in ``view`` (the page's ``View``, the HTML file), to which it is added; ``footnote``: the page's state
    (``seqviz.export.state_line``), written into the image; ``csv=False``: ``data`` goes into the HTML file only."""
    from appkit import cache
    from seqviz import export

    key, button = f"export_{slug(name)}", {"on_click": "ignore", "type": "tertiary", "icon": ":material/download:"}
    if view is not None:
        view.append(export.Section(name, chart_or_spec, data, footnote or ""))
        if hasattr(view, "refresh_link"):  # a plain list gathers the sections only
            view.refresh_link()
    row = st.popover(_("Download"), type="tertiary", icon=":material/download:",
                     help=_("This chart as an SVG or PNG file, or the numbers behind it as CSV."))
    row.download_button("SVG", lambda: cache.svg(spec_json(chart_or_spec), footnote), f"{slug(name)}.svg",
                        "image/svg+xml", key=f"{key}_svg", **button,
                        help=_("The chart as vector graphics, with the page's state as a footnote."))
    row.download_button("PNG", lambda: cache.png(spec_json(chart_or_spec), footnote), f"{slug(name)}.png", "image/png",
                        key=f"{key}_png", **button, help=_("The chart as a picture at twice its size on screen (for slides)."))
    if data is not None and csv:
        row.download_button("CSV", lambda: (data() if callable(data) else data).to_csv(index=False), f"{slug(name)}.csv",
                            "text/csv", key=f"{key}_csv", **button, help=_("The numbers behind the chart."))


def draw(where, chart_or_spec, name: str, footnote: str, data=None, view: list | None = None,
         csv: bool = True, **kwargs) -> None:
    """An Altair chart or a spec in ``where`` (``st``, a column, a tab), titles in the session's language
    (``localize_chart``), ``width="stretch"`` unless given, then its ``export_buttons``."""
    kwargs.setdefault("width", "stretch")
    chart_or_spec = localize_chart(chart_or_spec)
    if isinstance(chart_or_spec, dict):
        show(where, chart_or_spec, **kwargs)
    else:
        where.altair_chart(chart_or_spec, **kwargs)
    with nullcontext() if where is st else where:
        export_buttons(chart_or_spec, name, footnote, data, view, csv)


def html_button(sections, title: str, link=None, card: dict | None = None, footnote=None,
                label: str = N_("This view as one HTML file")) -> None:
    """One button for the whole view as a self-contained HTML file (opens offline; ``seqviz.export.view_file``):
    ``sections``, ``link`` (the address that reopens the view), ``card`` and ``footnote`` are read on click."""
    from seqviz import export

    st.download_button(_(label), lambda: export.view_file(sections, title, link, card, footnote,
                                                          lambda chart: json.loads(spec_json(chart))),
                       f"{slug(title)}.html", "text/html", key=f"export_{slug(title)}_html", on_click="ignore",
                       icon=":material/download:", help=_("Interactive charts, the numbers behind them, the model "
                                                          "card and a link back here; opens without a network."))


def _bound_params() -> dict:
    """{param: URL value, or None when at its default} of this page's widgets bound to the URL, read from the
    widgets themselves (the backend's ``st.query_params`` is not refreshed on a same-page rerun)."""
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx
    from streamlit.runtime.state.query_params import _coerce_value_for_query_url

    ctx = get_script_run_ctx()
    if ctx is None:
        return {}
    pages = {ctx.page_script_hash, ctx.pages_manager.main_script_hash}
    with ctx.session_state.query_params() as qp:
        bindings = [b for b in qp._bindings_by_param.values() if b.script_hash in pages]
    state, out = ctx.session_state._state, {}
    for b in bindings:
        meta = state._new_widget_state.widget_metadata.get(b.widget_id)
        if meta is None or b.widget_id not in state:
            continue
        value = state[b.widget_id]
        out[b.param_key] = (None if value == meta.deserializer(None)
                            else _coerce_value_for_query_url(meta.serializer(value), b.value_type))
    return out


def view_link(page: str) -> str:
    """The address that reopens this view: the page's URL (``st.context.url``, else ``/page``) plus the query
    parameters (the model and the controls bound to the URL, at their current values)."""
    from seqviz.export import address

    try:
        bound = _bound_params()
    except Exception:  # noqa: BLE001 - Streamlit internals moved: the URL as the backend knows it
        bound = {}
    return address(st.context.url or f"/{page}", {k: st.query_params.get_all(k) for k in st.query_params}, bound)


class View(list):
    """One page run's charts for its HTML file: ``export_buttons(..., view=view)`` adds each chart drawn and
    refreshes ``link`` (the bound controls are registered by then)."""

    def __init__(self, page: str, title: str, card: dict | None = None, footnote: str | None = None):
        super().__init__()
        self.page, self.title, self.card, self.footnote, self.link = page, title, card, footnote, None

    def refresh_link(self) -> None:
        try:
            self.link = view_link(self.page)
        except Exception:  # noqa: BLE001 - no script run (a bare call): keep the last one
            pass


def view_button(page: str, title: str, model=None, footnote: str | None = None) -> View:
    """The page's "one HTML file" button in the sidebar; returns the ``View`` its charts fill. ``page``: its URL
    segment; ``model``: it or its card goes into the file (``seqviz.export.public_card``; a page that loads its
    model later sets ``view.card``)."""
    from seqviz.export import public_card

    view = View(page, title, public_card(model) if model is not None else None, footnote)
    view.refresh_link()
    with st.sidebar:
        html_button(view, title, lambda: view.link, lambda: view.card, lambda: view.footnote)
    return view
