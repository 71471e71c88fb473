"""Every control a page shows changes what is on screen (issue 51 item 4): each widget of a page's main area, on
each of its tabs, is moved in turn and the page's elements (charts with their data, text, tables, metrics) compared
with those before. A control that changes nothing is not shown on that tab, or is listed in ``STILL`` with why."""

from __future__ import annotations

import hashlib

import pytest
from streamlit.runtime.state.common import TESTING_KEY

from appkit.registry import PAGES
from tests.app.tabs import tab_sets
from tests.app.test_pages import move, open_clean

KINDS = ("slider", "select_slider", "selectbox", "radio", "segmented_control", "checkbox", "toggle",
         "number_input", "text_input", "text_area", "multiselect")
SHOWN = ("title", "header", "subheader", "markdown", "caption", "info", "warning", "success", "dataframe", "metric",
         "table", "code", "latex", "html", "json", "text")

# Controls that change nothing on screen for the default model, and why: (page, tab or "", key) -> reason.
STILL: dict[tuple[str, str, str], str] = {
    # how many held-out pairs the "Measure BLEU by length now" button measures on: it sizes that button's work, and
    # the page shows the stored curves until the button is pressed (buttons are not moved here: minutes of decoding)
    ("bleu_length.py", "", "att_n_recompute"): "sets the size of the measurement the button starts",
}
# Controls not moved here: they start minutes of work on two cores (tested on their own), keyed like STILL.
HEAVY: dict[tuple[str, str, str], str] = {
    ("units.py", "Pattern search", "units_search"): "indexes the held-out corpus (minutes on two cores)",
}
# Values to give a control whose next option AppTest cannot pick itself (a select slider knows its options only
# formatted), keyed like STILL.
VALUES: dict[tuple[str, str, str], object] = {}
# Words for the analogy boxes (shared by the word2vec pages): ones the vocabulary has, by the box's key.
WORDS = {"w2v_a": "boy", "w2v_b": "girl", "w2v_c": "prince", "w2v_expected": "princess"}
TEXT = "HAMLET. The king is dead, and the queen is gone."


def fingerprint(at) -> dict:
    """What the main area shows, widgets' own values aside: each chart's spec and data, each text, each table."""
    out = {}
    for i, ch in enumerate(at.main.get("vega_lite_chart")):
        digest = hashlib.sha1(ch.proto.spec.encode())
        for d in ch.proto.datasets:
            digest.update(d.data.data)
        out[f"chart{i}"] = digest.hexdigest()
    for kind in SHOWN:
        for i, e in enumerate(at.main.get(kind)):
            value = e.value if kind not in ("dataframe", "html", "json") else \
                e.value.to_csv() if kind == "dataframe" else e.proto
            out[f"{kind}{i}"] = str(value) if kind != "metric" else f"{e.label}={e.value}"
    return out


def controls(at) -> list[tuple[str, str]]:
    """(kind, key) of each keyed control of the main area."""
    return [(kind, w.key) for kind in KINDS for w in at.main.get(kind) if w.key]


def nudge(widget, kind: str, value=None):
    """Give ``widget`` another valid value: ``value`` if given, else the next option, step or text."""
    if value is not None:
        return widget.set_value(value)
    if kind in CHOICES:
        return choose(widget, kind)
    if kind == "slider" and isinstance(widget.value, (tuple, list)):  # a range: move its upper end
        lo, hi = widget.value
        return widget.set_value((lo, hi - widget.step if hi - widget.step > lo else min(hi + widget.step, widget.max)))
    return move(widget, kind, TEXT if kind in ("text_area", "text_input") else None)


CHOICES = ("selectbox", "radio", "select_slider", "segmented_control", "multiselect")


def choose(widget, kind: str):
    """Another option of a choice widget, by its label: AppTest knows the options only as labels and would apply the
    page's format_func to a label again, so the widget's format_func is set aside for this move (labels are sent)."""
    shown = widget.format_func
    value, labels = widget.value, list(widget.options)
    widget.root.session_state[TESTING_KEY][widget.id] = str
    if kind == "multiselect":  # add the first option left out, else drop the last one chosen
        chosen = [shown(v) for v in value]
        left = [o for o in labels if o not in chosen]
        return widget.set_value(chosen + left[:1] if left else chosen[:-1])
    if isinstance(value, (tuple, list)):  # a range select slider: its upper end one option down (or up)
        lo, hi = (labels.index(shown(v)) for v in value)
        return widget.set_value((labels[lo], labels[hi - 1 if hi - 1 > lo else min(hi + 1, len(labels) - 1)]))
    try:
        current = shown(value)
    except (AttributeError, TypeError):  # None where None is no option: a placeholder ("Pick a sample...")
        current = None
    others = [o for o in labels if o != current]
    # from a placeholder, the last option: the page shows the first one's content until one is picked
    return widget.set_value(others[0] if current in labels else others[-1])


def walk_tab(page, key: str | None, tab: str | None, at=None) -> list[str]:
    """Move each control of one tab in turn, each from where the previous move left the page (one AppTest per tab).
    A control that then changes nothing, or that an earlier move hid, is moved again on the tab as it opens (the
    page's default model and settings). ``at``: the tab already open. Returns what changed nothing there."""
    where = {key: tab} if key else {}
    at = at or open_clean(page, where)
    still = []
    for kind, name in controls(at):
        where_ = (page.path, tab or "", name)
        if where_ in HEAVY:
            continue
        if where_ in STILL or moved(at, kind, name, where_):
            continue
        if moved(open_clean(page, where), kind, name, where_) is False:
            still.append(f"{tab or page.path}: {name} ({kind})")
    return still


def moved(at, kind: str, name: str, where: tuple) -> bool | None:
    """Move control ``name`` of ``at``: whether the page's elements changed (None: not drawn, or greyed out)."""
    found = [w for w in at.main.get(kind) if w.key == name]
    if not found or getattr(found[0], "disabled", False):  # greyed out: shown with its value, not a control now
        return None
    before = fingerprint(at)
    nudge(found[0], kind, VALUES.get(where, WORDS.get(name))).run()
    assert not at.exception, f"{where}: {at.exception}"
    assert not at.error, f"{where}: {[e.value for e in at.error]}"
    return fingerprint(at) != before


@pytest.mark.parametrize("page", [p for p in PAGES if p.exists], ids=lambda p: p.path)
def test_every_control_changes_its_tab(page, shipped_plus_tiny):
    """Each main-area control of each tab of the page, on the model the page opens on, changes what is shown."""
    at = open_clean(page)
    tabs = [(key, label) for key, labels in tab_sets(at.main) for label in labels] or [(None, None)]
    still = []
    for i, (key, tab) in enumerate(tabs):  # the first tab is the one open
        still += walk_tab(page, key, tab, at if i == 0 else None)
    assert not still, f"{page.path}: moving these changed nothing on screen: {still}"
