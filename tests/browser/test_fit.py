"""Every page fits its window in chromium: at 1400 and 390 px, in English and 中文, no page scrolls sideways, every
drawn chart lies inside its column (or scrolls whole in a box of its own), no chart title is cut with "…", no element
toolbar covers a control, and Vega writes no error (issue 51, item 1).

One server and one browser tab per (width, language), reused across the pages: the four walks take about two
minutes together on an idle 2-core machine.
"""

from __future__ import annotations

import os

import pytest

from appkit.registry import PAGES
from tests.browser.driver import free_port, start_server, stop_server, wait_idle
from tests.browser.test_browser import browser, need_chromium  # noqa: F401 - browser: the fixture, on this server

pytestmark = pytest.mark.browser

SHOWN = [p for p in PAGES if p.exists]
SLACK = 1  # px: sub-pixel layout rounding

# Everything a visitor would read as wrong with the page's width, one line per offence (JS, run in the page).
MEASURE = """slack => {
  const out = [], box = e => e.getBoundingClientRect();
  const doc = document.documentElement, main = document.querySelector("[data-testid=stMain]");
  if (doc.scrollWidth > window.innerWidth + slack)
    out.push(`the page is ${doc.scrollWidth} px wide in a ${window.innerWidth} px window`);
  if (main && main.scrollWidth > main.clientWidth + slack)
    out.push(`the main area scrolls to ${main.scrollWidth} px in a ${main.clientWidth} px window`);
  const heading = el => {  // the chart's own title when Vega drew it as SVG, else the heading above it
    const t = el.querySelector(".role-title-text");
    if (t) return t.textContent;
    const hs = [...document.querySelectorAll("[data-testid=stMain] h1, [data-testid=stMain] h2, "
      + "[data-testid=stMain] h3")].filter(h => h.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING);
    return hs.length ? "under '" + hs[hs.length - 1].textContent.trim() + "'" : "?";
  };
  const BLOCK = new Set(["stColumn", "stVerticalBlock", "stHorizontalBlock", "stMainBlockContainer"]);
  for (const el of document.querySelectorAll("[data-testid=stVegaLiteChart]")) {
    const drawn = [el.querySelector(".vega-embed") || el, ...el.querySelectorAll(".vega-embed > canvas, "
      + ".vega-embed > svg")].map(box).filter(r => r.width > 0);
    if (!drawn.length) continue;  // on a tab not shown
    // Vega cuts a title wider than the limit Streamlit gives it (its box less 40 px) with "…": a title must wrap
    for (const t of el.querySelectorAll(".role-title text, .role-title tspan"))
      if (t.textContent.trim().endsWith("\u2026")) {
        out.push(`chart title ${JSON.stringify(t.closest("text").textContent)} is cut with "…"`);
        break;
      }
    const right = Math.max(...drawn.map(r => r.right)), width = Math.max(...drawn.map(r => r.width));
    let a = el, scrolls = false;  // the chart's own element may scroll, or a box around it
    for (; a && !BLOCK.has(a.dataset.testid); a = a.parentElement)
      scrolls ||= ["auto", "scroll"].includes(getComputedStyle(a).overflowX);
    if (!a) continue;
    const col = box(a);
    if (!scrolls && right > col.right + slack)
      out.push(`chart ${JSON.stringify(heading(el))} (${Math.round(width)} x ${Math.round(drawn[0].height)} px)`
        + ` ends at ${Math.round(right)} px, past its column's right edge at ${Math.round(col.right)} px`);
  }
  // An element's toolbar (Streamlit fades it in just above a chart's or table's top right corner while the pointer
  // or a finger is on it) must not lie over a control above: the pointer on its way up keeps it open.
  const CONTROLS = "[data-baseweb=select], [data-baseweb=input], [data-baseweb=textarea], [role=slider], "
    + "[role=radiogroup] label, [data-testid=stCheckbox] label, button, [data-testid=stFileUploaderDropzone]";
  for (const tb of document.querySelectorAll("[data-testid=stElementToolbar]")) {
    const owner = tb.closest("[data-testid=stFullScreenFrame]") || tb.parentElement, o = box(owner);
    const w = box(tb).width, h = box(tb).height;
    if (!o.width || !w) continue;
    const t = {left: o.right - w, right: o.right, top: o.top - h, bottom: o.top};  // where it shows
    for (const c of document.querySelectorAll("[data-testid=stMain] :is(" + CONTROLS + ")")) {
      if (owner.contains(c)) continue;
      const r = box(c);
      if (r.width && r.left < t.right - slack && r.right > t.left + slack && r.top < t.bottom - slack
          && r.bottom > t.top + slack) {
        const wid = c.closest("[data-testid^=st]:not([data-testid^=stBase])");
        out.push(`the toolbar of the ${owner.querySelector("[data-testid^=st]")?.dataset.testid} ${JSON.stringify(
          heading(owner))} covers ${wid ? wid.dataset.testid : c.tagName} ${JSON.stringify(
          (wid || c).innerText.trim().split("\\n")[0].slice(0, 40))}`);
        break;
      }
    }
  }
  return out;
}"""

# Vega's logger writes "ERROR ..." (console.error); a spec Vega cannot parse throws (a page error).
CHARTS_DRAWN = """() => [...document.querySelectorAll("[data-testid=stVegaLiteChart]")].every(
  el => !el.getBoundingClientRect().width || el.querySelector(".vega-embed > canvas, .vega-embed > svg"))"""


def vega_error(kind: str, text: str) -> bool:
    return kind == "pageerror" or (kind == "error" and not text.startswith("Failed to load resource"))


@pytest.fixture(scope="module")
def server():
    need_chromium()
    port = free_port()
    proc = start_server(dict(os.environ), port)  # the shipped checkpoints: the pages as a visitor first sees them
    yield f"http://127.0.0.1:{port}"
    stop_server(proc)


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("width", [1400, 390])
def test_every_page_fits_its_window_and_every_chart_its_column(browser, server, width, lang):
    page = browser.new_page(viewport={"width": width, "height": 900})
    logs: list[tuple[str, str]] = []
    page.on("console", lambda m: logs.append((m.type, m.text)))
    page.on("pageerror", lambda e: logs.append(("pageerror", str(e))))
    found = []
    try:
        for spec in SHOWN:
            logs.clear()
            page.goto(f"{server}/{spec.url_path}" + ("?lang=zh" if lang == "zh" else ""),
                      wait_until="domcontentloaded")
            wait_idle(page, settle_ms=200)
            page.wait_for_function(CHARTS_DRAWN, timeout=30_000)
            where = f"{spec.path} at {width} px in {lang}"
            found += [f"{where}: {problem}" for problem in page.evaluate(MEASURE, SLACK)]
            found += [f"{where}: console {kind}: {text[:300]}" for kind, text in logs if vega_error(kind, text)]
    finally:
        page.close()
    assert not found, "\n".join(found)


def test_the_model_multiselect_takes_a_tap_at_390_px(browser, server):
    """Issue 51: at 390 px the comparison's table and chart showed their toolbar over the Models to compare box
    (a tap on its lower right corner landed on the toolbar). Playwright's click fails when another element would
    receive it."""
    page = browser.new_page(viewport={"width": 390, "height": 900})
    try:
        page.goto(f"{server}/language_model", wait_until="domcontentloaded")
        wait_idle(page)
        chooser = page.locator("[data-testid=stMultiSelect]").first
        for below in ("[data-testid=stDataFrame]", "[data-testid=stMain] [data-testid=stVegaLiteChart]"):
            page.locator(below).last.hover()  # its toolbar fades in; the pointer then moves up to the box
            page.wait_for_timeout(600)
            box = chooser.bounding_box()
            x, y = box["x"] + box["width"] - 30, box["y"] + box["height"] - 6
            page.mouse.move(x, y, steps=5)
            hit = page.evaluate("([x, y]) => document.elementFromPoint(x, y).closest('[data-testid]').dataset.testid",
                                [x, y])
            assert hit == "stMultiSelect", f"after {below}, a tap on the box's corner lands on {hit}"
            chooser.click(position={"x": box["width"] - 30, "y": box["height"] - 6}, timeout=5_000)
            page.locator("[role=option]").first.wait_for(timeout=5_000)  # the list of models opened
            page.keyboard.press("Escape")
    finally:
        page.close()
