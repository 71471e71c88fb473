"""A shared link straight to a model page, opened on a server that has just started: time to its first chart.

    python -m benchmarks.shared_link [--pages gates.py,attention.py] [--lang zh] [--repeat 3] [--keep-data]

For each page: a fresh ``streamlit run app.py`` (production settings), chromium opens
``/<page>?lang=<lang>`` as the first visitor, and the time from the navigation's start to the first
chart in the page's main area, and to the run's end, is printed (the median of ``--repeat`` fresh
servers: one run varies by +-0.4 s on the 2-core machine), with an empty data cache as on a fresh clone
(``--keep-data``: this machine's). Last line: the slowest page's figures
against the goal (first chart <= 3 s).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

from tests.browser.driver import IDLE, free_port, launch, start_server, stop_server
from appkit.registry import available_pages

CHARTS = "[data-testid='stMain'] [data-testid='stVegaLiteChart'], [data-testid='stMain'] [data-testid='stArrowVegaLiteChart']"
GOAL_S = 3.0


def open_cold(playwright, spec, lang: str, data: str | None) -> tuple[float, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEQVIZ_") or k == "SEQVIZ_DATA"}
    if data is not None:
        env["SEQVIZ_DATA"] = data
    port = free_port()
    server = start_server(env, port)
    try:
        browser = launch(playwright)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        t0 = time.monotonic()
        page.goto(f"http://127.0.0.1:{port}/{spec.url_path}?lang={lang}")
        page.wait_for_selector(CHARTS, timeout=120_000)
        first = time.monotonic() - t0
        page.wait_for_selector(IDLE, timeout=120_000)
        done = time.monotonic() - t0
        browser.close()
        return first, done
    finally:
        stop_server(server)


def main() -> None:
    from playwright.sync_api import sync_playwright

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", default="", help="comma-separated page files (default: every model page)")
    ap.add_argument("--lang", default="zh")
    ap.add_argument("--repeat", type=int, default=1, help="fresh servers per page; the median is printed")
    ap.add_argument("--keep-data", action="store_true",
                    help="use this machine's data cache (default: an empty one, as on a fresh clone, where the "
                         "shipped views that read the reference text are the ones that apply)")
    args = ap.parse_args()
    wanted = set(filter(None, args.pages.split(",")))
    pages = [p for p in available_pages() if p.model_type and (not wanted or p.path in wanted)]
    results = {}
    with tempfile.TemporaryDirectory() as empty, sync_playwright() as pw:
        data = None if args.keep_data else empty
        for spec in pages:
            runs = [open_cold(pw, spec, args.lang, data) for _ in range(args.repeat)]
            results[spec.path] = tuple(statistics.median(r[i] for r in runs) for i in (0, 1))
            print(f"{spec.path:22s} first chart {results[spec.path][0]:5.2f}s  done {results[spec.path][1]:5.2f}s",
                  flush=True)
    worst = max(results, key=lambda k: results[k][0])
    print(f"shared_link: first chart max {results[worst][0]:.2f}s ({worst}), done max "
          f"{max(d for _f, d in results.values()):.2f}s (goal first chart <= {GOAL_S:.0f} s)")


if __name__ == "__main__":
    main()
