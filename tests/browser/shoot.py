"""Screenshots of app pages in Debian's chromium, for looking at a change by eye.

    python -m tests.browser.shoot gradient_flow "gates?lang=zh" --width 1400 390 --out /tmp/shots
    python -m tests.browser.shoot attention --click-tab "Alignment" --out /tmp/shots

Starts ``streamlit run app.py`` on a free port, opens each ``url_path[?query]`` at each width,
waits for the run to finish and saves ``<out>/<page>_<width>.png`` (the whole page). ``--click-tab``
opens a tab by its label first (repeatable; missing tabs are skipped).
"""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

from tests.browser.driver import free_port, launch, screenshot, start_server, stop_server, wait_idle


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pages", nargs="+", help="url paths, e.g. gates or 'attention?lang=zh'")
    ap.add_argument("--width", type=int, nargs="+", default=[1400])
    ap.add_argument("--out", type=Path, default=Path("/tmp/shots"))
    ap.add_argument("--click-tab", action="append", default=[])
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    from playwright.sync_api import sync_playwright

    port = free_port()
    proc = start_server(dict(os.environ), port)
    try:
        with sync_playwright() as p:
            browser = launch(p)
            for width in args.width:
                page = browser.new_page(viewport={"width": width, "height": 900})
                for target in args.pages:
                    page.goto(f"http://127.0.0.1:{port}/{target}", timeout=120_000)
                    wait_idle(page, timeout=180_000)
                    for tab in args.click_tab:
                        loc = page.get_by_role("tab", name=tab)
                        if loc.count():
                            loc.first.click()
                            wait_idle(page, timeout=180_000)
                    name = re.sub(r"[^\w.-]+", "_", target).strip("_") or "home"
                    path = args.out / f"{name}_{width}.png"
                    screenshot(page, path, width=width)
                    print(path)
                page.close()
            browser.close()
    finally:
        stop_server(proc)


if __name__ == "__main__":
    main()
