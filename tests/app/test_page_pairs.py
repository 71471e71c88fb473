"""Moving between pages (issue 14): every ordered pair (A, B) of pages, in one AppTest session.

A visitor sets A's controls to their ends, then opens B. Two kinds of bug show up only then: a
value kept from A (or from B's last visit) that is outside the range B draws its widget with
(``StreamlitValueAboveMaxError``), and a picker that names one model while B uses another. One
AppTest session walks an Eulerian circuit of the complete digraph of pages (every ordered pair
once, ``n (n - 1)`` switches); on each page it sets every numeric and choice control of the page
and of its sidebar (sliders, select sliders, number inputs, select boxes, radios, segmented
controls; not the language switch or the picker's source) to its minimum, then to its maximum,
and on arrival it checks that the page ran and that its picker shows the model it says it uses.
Only a page's open tab runs (``appkit.widgets.lazy_tabs``), so each departure from a page with
tabs first opens its next tab in turn: a page is left n - 1 times, more than any page has tabs,
so every tab's controls are set to their ends before some switch.

The default test sets all of a page's controls in one rerun per end; the ``slow`` one sets them
one rerun per control and end (the exhaustive walk, several times longer: ``pytest -m slow``).
"""

from __future__ import annotations

import time

import pytest
from streamlit.proto.WidgetStates_pb2 import WidgetState
from streamlit.testing.v1 import AppTest

from appkit.i18n import KEY as LANGUAGE_KEY
from appkit.registry import PageSpec, available_pages
from tests.app.tabs import choose_tab, tab_sets
from tests.app.test_pages import APP
from tests.app.test_picker_truth import USING

KINDS = ("slider", "select_slider", "number_input", "selectbox", "radio", "segmented_control")
CHOICES = ("select_slider", "selectbox", "radio", "segmented_control")


def eulerian_circuit(n: int) -> list[int]:
    """Node indices of a closed walk through the complete digraph on ``n`` nodes that takes every
    arc (a, b), a != b, exactly once (Hierholzer's algorithm); starts and ends at node 0."""
    if n < 2:
        return list(range(n))
    unused = {a: [b for b in range(n) if b != a] for a in range(n)}
    stack, walk = [0], []
    while stack:
        node = stack[-1]
        if unused[node]:
            stack.append(unused[node].pop())
        else:
            walk.append(stack.pop())
    return walk[::-1]


def test_the_circuit_takes_every_ordered_pair_once():
    for n in range(2, 12):
        walk = eulerian_circuit(n)
        arcs = list(zip(walk, walk[1:]))
        assert walk[0] == walk[-1] == 0 and len(arcs) == n * (n - 1)
        assert sorted(arcs) == sorted((a, b) for a in range(n) for b in range(n) if a != b)


# ------------------------------------------------------------------ controls
def controls(at: AppTest) -> list:
    """The page's numeric and choice controls (main area and sidebar), enabled and outside forms."""
    found = []
    for kind in KINDS:
        for w in [*getattr(at.main, kind), *getattr(at.sidebar, kind)]:
            key = w.key or ""
            if key == LANGUAGE_KEY or key.endswith(".source") or getattr(w, "form_id", "") or w.disabled:
                continue
            if kind in CHOICES and not w.options:
                continue
            found.append(w)
    return found


def name(w) -> tuple:
    """What finds a control again after a rerun: its key, else its type and label."""
    return (w.type, w.key) if w.key else (w.type, w.label)


def pin(widget, labels: list[str]) -> None:
    """Send what the browser sends for a choice, the options' labels, whatever the widget's format_func."""
    kind = type(widget)

    class Pinned(kind):
        @property
        def _widget_state(self):
            state = WidgetState(id=self.id)
            if widget.type in ("selectbox", "radio"):
                state.string_value = labels[0]
            else:
                state.string_array_value.data[:] = labels
            return state

    widget.__class__ = Pinned
    widget._value = labels


def set_end(w, end: str) -> bool:
    """Give control ``w`` its minimum (``end="min"``) or maximum; False when it has none to give."""
    first = end == "min"
    if w.type == "slider":
        v = w.min if first else w.max
        w.set_value((v, v) if isinstance(w.value, (tuple, list)) else v)
    elif w.type == "number_input":
        v = w.min if first else w.max
        if v is None:
            return False
        w.set_value(int(v) if float(v).is_integer() and isinstance(w.value, int) else v)
    else:
        label = w.options[0 if first else -1]
        is_range = w.type == "select_slider" and isinstance(w.value, (tuple, list))
        multi = w.type == "segmented_control" and isinstance(w.value, list)
        pin(w, [label, label] if is_range else [label] if (multi or w.type != "select_slider") else [label])
    return True


# ------------------------------------------------------------------ the walk
class Walk:
    """One AppTest session going round the circuit; every failure is noted and the walk goes on."""

    def __init__(self):
        self.at = AppTest.from_file(APP, default_timeout=300)
        self.failures: list[str] = []
        self.runs = 0
        self.tabs_opened = 0
        self.tabs: dict[tuple[str, str], tuple[list[str], set[str]]] = {}  # (page, key): (labels, opened)
        self.at.run()
        self.check("the landing page")

    def check(self, where: str) -> bool:
        if self.at.exception:
            self.failures.append(f"{where}: {self.at.exception[0].value}")
            return False
        return True

    def picker_is_truthful(self, page: PageSpec, where: str) -> None:
        """B's picker box shows the model that its "Using **name** (source)." caption says is in use."""
        if not page.model_type:
            return
        used = [m.groups() for c in self.at.sidebar.caption if (m := USING.search(c.value))]
        if not used:
            if not any(page.model_type in i.value for i in self.at.info):
                self.failures.append(f"{where}: no model in use and no message saying why")
            return
        label, source = used[0]
        boxes = [s.value for s in self.at.sidebar.selectbox if s.label == "Shipped checkpoint"]
        if len(used) != 1 or (source == "shipped" and boxes != [label]):
            self.failures.append(f"{where}: the box says {boxes}, the caption {used}")

    def visit(self, page: PageSpec, where: str) -> None:
        self.at.switch_page(f"pages/{page.path}")
        self.at.run()
        if self.check(where):
            self.picker_is_truthful(page, where)

    def open_tab(self, page: PageSpec, turn: int) -> None:
        """Open tab number ``turn`` (modulo their count) of each of the page's keyed tab sets, as a click does."""
        opened = False
        for key, labels in tab_sets(self.at.main):
            if not labels:
                continue
            label = labels[turn % len(labels)]
            self.tabs.setdefault((page.path, key), (labels, set()))[1].add(label)
            opened = choose_tab(self.at, key, label) or opened
        if opened:
            self.rerun(f"{page.path} with its tab number {turn} open")
            self.tabs_opened += 1

    def to_ends(self, page: PageSpec, each: bool) -> None:
        """Set the page's controls to their minimum, then their maximum (together, or ``each`` alone)."""
        if not each:
            for end in ("min", "max"):
                if any([set_end(w, end) for w in controls(self.at)]):
                    self.rerun(f"{page.path} with every control at its {end}")
            return
        for wanted in [name(w) for w in controls(self.at)]:
            for end in ("min", "max"):
                w = next((w for w in controls(self.at) if name(w) == wanted), None)
                if w is not None and set_end(w, end):  # None: gone after an earlier change
                    self.rerun(f"{page.path} with {wanted[1]!r} at its {end}")

    def rerun(self, where: str) -> None:
        self.at.run()
        self.runs += 1
        self.check(where)


def walk_every_pair(each: bool) -> None:
    pages = available_pages()
    order = eulerian_circuit(len(pages))
    walk, t0 = Walk(), time.perf_counter()
    spent = {p.path: 0.0 for p in pages}
    departures = {p.path: 0 for p in pages}
    walk.visit(pages[order[0]], f"first visit of {pages[order[0]].path}")
    for a, b in zip(order, order[1:]):
        t = time.perf_counter()
        walk.open_tab(pages[a], departures[pages[a].path])
        departures[pages[a].path] += 1
        walk.to_ends(pages[a], each)
        walk.visit(pages[b], f"{pages[a].path} (controls at their ends) -> {pages[b].path}")
        spent[pages[a].path] += time.perf_counter() - t
    slowest = sorted(((t, p) for p, t in spent.items()), reverse=True)[:4]
    print(f"\n{len(order) - 1} switches, {walk.tabs_opened} tabs opened, {walk.runs} control reruns in "
          f"{time.perf_counter() - t0:.0f} s; "
          "slowest pages (controls + next switch, s): " + ", ".join(f"{p} {t:.0f}" for t, p in slowest))
    assert not walk.failures, "\n".join(dict.fromkeys(walk.failures))
    assert "gates.py" in {page for page, _ in walk.tabs}, "no tabs found: the walk would skip every closed tab"
    for (page, key), (labels, opened) in walk.tabs.items():
        assert opened == set(labels), f"{page}: tabs {set(labels) - opened} never opened"


@pytest.mark.slow  # 84-200 s on the 2-core machine: CI's tier (every page alone: tests/app/test_pages.py)
def test_every_ordered_pair_of_pages(shipped_plus_tiny):
    walk_every_pair(each=False)


@pytest.mark.slow  # skipped by default (tests/conftest.py); SEQVIZ_SLOW=1 or -m slow runs it, as CI does
def test_every_ordered_pair_of_pages_one_control_at_a_time(shipped_plus_tiny):
    walk_every_pair(each=True)
