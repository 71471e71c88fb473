"""App latency in a real browser: cold start, warm page switch, one widget change, server memory.

    python benchmarks/app_latency.py [--checkpoints DIR] [--repeats 5]

* cold: from launching ``streamlit run app.py`` to the landing page fully rendered in
  chromium (script finished, title visible); the browser is started beforehand.
* warm: median time to switch pages through the sidebar once every page has been visited.
* widget: median time from moving the Temperature slider on the language-model page to
  the rerun having finished (a new sample drawn and shown).
* rss: the server's resident memory after visiting every page in appkit.registry.PAGES.

Goals on the project's 2-core machine: cold <= 6 s, widget <= 0.5 s, rss <= 1.2 GB.
The last line printed is the figure.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from appkit.registry import available_pages  # noqa: E402
from tests.browser.harness import (IDLE, free_port, launch, start_server, stop_server,  # noqa: E402
                                   wait_changed, widget)


def rss_mb(pid: int) -> float:
    """Resident set size of a process (Linux /proc), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc status")


def cpu_s(pid: int) -> float:
    """User + system CPU seconds a process has used (Linux /proc): load-independent cost."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def switch(page, title: str) -> float:
    """Click a sidebar link; done when the page's title (h1) has changed and the run has finished."""
    before = page.locator("h1").first.inner_text()
    link = page.locator("[data-testid='stSidebarNav'] a", has_text=title).first
    t0 = time.perf_counter()
    link.click()
    wait_changed(page, "h1", before)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoints", default=None, help="checkpoint root(s) (default: ./checkpoints)")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    env = dict(os.environ)
    if args.checkpoints:
        env["SEQVIZ_CHECKPOINTS"] = args.checkpoints
    pages = available_pages()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = launch(pw)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        port = free_port()
        t0 = time.perf_counter()
        server = start_server(env, port)
        up = time.perf_counter() - t0
        try:
            page.goto(f"http://127.0.0.1:{port}/", wait_until="domcontentloaded")
            page.locator("h1").first.wait_for(timeout=90_000)
            page.wait_for_selector(IDLE, timeout=90_000)
            cold = time.perf_counter() - t0
            cold_cpu = cpu_s(server.pid)
            first_visit = {}
            for spec in pages[1:]:  # every page once (loads models, imports torch)
                first_visit[spec.title] = switch(page, spec.title)
            switch(page, pages[0].title)
            warm = [switch(page, spec.title) for _ in range(2) for spec in pages[1:] + pages[:1]]
            widget_times, widget_cpu = [], []
            lm = next((p for p in pages if p.path == "language_model.py"), None)
            if lm is not None:
                switch(page, lm.title)
                thumb = widget(page, "stSlider", "Temperature").locator("input[type='range']").first
                for i in range(args.repeats):  # 0.80 -> 0.85 -> 0.80 ...: a new sample each time
                    before = page.locator(".seqviz-sample").first.inner_text()
                    thumb.focus()
                    c1, t1 = cpu_s(server.pid), time.perf_counter()
                    thumb.press("ArrowRight" if i % 2 == 0 else "ArrowLeft")
                    wait_changed(page, ".seqviz-sample", before)
                    widget_times.append(time.perf_counter() - t1)
                    widget_cpu.append(cpu_s(server.pid) - c1)
            rss = rss_mb(server.pid)
        finally:
            stop_server(server)
            browser.close()

    warm_s = statistics.median(warm) if warm else float("nan")
    widget_s = statistics.median(widget_times) if widget_times else float("nan")
    load = os.getloadavg()[0]
    print(f"machine: {os.cpu_count()} CPUs, load average {load:.1f} during the run")
    print(f"server answered /_stcore/health after {up:.2f} s; server CPU until the first page was shown "
          f"{cold_cpu:.2f} s")
    if widget_cpu:
        print(f"server CPU per temperature change: median {statistics.median(widget_cpu):.3f} s")
    for title, seconds in first_visit.items():
        print(f"first visit to {title}: {seconds:.2f} s")
    print(f"warm page switches: {', '.join(f'{w:.2f}' for w in warm)} s")
    print(f"temperature changes: {', '.join(f'{w:.2f}' for w in widget_times)} s")
    print(f"cold start {cold:.2f} s (goal <= 6), warm switch {warm_s:.2f} s, widget change {widget_s:.2f} s "
          f"(goal <= 0.5), server rss {rss:.0f} MB (goal <= 1200) over {len(pages)} pages")
    print(f"app_latency: cold {cold:.2f}s, warm {warm_s:.2f}s, rss {rss:.0f}MB")


if __name__ == "__main__":
    main()
