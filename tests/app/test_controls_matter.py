"""Every control a page shows changes what is on screen (issue 51): each widget of the page's main area, on
each tab, is moved in turn and the page's elements (charts with their data, text, tables, metrics) compared
with those before. A control that changes nothing is not shown on that tab."""

from __future__ import annotations

import hashlib


from appkit.registry import PAGES
from tests.app.test_pages import move, open_clean

KINDS = ("slider", "select_slider", "selectbox", "radio", "segmented_control", "checkbox", "toggle",
         "number_input", "text_input", "text_area")
SHOWN = ("markdown", "caption", "info", "warning", "dataframe", "metric", "table")


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
            value = e.value if kind != "dataframe" else e.value.to_csv()
            out[f"{kind}{i}"] = str(value) if kind != "metric" else f"{e.label}={e.value}"
    return out


def controls(at) -> list[tuple[str, str]]:
    return [(kind, w.key) for kind in KINDS for w in at.main.get(kind) if w.key]


def check_page(path: str, tab_key: str, tabs: dict, query: dict | None = None, values: dict | None = None):
    """Open ``path`` on each of ``tabs`` (label -> keys not moved there), move each control in turn (``values``: key
    -> the raw value to give a select slider, whose options AppTest knows only formatted)."""
    page = next(p for p in PAGES if p.path == path)
    for tab, skip in tabs.items():
        at = open_clean(page, {**(query or {}), tab_key: tab})
        before = fingerprint(at)
        found = controls(at)
        assert found, f"{path} · {tab}: no control found"
        for kind, key in found:
            if key in skip:
                continue
            at = open_clean(page, {**(query or {}), tab_key: tab})
            widget = next(w for w in at.main.get(kind) if w.key == key)
            if key in (values or {}):
                widget.set_value(values[key]).run()
            else:
                move(widget, kind, "HAMLET. The king is dead." if kind == "text_area" else None).run()
            assert not at.exception, at.exception
            assert fingerprint(at) != before, f"{path} · {tab}: moving {key} ({kind}) changed nothing on screen"


def test_every_control_of_single_units_changes_its_tab(tiny_only):
    """Issue 51: Layer (and Signal, and the text) sat above the Saturation tab, which covers every layer and signal
    of held-out text, so moving them changed nothing there."""
    lstm = {"recurrent_lm": "tiny-lstm"}
    raw = {"units_sat": "0.05 / 0.95", "units_span": (1, 6), "units_thr": 0.0}
    check_page("units.py", "units_tab", {"Saturation": (), "Unit inspector": ()}, lstm, raw)
    # the pattern search opened at threshold 0 with no edge condition, where a random model's units are on; its corpus
    # search indexes the held-out corpus (minutes on two cores): that toggle is tested on its own
    check_page("units.py", "units_tab", {"Pattern search": ("units_search",)}, {**lstm, "units_edges": "false", "units_thr": "0.0"},
               {**raw, "units_thr": 0.1})
