"""appkit.draw: the SVG/PNG/CSV buttons and the whole-view HTML button draw without an error."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest


def script():
    import altair as alt
    import pandas as pd

    from appkit.cache import png as _png, svg as _svg
    from appkit.draw import export_buttons, html_button, spec_json as _spec_json
    from seqviz.export import Section

    frame = pd.DataFrame({"step": [0, 1, 2], "loss": [1.0, 0.5, 2.0]})
    chart = alt.Chart(frame).mark_line().encode(x="step:Q", y="loss:Q")
    export_buttons(chart, "Surprisal (tiny)", "model: tiny · unit: nats", data=frame)
    export_buttons(chart.to_dict(), "second chart", "model: tiny")
    html_button([Section("Surprisal", chart, frame)], "Language model", "http://localhost:8501/language_model")
    spec = _spec_json(chart)
    import streamlit as st

    st.session_state["svg_ok"] = _svg(spec, "model: tiny").startswith("<svg")
    st.session_state["png_ok"] = _png(spec, None)[:4] == b"\x89PNG"


def test_buttons_draw_and_make_files():
    at = AppTest.from_function(script, default_timeout=60).run()
    assert not at.exception, at.exception
    buttons = at.get("download_button")
    assert len(buttons) == 6  # SVG, PNG, CSV; SVG, PNG; HTML
    assert at.session_state["svg_ok"] and at.session_state["png_ok"]


# ------------------------------------------------------------------ every page of the app
import pytest  # noqa: E402

from appkit.registry import PAGES  # noqa: E402

CHART_PAGES = [p for p in PAGES if p.model_type]


def buttons(at, label: str) -> list:
    return [b for b in at.get("download_button") if b.label == label]


@pytest.fixture
def deferred(monkeypatch) -> dict:
    """{file id: callable} of every deferred download registered (AppTest's runtime ends with the run)."""
    from streamlit.runtime.media_file_manager import MediaFileManager

    seen, add = {}, MediaFileManager.add_deferred

    def record(self, data_callable, *args, **kwargs):
        file_id = add(self, data_callable, *args, **kwargs)
        seen[file_id] = data_callable
        return file_id

    monkeypatch.setattr(MediaFileManager, "add_deferred", record)
    return seen


def made_on_click(at, deferred: dict, label: str, index: int = 0):
    """What a download button's deferred callable returns, called as a click would (no script run)."""
    file_id = buttons(at, label)[index].proto.deferred_file_id
    assert file_id, f"{label}: the file is not made lazily"
    return deferred[file_id]()


@pytest.fixture
def no_files_on_rerun(monkeypatch):
    """Building an SVG, PNG or HTML file (or even a chart's spec for one) during a page run fails it."""
    from seqviz import export

    def refuse(*_, **__):
        raise AssertionError("an export file was built during a page run, not on click")

    for name in ("to_svg", "to_png", "to_html", "spec_of"):
        monkeypatch.setattr(export, name, refuse)


@pytest.mark.parametrize("page", CHART_PAGES, ids=[p.path for p in CHART_PAGES])
def test_every_chart_of_every_page_has_svg_and_png_buttons(page, shipped_plus_tiny, no_files_on_rerun):
    """The AppTest pass of each page: no exception, one SVG and one PNG button per chart drawn
    (st.altair_chart and st.vega_lite_chart both arrive as vega_lite_chart), one HTML button,
    and no file built on the page's runs (the buttons make them on click)."""
    from tests.app.test_pages import find_control, move, open_page

    if not page.exists:
        pytest.skip(f"pages/{page.path} is not written yet")
    at = open_page(page)
    for step in ("opened", "main control moved"):
        assert not at.exception, f"{page.path} ({step}): {at.exception}"
        charts = at.get("vega_lite_chart")
        assert charts, f"{page.path} ({step}): no chart drawn"
        assert len(buttons(at, "SVG")) == len(charts), (page.path, step, len(charts), len(buttons(at, "SVG")))
        assert len(buttons(at, "PNG")) == len(charts), (page.path, step, len(charts), len(buttons(at, "PNG")))
        assert len(buttons(at, "This view as one HTML file")) == 1, (page.path, step)
        if step == "opened" and page.main_control:
            kind, label, *text = page.main_control
            move(find_control(at, kind, label), kind, *text).run()


def test_the_files_a_page_offers(shipped_plus_tiny, deferred):
    """Clicked: SVG and PNG of a chart carry the page's state; the HTML file holds every chart, the
    numbers, the card without its history, and a link back with the model and the moved control."""
    from tests.app.test_pages import find_control, open_page

    page = next(p for p in PAGES if p.path == "exposure_bias_lm.py")
    at = open_page(page, {"recurrent_lm": "shakespeare-char-gru"})
    find_control(at, "slider", "Prompt (tokens)").set_value(30).run()
    assert not at.exception, at.exception
    svg = made_on_click(at, deferred, "SVG")
    assert svg.startswith("<svg") and "shakespeare-char-gru" in svg and "prompt: 30" in svg
    assert made_on_click(at, deferred, "PNG")[:4] == b"\x89PNG"
    page_html = made_on_click(at, deferred, "This view as one HTML file")
    assert page_html.startswith("<!DOCTYPE html>") and page_html.count("id='chart-") == len(at.get("vega_lite_chart"))
    assert "/exposure_bias_lm?" in page_html and "recurrent_lm=shakespeare-char-gru" in page_html
    assert "ebl_prompt=30" in page_html and "Model card" in page_html and "train_loss" not in page_html
    assert "The numbers behind the chart" in page_html
    assert "checkpoints/shakespeare-char-gru" not in page_html  # no server file path in a file handed out
