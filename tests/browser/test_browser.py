"""Real-browser pass: Debian chromium (Playwright) against `streamlit run app.py`, every page in PAGES.

Opens each page, waits until the script has finished, moves the page's main control, checks
that no exception box appears, and saves a screenshot to artifacts/screenshots/. Without
/usr/bin/chromium the pass is skipped, unless SEQVIZ_REQUIRE_BROWSER=1 (CI), where it fails.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from appkit.cache import list_checkpoints
from appkit.registry import PAGES, PageSpec
from tests.browser.driver import (CHROMIUM, ROOT, free_port, launch, move_control, screenshot,
                                   start_server, stop_server, wait_idle, widget)

pytestmark = pytest.mark.browser


class Server(str):
    """The app's base URL, plus the checkpoint roots the server was started with."""

    def __new__(cls, url: str, roots):
        obj = super().__new__(cls, url)
        obj.roots = list(roots)
        return obj
SHOTS = ROOT / "artifacts" / "screenshots"
VISITED: set[str] = set()  # pages this module's server has rendered (for the memory check at the end)
MAX_RSS_MB = 1200  # Community Cloud gives an app about 1 GB; docs/robustness.md explains


def need_chromium():
    if CHROMIUM.exists():
        return
    reason = f"{CHROMIUM} not found: install Debian's chromium (apt-get install chromium) for the browser pass"
    if os.environ.get("SEQVIZ_REQUIRE_BROWSER") == "1":
        pytest.fail(reason + " (SEQVIZ_REQUIRE_BROWSER=1)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def server(tiny_lm_dir):
    need_chromium()
    roots = [ROOT / "checkpoints", tiny_lm_dir]
    env = dict(os.environ, SEQVIZ_CHECKPOINTS=os.pathsep.join(map(str, roots)))
    port = free_port()
    proc = start_server(env, port)
    url = Server(f"http://127.0.0.1:{port}", roots)
    url.pid = proc.pid
    yield url
    stop_server(proc)


@pytest.fixture(scope="module")
def browser(server):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = launch(pw)
        yield b
        b.close()


def assert_no_exception(page, what: str) -> None:
    boxes = page.locator("[data-testid='stException']")
    assert boxes.count() == 0, f"{what}: {boxes.first.inner_text()[:800]}"


@pytest.mark.parametrize("spec", PAGES, ids=[p.path for p in PAGES])
def test_page_in_chromium(browser, server, spec: PageSpec):
    if not spec.exists:
        pytest.skip(f"pages/{spec.path} is listed in PAGES but not written yet")
    SHOTS.mkdir(parents=True, exist_ok=True)
    shot = SHOTS / f"{Path(spec.path).stem}.png"
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(f"{server}/{spec.url_path}", wait_until="domcontentloaded")
        wait_idle(page)
        VISITED.add(spec.path)
        assert page.locator("h1").first.is_visible(), f"{spec.path}: no title rendered"
        assert_no_exception(page, spec.path)
        nav = page.locator("[data-testid='stSidebarNav']").inner_text()
        assert spec.section in nav and spec.title in nav, f"navigation is not app.py's: {nav!r}"
        if spec.model_type and not list_checkpoints(spec.model_type, roots=server.roots):
            # Nothing to load: the page must say so (as in the AppTest pass), not fail.
            assert page.locator("[data-testid='stAlertContentInfo']", has_text=spec.model_type).count()
        elif spec.main_control:
            url_before = page.url
            move_control(page, *spec.main_control)
            page.wait_for_timeout(300)
            wait_idle(page)
            assert_no_exception(page, f"{spec.path} after moving {spec.main_control[1]}")
            if spec.path == "language_model.py":  # the bound slider writes itself into the URL
                assert "lm_temp=" in page.url and page.url != url_before, page.url
        screenshot(page, shot)
    except BaseException:
        screenshot(page, shot.with_name(shot.stem + "-FAILED.png"))
        raise
    finally:
        page.close()


def test_copied_link_reopens_the_language_model_view(browser, server):
    spec = next(p for p in PAGES if p.path == "language_model.py")
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(f"{server}/{spec.url_path}?lm_temp=1.35&lm_unit=bits&recurrent_lm=tiny-rnn",
                  wait_until="domcontentloaded")
        wait_idle(page)
        thumb = widget(page, "stSlider", "Temperature").locator("input[type='range']").first
        assert float(thumb.input_value()) == 1.35
        assert page.get_by_text("Mean loss (bits/token)").first.is_visible()
        # The exact loss is in each token's hover title, in the chosen unit; unscored first token says so.
        spans = page.locator(".seqviz-surprisal").first.locator("span")
        assert "not scored" in spans.nth(0).get_attribute("title")
        assert " bits (p = " in spans.nth(3).get_attribute("title")
        assert page.locator("[data-testid='stSidebar']").get_by_text("tiny-rnn").first.is_visible()
        assert_no_exception(page, "restored view")
    finally:
        page.close()


@pytest.mark.parametrize("old, lands, title, shown", [
    ("word2vec?w2v_tab=Word+map&w2v_c=lord&w2v_expected=", "/word_map?", "Word map", "w2v_c=lord"),
    ("word2vec?w2v_tab=%E8%AF%8D%E5%9B%BE&lang=zh", "/word_map?", "词图", "lang=zh"),  # the tab named in Chinese
    ("gradient_flow?gf_tab=Clipping&gf_lr=2.0&recurrent_lm=tiny-rnn", "/exploding_vanishing?",
     "Exploding and vanishing gradients", "gf_lr=2.0"),
    ("exposure_bias?eb_tab=Decoding+strategies&eb_beam=3", "/decoding?", "Decoding strategies", "eb_beam=3"),
    ("gates?gate_tab=Memory+as+attention&gate_pos=20", "/memory_attention?", "Memory as attention", "ma_pos=20"),
])
def test_a_link_to_a_tab_that_became_a_page_lands_there(browser, server, old, lands, title, shown):
    """Links made when the word map, the gradient benches and the decoding strategies were tabs: the browser ends
    on their page, the link's parameters in its URL (the moved tab's name under the new page's tab key, if it
    has tabs)."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(f"{server}/{old}", wait_until="domcontentloaded")
        wait_idle(page)
        assert_no_exception(page, old)
        assert lands in page.url and shown in page.url, page.url
        assert page.locator("h1").first.inner_text().strip() == title
        if "gf_tab" in old:
            assert "gf_ev_tab=Clipping" in page.url and "gf_tab=" not in page.url, page.url
            assert page.get_by_role("tab", name="Clipping", selected=True).count() == 1
    finally:
        page.close()


def test_the_heat_maps_unit_order_and_count_switch_in_the_browser_and_stay(browser, server):
    """The Gate page's unit count and order are the heat map's own controls: moving one redraws the chart at
    once (16 px a unit row: every unit labelled), the choice reaches the address, and a server rerun that redraws the chart (the
    position) keeps it."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    chart = page.locator("[data-testid='stMain'] [data-testid='stVegaLiteChart']").first
    try:
        page.goto(f"{server}/gates", wait_until="domcontentloaded")
        wait_idle(page)
        before = chart.bounding_box()["height"]
        count = chart.locator(".vega-bindings input[type='range']").first
        count.fill("44")  # 32 -> 44 units
        page.wait_for_function("([el, h]) => el.getBoundingClientRect().height > h + 100",
                               arg=[chart.element_handle(), before], timeout=5_000)
        assert abs(chart.bounding_box()["height"] - before - 12 * 16) < 13
        chart.locator(".vega-bindings input[type='radio'][value='index']").first.check()
        page.wait_for_function("() => location.search.includes('gate_units=44') && "
                               "location.search.includes('gate_sort=index')", timeout=10_000)
        wait_idle(page)
        move_control(page, "slider", "Position")  # a server rerun that draws the heat map anew (its value order moved)
        page.wait_for_function("() => location.search.includes('gate_pos=1')", timeout=10_000)
        wait_idle(page)
        assert chart.locator(".vega-bindings input[type='range']").first.input_value() == "44"
        assert chart.locator(".vega-bindings input[type='radio'][value='index']").first.is_checked()
        assert abs(chart.bounding_box()["height"] - before - 12 * 16) < 13
        assert_no_exception(page, "gate heat map after its own controls")
    finally:
        page.close()


def test_the_labs_analogy_follows_the_visitor_to_the_word_map(browser, server):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(f"{server}/word2vec", wait_until="domcontentloaded")
        wait_idle(page)
        box = widget(page, "stTextInput", "c (... as c is to ?)").locator("input").first
        box.fill("lord")
        box.press("Enter")
        wait_idle(page)
        page.locator("[data-testid='stSidebarNav'] a", has_text="Word map").first.click()
        wait_idle(page)
        assert "/word_map" in page.url, page.url
        assert widget(page, "stTextInput", "c (... as c is to ?)").locator("input").first.input_value() == "lord"
        assert page.get_by_text("The analogy drawn: man : woman :: lord :").first.is_visible()
        assert_no_exception(page, "word map after the lab")
    finally:
        page.close()


def test_the_chart_code_is_fetched_while_a_first_visit_runs_and_leaves_no_trace(browser, server):
    """A visitor's first page: the browser asks for Streamlit's chart code (ArrowVegaLiteChart, then Vega) before
    the page's title arrives, not after its first chart; at the run's end no chart is left outside the page."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})  # a new context: nothing cached yet
    page.add_init_script("""new MutationObserver((_, obs) => {
        if (document.querySelector("[data-testid='stMain'] h1")) { window.__title = performance.now(); obs.disconnect(); }
      }).observe(document, {childList: true, subtree: true});""")
    try:
        page.goto(f"{server}/gates", wait_until="domcontentloaded")
        wait_idle(page)
        code, title = page.evaluate("""() => [performance.getEntriesByType("resource").find(
            e => e.name.includes("/ArrowVegaLiteChart."))?.startTime, window.__title]""")
        assert code is not None and title is not None, (code, title)
        assert code < title, f"chart code asked for {code - title:.0f} ms after the title"
        assert page.locator("[data-testid='stSidebar'] [data-testid='stVegaLiteChart']").count() == 0
        assert page.locator("[data-testid='stMain'] [data-testid='stVegaLiteChart']").count() >= 1
    finally:
        page.close()


def test_missing_chromium_skips_or_fails_when_required(monkeypatch, tmp_path):
    monkeypatch.setattr(sys.modules[__name__], "CHROMIUM", tmp_path / "no-chromium")
    monkeypatch.delenv("SEQVIZ_REQUIRE_BROWSER", raising=False)
    with pytest.raises(pytest.skip.Exception, match="apt-get install chromium"):
        need_chromium()
    monkeypatch.setenv("SEQVIZ_REQUIRE_BROWSER", "1")
    with pytest.raises(pytest.fail.Exception, match="SEQVIZ_REQUIRE_BROWSER=1"):
        need_chromium()


def test_server_memory_after_every_page(browser, server):
    """After every page has run on the shipped checkpoints, the server's resident memory stays <= 1.2 GB.

    Runs after the page tests above (same server); alone, it opens every page itself first.
    """
    from tests.browser.driver import rss_mb

    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        for spec in PAGES:
            if spec.exists and spec.path not in VISITED:
                page.goto(f"{server}/{spec.url_path}", wait_until="domcontentloaded")
                wait_idle(page)
                VISITED.add(spec.path)
    finally:
        page.close()
    rss = rss_mb(server.pid)
    print(f"server rss after {len(VISITED)} pages: {rss:.0f} MB")
    assert 50 < rss <= MAX_RSS_MB, f"server holds {rss:.0f} MB after every page (goal <= {MAX_RSS_MB} MB)"


@pytest.mark.parametrize("width", [1400, 390])
def test_the_beam_tree_scrolls_inside_its_column_and_never_widens_the_page(browser, server, width):
    """Issue 51: the 24-step tree (~2,000 px) was drawn at its own width and the main area scrolled to 2,120 px."""
    page = browser.new_page(viewport={"width": width, "height": 900})
    try:
        page.goto(f"{server}/decoding", wait_until="domcontentloaded")
        wait_idle(page)
        page.locator(".st-key-decoding_tree canvas, .st-key-decoding_tree svg").first.wait_for()
        main = page.evaluate("(e => [e.scrollWidth, e.clientWidth])(document.querySelector('[data-testid=stMain]'))")
        assert main[0] <= main[1], f"the page is {main[0]} px wide in a {main[1]} px window"
        # the tree is wider than its column and scrolls inside its box (the box, or the chart element in it: PAGE_CSS)
        tree, box, scrolls = page.locator(".st-key-decoding_tree").evaluate("""e => {
            const drawn = e.querySelector('.vega-embed canvas, .vega-embed svg.marks'), inner = e.querySelector('[data-testid=stVegaLiteChart]');
            const scroller = [e, inner].find(x => x && x.scrollWidth > x.clientWidth
                                             && ['auto', 'scroll'].includes(getComputedStyle(x).overflowX));
            return [drawn.getBoundingClientRect().width, e.clientWidth, !!scroller]; }""")
        assert tree > box and scrolls, (tree, box, scrolls)
    finally:
        page.close()
