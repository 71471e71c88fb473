"""Lesson mode's app side: the step in the URL, its control and question, its live view drawn, presenter mode.

The lessons themselves are data (``seqviz/lessons/data/*.toml``, read by ``seqviz.lessons``); a step's view is
computed once per (step, control value) in ``appkit.cache``. ``?lesson=<id>&step=<n>&present=1`` is the only
state a class needs: a link opens the same lesson at the same step, in presenter mode.
"""

from __future__ import annotations

import copy
import json

import streamlit as st

from appkit import cache
from appkit.cache import all_lessons
from appkit import draw
from appkit.i18n import SOURCE, _, current_language, error_lead, localize_chart

# Presenter mode's page: no sidebar or header, the page's text, tables, menus and radio labels at the back-row size
# (1.45rem; 1.1rem on a phone), a chart wider than the page (a token per step) scrolled sideways, never squeezed.
PRESENTER_CSS = """<style>
section[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"], header[data-testid="stHeader"]
  {display: none !important;}
.stMainBlockContainer {padding-top: 1rem !important; max-width: 100% !important;}
.stMainBlockContainer :is(p, li, label p, td, th, [data-testid="stSelectbox"] input), [role="listbox"] [role="option"]
  {font-size: 1.45rem !important; line-height: 1.45 !important;}
.stMainBlockContainer h1 {font-size: 2.3rem !important;} .stMainBlockContainer h3 {font-size: 1.8rem !important;}
[data-testid="stTable"] {overflow-x: auto;}
@media (max-width: 640px) {
  .stMainBlockContainer :is(p, li, label p, td, th, [data-testid="stSelectbox"] input),
    [role="listbox"] [role="option"] {font-size: 1.1rem !important;}
  .stMainBlockContainer h1 {font-size: 1.6rem !important;} .stMainBlockContainer h3 {font-size: 1.3rem !important;}
}
</style>"""


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


def live_view(step, value):
    """The step's view at ``value`` (cached, shared read-only): (spec, numbers, table), from the views seqviz
    ships (``seqviz.lessons.shipped``: a step at its default, without a model) while they fit the checkpoints."""
    from seqviz.lessons import shipped

    found = shipped.read(step, value, current_language(), {c.name: c.path for c in cache.list_checkpoints()})
    if found is not None:
        return found
    refs = tuple(cache.shipped_named(name).ref() for name in step.models)
    return cache.lesson_view(step.view, refs, step.cards, value,
                             json.dumps(step.params, sort_keys=True, ensure_ascii=False), current_language(),
                             step.choice, step.table)


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
            value = widget(label, list(c.options), 0 if kept else list(c.options).index(c.default), key=key,
                           format_func=shown_names(c.options).get, **extra)
    remember(key, "value", value)
    return value


def shown_names(options) -> dict:
    """Each option as shown: a checkpoint's name as its card reads it in this language (``seqviz.names``), any
    other option as it is."""
    from seqviz.names import shown_name_of

    folders = {c.name: c.path for c in cache.list_checkpoints()}
    return {o: shown_name_of(o, folder=folders[o]) if o in folders else str(o) for o in options}


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
    """A copy of a cached spec in the session's language (titles, every tooltip field titled), in the presenter
    theme when ``present`` (``seqviz.charts.presenter``)."""
    from seqviz.charts.fields import titled
    from seqviz.charts.presenter import present as presented

    spec = localize_chart(spec)  # titles; a new top level, the data rows shared
    if current_language() == SOURCE:  # localize_chart titles the tooltips in a translation only
        spec = {k: v if k in ("data", "datasets") else copy.deepcopy(v) for k, v in spec.items()}
        titled(spec)
    return presented(spec) if present else spec


def table_text(table):
    """A step's table as the class reads it: the derivative columns first (on a phone the last ones are off the
    screen), numbers to 4 decimals, "—" where there is none (st.dataframe would print NaN as "None")."""
    import pandas as pd

    first = [c for c in table.columns if c == "t"] + [c for c in table.columns if str(c).startswith("∂")]
    table = table[first + [c for c in table.columns if c not in first]]
    return table.map(lambda v: "—" if v is None or (isinstance(v, float) and pd.isna(v))
                     else f"{v:.4f}" if isinstance(v, float) else v)


def draw_view(step, value, present: bool = False) -> dict | None:
    """Run and draw the step's view; its numbers, or None (with a message) when it cannot run. A chart a step per
    token wide keeps its width (scrolled on a phone); in presenter mode a table is drawn at the page's text size."""
    try:
        spec, numbers, table = live_view(step, value)
    except (ValueError, OSError) as e:
        st.error(error_lead(e))
        return None
    specs = [shown_spec(s, present) for s in as_list(spec)]
    where = st
    if table is not None:
        where, right = st.columns(2)  # the table's last columns (the chain) are the point: room for all of them
        if present:
            right.table(table_text(table), hide_index=True)
        else:
            right.dataframe(table_text(table), hide_index=True)
    for s in specs:
        draw.show(where, s, width="content" if isinstance(s.get("width"), dict) else "stretch")
    return numbers


def link(step, value, numbers: dict | None = None) -> str:
    return step.link.url(value, current_language(), numbers)


# ------------------------------------------------------------------ addresses: /?lesson=..., an unknown path
def quiet_page_not_found() -> None:
    """Streamlit's "Page not found" dialog is English: have its navigation only note the miss (``route`` says it
    in the visitor's language). Once per process; ``streamlit.commands.navigation`` calls the function by name."""
    import streamlit.commands.navigation as nav

    if not getattr(nav.send_page_not_found, "seqviz", False):
        def noted(ctx) -> None:
            ctx.seqviz_not_found = True

        noted.seqviz = True
        nav.send_page_not_found = noted


ARRIVED = "seqviz.arrived"  # session state: the visitor's first run is done (a root link routes only then)


def route(page, pages: list) -> None:
    """Before ``page`` runs: a root address that names a lesson (``/?lesson=stations&step=4&present=1``, the form a
    teacher copies) opens the lesson page with the same parameters; an address of another case (``/Lessons``) opens
    its page; an unknown one stays on the zoo with a message in the visitor's language."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    if ctx is None:
        return
    missed, asked = getattr(ctx, "seqviz_not_found", False), getattr(ctx.pages_manager, "intended_page_name", "")
    ctx.seqviz_not_found = False
    query = {k: st.query_params.get_all(k) for k in st.query_params}
    lessons = next((p for p in pages if p.url_path == "lessons"), None)
    same = next((p for p in pages if missed and asked and p.url_path.lower() == str(asked).strip("/").lower()), None)
    if same is not None:
        st.switch_page(same, query_params=query)
    arrived = not st.session_state.get(ARRIVED, False)  # a link opened now, not a visitor going back to the zoo
    st.session_state[ARRIVED] = True
    if arrived and page.url_path == "" and "lesson" in query and lessons is not None:
        st.switch_page(lessons, query_params=query)
    if missed:
        st.warning(_("There is no page at `/{path}`: here is the model zoo. The lessons are at `/lessons`.").format(
            path=str(asked or "").strip("/")))
