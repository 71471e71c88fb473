"""Download buttons that take charts out of the app: SVG/PNG per chart, the whole view as one HTML file.

The files are made only when a button is clicked (a callable ``data``), through
``seqviz.export`` (vl-convert, no browser); SVG and PNG are cached on the spec's JSON and
the footnote, so clicking again or another visitor's same chart costs nothing. A page rerun
converts nothing: even the chart's spec is taken on click.

A page wires them in three calls: ``exports = view_button(page, title, model)`` (the HTML
button, in the sidebar), then under each chart ``export_buttons(chart, name, state_line(...),
frame, exports)`` (or ``draw(where, chart, name, ...)``, which draws the chart and its buttons);
``exports.footnote = state_line(...)`` names the view's state in the HTML file.
"""

from __future__ import annotations

import html
import json
import re
import threading
from contextlib import nullcontext
from urllib.parse import urlencode

import streamlit as st

from appkit.i18n import N_, _, localize_chart
from appkit.models import show
from seqviz import export

try:  # Altair's data transformer is process-global; Streamlit switches it under this lock
    from streamlit.elements.vega_charts import _altair_globals_lock as _ALTAIR_LOCK
except ImportError:  # pragma: no cover - a Streamlit without it: at least serialise our own use
    _ALTAIR_LOCK = threading.Lock()
# Card fields left out of the HTML file: long and drawn on the pages themselves, or the server's own
# file paths (a file handed to others must not show where the app's files live).


def _slug(name: str) -> str:
    """A file and widget-key friendly name: 'Gate heatmap (layer 0)' -> 'gate_heatmap_layer_0'."""
    return re.sub(r"[^0-9A-Za-z._-]+", "_", name).strip("_").lower() or "chart"


def _spec(chart_or_spec) -> dict:
    """The chart's spec, taken when a button is clicked (another thread): under Altair's global lock,
    so a chart being drawn meanwhile cannot lend it Streamlit's data transformer."""
    with _ALTAIR_LOCK:
        return export.spec_of(chart_or_spec)


def _spec_json(chart_or_spec) -> str:
    return json.dumps(_spec(chart_or_spec), sort_keys=True, ensure_ascii=False, default=str)


@st.cache_data(max_entries=64, show_spinner=False)
def _svg(spec_json: str, footnote: str | None) -> str:
    return export.to_svg(json.loads(spec_json), footnote)


@st.cache_data(max_entries=64, show_spinner=False)
def _png(spec_json: str, footnote: str | None) -> bytes:
    return export.to_png(json.loads(spec_json), 2.0, footnote)


def _frame(data):
    """A section's numbers: the frame itself, or made now by the callable a page handed over."""
    return data() if callable(data) else data


def export_buttons(chart_or_spec, name: str, footnote: str, data=None, view: list | None = None,
                   csv: bool = True) -> None:
    """"SVG" / "PNG" (2x) download buttons for one chart (and "CSV" of ``data`` when given), in a
    "Download" popover under it: the browser builds a popover's buttons only when it is opened (three
    buttons with their tooltips per chart were a fifth of a page switch's drawing on Exposure bias).

    ``name`` makes the file names and the widget keys (keep it unique on the page) and, with
    ``view`` (a list the page keeps), the chart's heading in the page's HTML file, to which the
    chart is then added; ``footnote``: the page's state (``seqviz.export.state_line``), written
    into the image; ``csv=False``: ``data`` goes into the HTML file only (the page has its own
    CSV button for it). Nothing is converted on a rerun: the spec is taken and the file made on click
    (pages hand over a fresh chart or spec each run and do not change it after drawing it). ``data`` may be
    a callable returning the frame (a shipped view's numbers, made when asked for).
    """
    slug = _slug(name)
    if view is not None:
        view.append(export.Section(name, chart_or_spec, data, footnote or ""))
        if hasattr(view, "refresh_link"):
            view.refresh_link()
    row = st.popover(_("Download"), type="tertiary", icon=":material/download:",
                     help=_("This chart as an SVG or PNG file, or the numbers behind it as CSV."))
    row.download_button("SVG", lambda: _svg(_spec_json(chart_or_spec), footnote), f"{slug}.svg", "image/svg+xml",
                        key=f"export_{slug}_svg", on_click="ignore", type="tertiary", icon=":material/download:",
                        help=_("The chart as vector graphics, with the page's state as a footnote."))
    row.download_button("PNG", lambda: _png(_spec_json(chart_or_spec), footnote), f"{slug}.png", "image/png",
                        key=f"export_{slug}_png", on_click="ignore", type="tertiary", icon=":material/download:",
                        help=_("The chart as a picture at twice its size on screen (for slides)."))
    if data is not None and csv:
        row.download_button("CSV", lambda: _frame(data).to_csv(index=False), f"{slug}.csv", "text/csv",
                            key=f"export_{slug}_csv", on_click="ignore", type="tertiary", icon=":material/download:",
                            help=_("The numbers behind the chart."))


def draw(where, chart_or_spec, name: str, footnote: str, data=None, view: list | None = None,
         csv: bool = True, **kwargs) -> None:
    """Draw an Altair chart (``st.altair_chart``) or a spec (``st.vega_lite_chart``) in ``where``
    (``st``, a column, a tab) with ``width="stretch"`` unless given, then its ``export_buttons`` under it.
    Its titles are shown (and exported) in the session's language (``localize_chart``)."""
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
    """One download button for the whole view as a self-contained HTML file (opens offline).

    ``sections``: ``seqviz.export.Section`` (heading, chart, data, caption) or dicts with those keys,
    read when the button is clicked, so a page may hand over its list before drawing its charts;
    ``link``: the app address that reopens this view (e.g. the page URL with its query parameters).
    ``link``, ``card`` and ``footnote`` may be callables, likewise called on click.
    """
    slug = _slug(title)

    def make() -> str:
        taken = [export._section(s) for s in sections]
        where, note = (link() if callable(link) else link), (footnote() if callable(footnote) else footnote)
        about = card() if callable(card) else card
        if not taken:  # the page stopped before its first chart
            return (f"<!DOCTYPE html><meta charset='utf-8'><title>{html.escape(title)}</title>"
                    f"<h1>{html.escape(title)}</h1><p>This view drew no chart.</p>")
        return export.to_html([export.Section(s.heading, _spec(s.chart), _frame(s.data), s.caption) for s in taken],
                              title, where, about, note)

    st.download_button(_(label), make, f"{slug}.html", "text/html", key=f"export_{slug}_html", on_click="ignore",
                       icon=":material/download:", help=_("Interactive charts, the numbers behind them, the model "
                                                          "card and a link back here; opens without a network."))


def _bound_params() -> dict:
    """{param: URL value, or None when at its default} of this page's widgets bound to the URL.

    The backend's ``st.query_params`` is not refreshed on a same-page rerun (the browser's address
    is), so the values are read from the widgets themselves, serialised as Streamlit writes them.
    """
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx
    from streamlit.runtime.state.query_params import _coerce_value_for_query_url

    ctx = get_script_run_ctx()
    if ctx is None:
        return {}
    pages = {ctx.page_script_hash, ctx.pages_manager.main_script_hash}
    with ctx.session_state.query_params() as qp:
        bindings = [b for b in qp._bindings_by_param.values() if b.script_hash in pages]
    state = ctx.session_state._state
    out = {}
    for b in bindings:
        meta = state._new_widget_state.widget_metadata.get(b.widget_id)
        if meta is None or b.widget_id not in state:
            continue
        value = state[b.widget_id]
        out[b.param_key] = (None if value == meta.deserializer(None)
                            else _coerce_value_for_query_url(meta.serializer(value), b.value_type))
    return out


def view_link(page: str) -> str:
    """The address that reopens this view: the page's URL (``st.context.url``, else ``/page``) plus the
    query parameters (the model and the controls the pages bind to the URL, at their current values)."""
    params = {k: st.query_params.get_all(k) for k in st.query_params}
    try:
        bound = _bound_params()
    except Exception:  # noqa: BLE001 - Streamlit internals moved: the URL as the backend knows it
        bound = {}
    for key, value in bound.items():
        if value is None:
            params.pop(key, None)
        else:
            params[key] = value if isinstance(value, list) else [value]
    query = urlencode([(k, v) for k, vs in params.items() for v in vs])
    base = st.context.url or f"/{page}"
    return f"{base}?{query}" if query else base


def card_of(model) -> dict:
    """The model card for the HTML file (``seqviz.export.public_card``)."""
    return export.public_card(model if isinstance(model, dict) else getattr(model, "card", None))


class View(list):
    """One page run's charts for its HTML file: ``export_buttons(..., view=view)`` adds each chart
    drawn and refreshes ``link`` (the bound controls are registered by then)."""

    def __init__(self, page: str, title: str, card: dict | None = None, footnote: str | None = None):
        super().__init__()
        self.page, self.title, self.card, self.footnote = page, title, card, footnote
        self.link = None

    def refresh_link(self) -> None:
        try:
            self.link = view_link(self.page)
        except Exception:  # noqa: BLE001 - no script run (a bare call): keep the last one
            pass


def view_button(page: str, title: str, model=None, footnote: str | None = None) -> View:
    """The page's "one HTML file" button, in the sidebar under the model picker (present however far
    the page gets); returns the ``View`` that the page's ``export_buttons(..., view=view)`` fill.

    ``page``: the page's URL segment (its file name without .py), for the link when
    ``st.context.url`` is unknown; ``model``: its card goes into the file (bulky fields left out; a page
    that loads its model later sets ``view.card = card_of(model)`` then).
    """
    view = View(page, title, card_of(model) if model is not None else None, footnote)
    view.refresh_link()
    with st.sidebar:
        html_button(view, title, lambda: view.link, lambda: view.card, lambda: view.footnote)
    return view
