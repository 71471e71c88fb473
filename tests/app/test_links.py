"""A shared link opens the same view in any language (appkit.state.follow_link, appkit.widgets.lazy_tabs).

Streamlit writes a bound choice's *label* into the URL, in the language of whoever made the link; a
visitor in another language would get the default instead. Each case is checked both ways (a Chinese
link opened in English, an English link opened in Chinese)."""

from __future__ import annotations

import json

import pytest

from streamlit.testing.v1 import AppTest

from seqviz.text import gettext_in
from appkit.registry import PAGES
from seqviz.views.gates import ORDER
from tests.app.test_pages import APP


def open_link(path: str, query: dict) -> AppTest:
    """A visitor's first run of ``path`` on a shared link (the landing page: the app's first run; another
    page: after a landing without the query, as AppTest cannot switch pages from a Chinese landing page)."""
    page = next(p for p in PAGES if p.path == path)
    at = AppTest.from_file(APP, default_timeout=120)
    if page.default:
        at.query_params.update(query)
        at.run()
    else:
        at.run()
        at.query_params.update(query)
        at.switch_page(f"pages/{page.path}")
        at.run()
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    return at


CASES = [  # page, key, option, its msgid (the label in English), how to read the widget
    ("gates.py", "gate_sort", "value", "value", "heat map"),
    ("gates.py", "gate_signal_lstm", "forget", "forget gate f", "segmented_control"),
    ("trajectories.py", "traj_view", "3-D", "3-D", "radio"),
    ("trajectories.py", "traj_step", "final", "final", "select_slider"),
    ("zoo.py", "zoo_sort", "Parameters", "Parameters", "selectbox"),
    ("language_model.py", "lm_unit", "bits", "bits", "radio"),
]


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("path, key, option, msgid, kind", CASES, ids=[c[1] for c in CASES])
def test_a_link_made_in_another_language_opens_the_same_choice(path, key, option, msgid, kind, lang):
    other = {"en": "zh", "zh": "en"}[lang]
    label = gettext_in(other, msgid)
    assert label != gettext_in(lang, msgid), "no translation: this case could not fail"
    at = open_link(path, {"lang": lang, key: label})
    assert (heat_map_order(at) if kind == "heat map" else getattr(at, kind)(key=key).value) == option


def heat_map_order(at: AppTest) -> str:
    """The unit order the Gate page's heat map opens on (its radio is the chart's own, under it)."""
    spec = json.loads(at.get("vega_lite_chart")[0].proto.spec)
    return next(p["value"] for p in spec["params"] if p["name"] == ORDER)


def test_a_link_in_the_visitors_own_language_is_left_to_streamlit():
    at = open_link("gates.py", {"gate_sort": "index"})
    assert heat_map_order(at) == "index"
    at = open_link("gates.py", {"gate_sort": "no such label"})
    assert heat_map_order(at) == "variance"  # an unknown label: the default, as before
    assert "gate_sort" not in at.query_params  # and the address no longer carries it


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_link_to_a_gate_tab_that_moved_opens_it_on_the_single_units_page(lang):
    """Saturation, the unit inspector and the pattern search moved from the Gate page to Single units: an old
    link (made in either language) opens the tab there, with the link's text and layer."""
    other = {"en": "zh", "zh": "en"}[lang]
    text = "HAMLET.\nThe rest is silence.\n"
    at = open_link("gates.py", {"lang": lang, "gate_tab": gettext_in(other, "Pattern search"), "gate_text": text,
                                "gate_layer": "1"})
    assert at.text_area(key="units_text").value == text and at.selectbox(key="units_layer").value == 1
    assert at.slider(key="units_thr").value == pytest.approx(0.3)  # the pattern search tab is the open one
    assert at.title[0].value == gettext_in(lang, "Single units")
