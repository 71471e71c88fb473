"""Drive the app in Debian chromium (Playwright): start a server, wait for runs, move widgets, take screenshots.

Shared by the browser tests (tests/browser) and the latency benchmark; Playwright is imported by the caller."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"
RUNNING = "[data-testid='stApp'][data-test-script-state='running']"
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(playwright):
    """Debian's chromium through Playwright (never a downloaded browser)."""
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)


def start_server(env: dict, port: int, run_times: bool = False) -> subprocess.Popen:
    """`streamlit run app.py` headless on ``port``; returns once /_stcore/health answers.

    ``run_times``: the server ends each run with a ``page_profile`` message holding its own run time
    (Streamlit sends it with ``browser.gatherUsageStats`` on; benchmarks/app_latency.py reads it).
    """
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1",
         "--browser.gatherUsageStats", "true" if run_times else "false"],
        cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("streamlit exited early:\n" + proc.stdout.read().decode(errors="replace"))
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
                if r.read().strip() == b"ok":
                    return proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("streamlit did not answer /_stcore/health within 90 s")


def stop_server(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def wait_idle(page, timeout=90_000, settle_ms: int = 400):
    """Until the script run has finished and stayed finished for a moment (reruns come in bursts)."""
    page.wait_for_selector("[data-testid='stAppViewContainer']", timeout=timeout)
    for _ in range(3 if settle_ms else 1):
        page.wait_for_selector(IDLE, timeout=timeout)
        page.wait_for_timeout(settle_ms)
    page.wait_for_selector(IDLE, timeout=timeout)


def wait_changed(page, selector: str, before: str, timeout=60_000) -> None:
    """Until the text of ``selector`` differs from ``before`` and the script run has finished."""
    page.wait_for_function(
        "([sel, old]) => { const e = document.querySelector(sel); return e && e.innerText !== old; }",
        arg=[selector, before], timeout=timeout)
    page.wait_for_selector(IDLE, timeout=timeout)


def widget(page, testid: str, label: str):
    label_box = page.locator("[data-testid='stWidgetLabel']").get_by_text(label, exact=True)
    return page.locator(f"[data-testid='{testid}']").filter(has=label_box).first


def move_control(page, kind: str, label: str, text: str | None = None) -> None:
    """Move a widget the way a user would: keyboard for sliders, clicks for choices."""
    testid = {"slider": "stSlider", "select_slider": "stSlider", "selectbox": "stSelectbox",
              "radio": "stRadio", "checkbox": "stCheckbox", "toggle": "stCheckbox",
              "number_input": "stNumberInput", "text_input": "stTextInput", "text_area": "stTextArea",
              "segmented_control": "stButtonGroup"}.get(kind)
    if kind == "button":
        page.locator("[data-testid='stButton'] button", has_text=label).first.click()
        return
    box = widget(page, testid, label)
    box.wait_for(timeout=90_000)
    if kind in ("slider", "select_slider"):
        thumb = box.locator("input[type='range']").first  # react-aria slider: a hidden range input
        thumb.focus()
        thumb.press("ArrowRight")
    elif kind == "selectbox":
        box.locator("input").first.click()
        page.locator("[role='option']").nth(1).click()
    elif kind == "radio":
        box.locator("label").nth(1).click()
    elif kind in ("checkbox", "toggle"):
        box.locator("label").first.click()
    elif kind == "number_input":
        box.locator("[data-testid='stNumberInputStepUp']").click()
    elif kind in ("text_input", "text_area"):
        field = box.locator("textarea, input").first
        field.fill(text if text is not None else (field.input_value() or "") + " and more")
        field.press("Control+Enter" if kind == "text_area" else "Enter")
    elif kind == "segmented_control":
        box.locator("button").nth(1).click()


def screenshot(page, path: Path, width: int = 1400, max_height: int = 5000) -> None:
    """The whole page: Streamlit scrolls inside its own container, so grow the viewport to fit it."""
    height = page.evaluate("""() => Math.max(...[...document.querySelectorAll(
        "[data-testid='stMain'], [data-testid='stAppViewContainer'], [data-testid='stSidebar']")]
        .map(e => e.scrollHeight))""")
    page.set_viewport_size({"width": width, "height": min(max(height, 600), max_height)})
    page.wait_for_timeout(500)
    page.screenshot(path=str(path))


def rss_mb(pid: int) -> float:
    """Resident set size of a process (Linux /proc), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc status")
