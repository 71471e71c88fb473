"""The lessons in chromium, as a teacher opens them (issue 50): the copied root link opens the step, an address that
is no page says so in the visitor's language, and presenter mode on a 390 px phone shows every chart whole or
scrolled (never squeezed) with its text at the back-row size, in both languages."""

from __future__ import annotations

import pytest

from tests.browser.driver import wait_idle
from tests.browser.test_browser import assert_no_exception, browser, server  # noqa: F401 - the module's fixtures

pytestmark = pytest.mark.browser
CHARTS = """() => [...document.querySelectorAll('[data-testid="stVegaLiteChart"]')].map(c => {
  const drawn = c.querySelector('svg, canvas').getBoundingClientRect();
  return {box: c.getBoundingClientRect().width, client: c.clientWidth, scroll: c.scrollWidth, drawn: drawn.width};})"""


def opened(browser, url: str, width: int = 1400):  # noqa: F811 - the fixture
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.goto(url, wait_until="domcontentloaded")
    wait_idle(page, timeout=240_000)
    return page


def test_a_root_link_that_names_a_lesson_opens_its_step(browser, server):  # noqa: F811
    page = opened(browser, f"{server}/?lesson=stations&step=4&present=1&lang=zh")
    try:
        assert "/lessons?" in page.url and "step=4" in page.url and "present=1" in page.url, page.url
        assert page.get_by_text("第 4 步，共").first.is_visible()
        assert page.locator("section[data-testid='stSidebar']").is_hidden()  # presenter mode
        assert_no_exception(page, "root link")
    finally:
        page.close()


@pytest.mark.parametrize("lang, said", [("zh", "没有 /nowhere 这个页面"), ("en", "There is no page at /nowhere")])
def test_an_unknown_address_lands_on_the_zoo_saying_so_in_the_language(browser, server, lang, said):  # noqa: F811
    page = opened(browser, f"{server}/nowhere?lang={lang}")
    try:
        assert page.get_by_text(said).first.is_visible()
        assert page.locator("[role='dialog']").count() == 0  # Streamlit's English "Page not found" is not shown
        assert page.locator("h1").first.is_visible()
    finally:
        page.close()
    page = opened(browser, f"{server}/Lessons?lang={lang}")  # another case: the page it names
    try:
        assert "/lessons" in page.url and page.locator("[data-testid='stSelectbox']").first.is_visible()
    finally:
        page.close()


@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("lesson, step", [("stations", 1), ("stations", 3), ("stations", 11), ("attention", 4)])
def test_presenter_mode_on_a_phone_scrolls_wide_charts_and_keeps_text_large(browser, server, lang, lesson, step):  # noqa: F811
    page = opened(browser, f"{server}/lessons?lesson={lesson}&step={step}&present=1&lang={lang}&reveal=1", 390)
    try:
        assert_no_exception(page, f"{lesson} {step}")
        charts = page.evaluate(CHARTS)
        assert charts, "no chart drawn"
        for chart in charts:
            assert chart["box"] <= 390 and chart["client"] <= 390, chart  # inside the phone's width
            if chart["drawn"] > chart["client"] + 2:  # wider than the page: it scrolls, whole
                assert chart["scroll"] >= chart["drawn"] - 2, chart
        size = page.evaluate("() => parseFloat(getComputedStyle(document.querySelector("
                             "'[data-testid=\"stSelectbox\"] input')).fontSize)")
        assert size >= 17, size  # 1.1rem on a phone: the lesson picker is read too
        cells = page.locator("[data-testid='stTable'] td")
        if cells.count():
            assert float(cells.first.evaluate("e => parseFloat(getComputedStyle(e).fontSize)")) >= 17
    finally:
        page.close()
