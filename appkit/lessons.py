"""Lesson mode's app side: the step in the URL, the cached live view, the step's parts drawn, presenter mode.

The lessons themselves are data (``seqviz/lessons/data/*.toml``, read by ``seqviz.lessons``); this
module loads the shipped checkpoints a step names (through ``appkit.models``' shared caches), runs
its view once per (step, control value), and draws it. ``?lesson=<id>&step=<n>&present=1`` is the
only state a class needs: a link opens the same lesson at the same step, in presenter mode.
``extract_lessons`` is the Babel extractor that collects the lesson files' English text.
"""

from __future__ import annotations

import json
import math
import re

import streamlit as st

from appkit import models as cm
from appkit.i18n import N_, _, current_language, error_lead, localize_chart

# Titles the lesson views give the library's chart builders (translated by localize_chart).
VIEW_TITLES = (N_("∂h_t/∂h_1: true vs the book's table"), N_("Same ρ, two regimes"), N_("S6: f^k, the cell path's gain"),
               N_("‖g‖ per step (c dashed)"), N_("‖g‖ (log scale)"), N_("Memory kept since the start position"),
               N_("∏ f (log)"))
# The series names the views write into their charts' data (seqviz.lessons.views.SERIES), shown translated.
SERIES = (N_("linear regime (tanh′ = 1)"), N_("trained RNN, its own tanh"),
          N_("applied ‖g‖ (≤ c)"), N_("without clipping"), N_("with clipping"),
          N_("forward pass at this W_hh"), N_("book (states of W_hh = 0.5)"), N_("trained LSTM, mean ∏ f"),
          N_("as trained"), N_("text 1"), N_("text 2"), N_("gold prefix"), N_("forced"), N_("right"), N_("wrong"))
# Presenter mode: the projector needs chart text as large as the page's (the page CSS does not reach Vega).
# From the back row: chart text at least 22 px, in ink of 4.5:1 contrast or more on white (Streamlit's grey axis
# text, #808495, is 3.7:1), legend symbols 16 px across (a Vega symbolSize is an area: 16² = 256).
PRESENTER_FONTS = {"labelFontSize": 22, "titleFontSize": 24, "fontSize": 22, "subtitleFontSize": 22}
INK = "#31333F"  # Streamlit's text colour: 12.6:1 on white
PRESENTER_GUIDE = {"labelColor": INK, "titleColor": INK}
PRESENTER_LEGEND = {"symbolSize": 256, "symbolStrokeWidth": 4, "symbolOpacity": 1, "labelLimit": 640, "titleLimit": 640}
PRESENTER_HEIGHT = 300  # px: a chart drawn shorter keeps too little plot under projector-sized axes
# Lines of a legend label and of a chart title in presenter mode, in ems of their font (a CJK character is one em,
# other characters about 0.55): on a 390 px phone a legend under the plot starts past the y axis and keeps ~230 px
# (10.5 ems of 22 px label) beside its symbol, and the title ~330 px (11.5 ems of 28 px). Vega cuts a longer line at
# the chart's edge (seen in the screenshots); it draws a label or title given as lines one under another.
LABEL_EMS, TITLE_EMS = 10.5, 11.5
LEGENDS = ("color", "fill", "stroke", "strokeDash", "shape", "size", "opacity")
PRESENTER_CONFIG = {"axis": {"labelFontSize": 22, "titleFontSize": 24, **PRESENTER_GUIDE},
                    "legend": {"labelFontSize": 22, "titleFontSize": 24, **PRESENTER_GUIDE, **PRESENTER_LEGEND},
                    "header": {"labelFontSize": 22, "titleFontSize": 24, **PRESENTER_GUIDE},
                    "text": {"fontSize": 22},
                    "title": {"fontSize": 28, "subtitleFontSize": 22, "color": INK, "subtitleColor": INK}}
PRESENTER_CSS = """<style>
section[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"], header[data-testid="stHeader"]
  {display: none !important;}
.stMainBlockContainer {padding-top: 1rem !important; max-width: 100% !important;}
.stMainBlockContainer p, .stMainBlockContainer li, .stMainBlockContainer label p {font-size: 1.45rem !important;
  line-height: 1.45 !important;}
.stMainBlockContainer h1 {font-size: 2.3rem !important;} .stMainBlockContainer h3 {font-size: 1.8rem !important;}
[data-testid="stSelectbox"] [data-baseweb="select"] * {font-size: 1.2rem !important;}
@media (max-width: 640px) {
  .stMainBlockContainer p, .stMainBlockContainer li, .stMainBlockContainer label p {font-size: 1.1rem !important;}
  .stMainBlockContainer h1 {font-size: 1.6rem !important;} .stMainBlockContainer h3 {font-size: 1.3rem !important;}
}
</style>"""


@st.cache_resource(max_entries=1, show_spinner=False)
def all_lessons() -> dict:
    from seqviz.lessons import lessons

    return lessons()


def position() -> tuple[str, int, bool]:
    """(lesson id, 0-based step, presenter mode) from the URL, clamped to lessons and steps that exist."""
    found = all_lessons()
    lesson = st.query_params.get("lesson")
    lesson = lesson if lesson in found else next(iter(found))
    try:
        step = int(st.query_params.get("step", 1)) - 1
    except ValueError:
        step = 0
    step = min(max(step, 0), len(found[lesson].steps) - 1)
    return lesson, step, st.query_params.get("present") == "1"


def go(lesson: str, step: int, present: bool) -> None:
    """Put a position into the URL (a button's callback: the next run reads it)."""
    st.query_params["lesson"], st.query_params["step"] = lesson, str(step + 1)
    for param in ("answer", "value"):  # the step's own: its answer and control are kept in the session
        st.query_params.pop(param, None)
    if present:
        st.query_params["present"] = "1"
    elif "present" in st.query_params:
        del st.query_params["present"]


def _shipped(name: str):
    for c in cm.list_checkpoints():
        if c.name == name:
            return c
    raise ValueError(f"the shipped checkpoint {name!r} is missing from {cm.checkpoint_roots()[0]}")


@st.cache_resource(max_entries=96, show_spinner=False)
def _view(view: str, refs: tuple, card_names: tuple, value, params_json: str, lang: str, choice: str = "",
          table: bool = False):
    """(Vega-Lite spec, numbers, table) of one view at one control value in ``lang``: computed and serialised once
    (the page views a step shares write their titles in the visitor's language)."""
    from appkit.i18n import language
    from seqviz.lessons import run_view
    from seqviz.text import translator

    models = {ref.label: cm.model(ref) for ref in refs}
    cards = {name: _shipped(name).card for name in card_names}
    with language(lang), translator(_):  # the views' own labels, as appkit.models' views (app.py installs it too)
        done = run_view(view, models, cards, value, json.loads(params_json), choice, table)
        return done.spec(), done.numbers, done.table


def live_view(step, value):
    """The step's view at ``value`` (cached, shared read-only): (spec, numbers, table), from the views seqviz
    ships (``seqviz.lessons.shipped``: a step at its default, without a model) while they fit the checkpoints."""
    from seqviz.lessons import shipped

    found = shipped.read(step, value, current_language(), {c.name: c.path for c in cm.list_checkpoints()})
    if found is not None:
        return found
    refs = tuple(_shipped(name).ref() for name in step.models)
    return _view(step.view, refs, step.cards, value, json.dumps(step.params, sort_keys=True, ensure_ascii=False),
                 current_language(), step.choice, step.table)


def control(step, key: str):
    """The step's one control, its value given back (``restore``) and pulled into the range the lesson file
    gives, kept in the session and the address (``value=``) as it moves."""
    from appkit.state import clamp, keep_option

    c, label = step.control, _(step.control.label)
    restore(key, "value", lambda q: next(o for o in c.options if str(o) == q) if c.options else type(c.default)(q))
    kept = key in st.session_state  # then the widget takes the kept value (a default as well would warn)
    if c.kind == "slider":
        clamp(key, c.min, c.max)
        value = st.slider(label, c.min, c.max, None if kept else c.default, c.step, key=key)
    else:
        keep_option(key, list(c.options), c.default)
        if c.kind == "select_slider":
            value = st.select_slider(label, list(c.options), None if kept else c.default, key=key)
        else:
            widget = st.radio if c.kind == "radio" else st.selectbox
            extra = {"horizontal": True} if c.kind == "radio" else {}
            value = widget(label, list(c.options), 0 if kept else list(c.options).index(c.default), key=key, **extra)
    remember(key, "value", value)
    return value


def guess(step, key: str, options: list) -> int | None:
    """The predict-first radio (index of the option chosen, None before an answer), its answer given back
    when the visitor returns to the step or opens an address that holds it (``answer=``, 1-based)."""
    restore(key, "answer", lambda q: int(q) - 1 if 1 <= int(q) <= len(options) else None)
    control_key = key.removesuffix("_guess") + "_value"  # what the question is about: the control as kept
    value = st.session_state.get(control_key, st.session_state.get(f"{control_key}_kept", step.control.default))
    question = _(step.question).format(**step.asked_about(value if step.control.valid(value) else step.control.default))
    chosen = st.radio(_("Predict first: {question}").format(question=question), range(len(options)),
                      index=None, key=key, format_func=options.__getitem__)
    remember(key, "answer", chosen, lambda i: str(i + 1))
    return chosen


def restore(key: str, param: str, parse) -> None:
    """Before a step's widget: give it back the value kept when the visitor left the step (Streamlit drops a
    widget's state once a run does not draw it), else the one the address names."""
    if key in st.session_state:
        return
    if f"{key}_kept" in st.session_state:
        value = st.session_state[f"{key}_kept"]
    else:
        try:
            value = parse(st.query_params[param]) if param in st.query_params else None
        except (ValueError, TypeError, StopIteration):
            value = None
    if value is not None:
        st.session_state[key] = value


def remember(key: str, param: str, value, shown=str) -> None:
    """Keep a step widget's value for a return to the step, and in the address for a shared link."""
    st.session_state[f"{key}_kept"] = value
    if value is None:
        st.query_params.pop(param, None)
    else:
        st.query_params[param] = shown(value)


def notes(step, numbers: dict) -> list[str]:
    """"What to notice": the step's templates in the session's language, filled with the view's numbers."""
    return [_(t).format(**numbers) for t in step.notes_shown(numbers)]


def slip(step, numbers: dict) -> str | None:
    """The sentence on the seed's slip, when the view finds the seed's own number wrong."""
    return _(step.slip).format(**numbers) if step.slip and numbers.get("slip") else None


def right_options(step, numbers: dict) -> list[int]:
    """Indexes of the predict-first options the view's numbers make right."""
    return [i for i, (_text, when) in enumerate(step.options) if numbers.get(when) is True]


def as_list(spec) -> list[dict]:
    """A step's spec as a list of charts (a view draws one chart, or several one under the other)."""
    return spec if isinstance(spec, list) else [spec]


def shown_spec(spec: dict, present: bool) -> dict:
    """A copy of a cached spec in the session's language (titles and series names), with projector fonts."""
    spec = localize_chart(spec)  # titles; a new top level, the data rows shared
    labels = {msgid: _(msgid) for msgid in SERIES}
    if current_language() != "en":
        spec = _walk(spec, lambda v: labels.get(v, v) if isinstance(v, str) else v, rows=True)
    if present:
        grow = PRESENTER_FONTS["fontSize"] / min(_text_sizes(spec) or [PRESENTER_FONTS["fontSize"]])
        spec = _walk(spec, None, fonts=True)
        for side in ("width", "height"):  # a step per token or word (a strip's cells, a bar's band) fits its text
            if isinstance(spec.get(side), dict) and "step" in spec[side]:
                least = PRESENTER_FONTS["labelFontSize"] + 8 if side == "height" else 0
                spec[side] = {**spec[side], "step": max(math.ceil(spec[side]["step"] * grow), least)}
        if isinstance(spec.get("height"), (int, float)):  # room for the plot once its axes take 22 px text
            spec["height"] = max(spec["height"], PRESENTER_HEIGHT)
            # The height is the plot's: with "fit" (Streamlit's default where a spec sets none) the axes, legend
            # and title came out of it (S8's BLEU curves kept ~50 px of plot at 1400 px).
            auto = spec.get("autosize") if isinstance(spec.get("autosize"), dict) else {"contains": "padding"}
            if auto.get("type", "fit") == "fit":
                spec["autosize"] = {**auto, "type": "fit-x"}
        spec["config"] = {**spec.get("config", {}), **{k: {**spec.get("config", {}).get(k, {}), **v}
                                                     for k, v in PRESENTER_CONFIG.items()}}
        _wrap_guides(spec, _values(spec))
    return spec


def ems(text: str) -> float:
    """The width of ``text`` in ems of its font: 1 for a wide (CJK) character, 0.55 for another."""
    import unicodedata

    return sum(1.0 if unicodedata.east_asian_width(c) in "WF" else 0.55 for c in text)


def wrap(text: str, width: float) -> list[str]:
    """``text`` in lines of at most ``width`` ems: broken at spaces, after hyphens, and between wide characters."""
    pieces = re.findall(r"[^\s\-\u2e80-\u9fff\uff00-\uffef]+-?\s*|-\s*|[\u2e80-\u9fff\uff00-\uffef]\s*|\s+", text)
    joined: list[str] = []
    for piece in pieces:  # closing punctuation stays with what it closes (no line starts with "）")
        if joined and piece[0] in "）)]】」』，,。.、：:；;！!？?":
            joined[-1] += piece
        else:
            joined.append(piece)
    lines, line = [], ""
    for piece in joined:
        if line and ems((line + piece).rstrip()) > width:
            lines.append(line.rstrip())
            line = piece.lstrip()
        else:
            line += piece
    return [*lines, line.rstrip()] if line.strip() else lines or [text]


def _values(spec: dict) -> dict[str, set]:
    """Each field's string values across the spec's datasets (what a legend of that field labels)."""
    found: dict[str, set] = {}
    for rows in (spec.get("datasets") or {}).values():
        for row in rows if isinstance(rows, list) else []:
            for k, v in row.items():
                if isinstance(v, str):
                    found.setdefault(k, set()).add(v)
    return found


def _wrap_guides(node, values: dict, top: bool = True) -> None:
    """In place: every discrete legend of the spec in one column, its labels in lines of ``LABEL_EMS`` (a map from
    each stored value to its lines, before any ``labelExpr`` it had), and the chart's title in lines of
    ``TITLE_EMS``: on a phone in presenter mode nothing is cut at the chart's edge."""
    if isinstance(node, list):
        for v in node:
            _wrap_guides(v, values, False)
        return
    if not isinstance(node, dict):
        return
    title = node.get("title") if top else None
    if isinstance(title, dict) and isinstance(title.get("text"), str) and ems(title["text"]) > TITLE_EMS:
        title.update(text=wrap(title["text"], TITLE_EMS), limit=0)  # limit 0: no cut at the plot's width
    for channel, enc in (node.get("encoding") or {}).items():
        legend = enc.get("legend", {}) if isinstance(enc, dict) and channel in LEGENDS else None
        if legend is None or enc.get("type") == "quantitative" or "field" not in enc:
            continue
        shown = _label_map(legend.get("labelExpr"))
        stored = set(values.get(enc["field"], ())) | {v for v in (enc.get("scale") or {}).get("domain") or ()
                                                      if isinstance(v, str)}
        lines = {v: wrap(shown.get(v, v), LABEL_EMS) for v in sorted(stored)}
        lines = {v: ls for v, ls in lines.items() if len(ls) > 1}
        legend.update({"columns": 1, "labelBaseline": "top", "rowPadding": 8})
        if lines:
            legend["labelExpr"] = (f"({json.dumps(lines, ensure_ascii=False)})[datum.value] || "
                                   f"({legend.get('labelExpr') or 'datum.label'})")
        enc["legend"] = legend
    for k, v in node.items():
        if k not in ("datasets", "data", "encoding", "title"):
            _wrap_guides(v, values, False)


def _label_map(expr: str | None) -> dict:
    """The value -> label map of a ``seqviz.charts.palette.label_expr`` expression ({} for another)."""
    found = re.fullmatch(r"\((\{.*\})\)\[datum\.value\] \|\| datum\.value", expr or "", flags=re.S)
    return json.loads(found.group(1)) if found else {}


def _text_sizes(node) -> list[float]:
    """The font sizes of a spec's text marks (Vega's default 11 px where a mark sets none)."""
    if isinstance(node, dict):
        mark = node.get("mark")
        own = [11.0] if mark == "text" else [mark.get("fontSize", 11.0)] if isinstance(mark, dict) and \
            mark.get("type") == "text" else []
        return own + [x for k, v in node.items() if k not in ("datasets", "data", "mark") for x in _text_sizes(v)]
    if isinstance(node, list):
        return [x for v in node for x in _text_sizes(v)]
    return []


def _walk(node, label, rows: bool = False, fonts: bool = False, key: str = ""):
    """A copy of a spec with series names translated (``label``, in data rows and scale domains) or fonts enlarged.

    Fonts are set on every axis, legend and title of the spec itself: Streamlit's chart theme outranks a
    spec's ``config`` (seen in the browser), not the properties of an encoding.
    """
    if isinstance(node, dict):
        if key in ("datasets",) and rows:
            return {name: [{k: label(v) for k, v in row.items()} for row in data] for name, data in node.items()}
        if key in ("datasets", "data"):
            return node
        out = {}
        for k, v in node.items():
            if fonts and k in PRESENTER_FONTS and isinstance(v, (int, float)):
                out[k] = max(v, PRESENTER_FONTS[k])
            elif fonts and k == "mark" and v == "text":  # a text mark at Vega's default 11 px
                out[k] = {"type": "text", "fontSize": PRESENTER_FONTS["fontSize"]}
            elif fonts and k == "mark" and isinstance(v, dict) and v.get("type") == "text":
                out[k] = {**v, "fontSize": max(v.get("fontSize", 0), PRESENTER_FONTS["fontSize"])}
            elif fonts and k in ("labelColor", "titleColor") and isinstance(v, str):  # a plain grey, not an expression
                out[k] = INK
            elif rows and k == "domain" and isinstance(v, list):
                out[k] = [label(x) for x in v]
            else:
                out[k] = _walk(v, label, rows, fonts, k)
        if fonts and key == "encoding":
            for channel, enc in out.items():
                guide = "axis" if channel in ("x", "y") else "legend" if channel in LEGENDS else None
                if guide and isinstance(enc, dict) and enc.get(guide, {}) is not None:
                    extra = PRESENTER_LEGEND if guide == "legend" else {}
                    enc[guide] = {"labelFontSize": PRESENTER_FONTS["labelFontSize"],
                                  "titleFontSize": PRESENTER_FONTS["titleFontSize"], **PRESENTER_GUIDE,
                                  **enc.get(guide, {}), **extra}
        if fonts and "title" in out and key == "":  # the chart's own title (the top level)
            title = out["title"]
            out["title"] = {"text": title, **PRESENTER_CONFIG["title"]} if isinstance(title, (str, list)) else \
                {**PRESENTER_CONFIG["title"], **title} if isinstance(title, dict) else title
        return out
    if isinstance(node, list):
        return [_walk(v, label, rows, fonts, key) for v in node]
    return node


def table_text(table):
    """A step's table as the class reads it: numbers to 4 decimals, "—" where there is none (st.dataframe
    would print NaN as "None")."""
    import pandas as pd

    return table.map(lambda v: "—" if v is None or (isinstance(v, float) and pd.isna(v))
                     else f"{v:.4f}" if isinstance(v, float) else v)


def draw_view(step, value, present: bool = False) -> dict | None:
    """Run and draw the step's view; its numbers, or None (with a message) when it cannot run."""
    try:
        spec, numbers, table = live_view(step, value)
    except (ValueError, OSError) as e:
        st.error(error_lead(e))
        return None
    specs = [shown_spec(s, present) for s in as_list(spec)]
    where = st
    if table is not None:
        where, right = st.columns(2)  # the table's last columns (the chain) are the point: room for all of them
        right.dataframe(table_text(table), hide_index=True)
    for s in specs:
        cm.show(where, s, width="stretch")
    return numbers


def link(step, value, numbers: dict | None = None) -> str:
    return step.link.url(value, current_language(), numbers)


# ------------------------------------------------------------------ Babel
def extract_lessons(fileobj, keywords, comment_tags, options):
    """Babel extraction method for lesson TOML files: every title, goal, question, option, note and label."""
    import tomllib

    from seqviz.lessons.load import texts

    source = fileobj.read().decode("utf-8")
    lines = source.splitlines()
    for message in dict.fromkeys(texts(tomllib.loads(source))):
        probe = json.dumps(message, ensure_ascii=False)[1:40]
        lineno = next((i + 1 for i, line in enumerate(lines) if probe in line), 1)
        yield lineno, "_", message, []
