"""App latency in a real browser, per page: first visit, warm switch, widget changes; server memory.

    python -m benchmarks.app_latency [--checkpoints DIR] [--repeats 2] [--per-page 4] [--pages a.py,b.py]
                                     [--lessons also|only|no] [--burst 10]

One fresh ``streamlit run app.py`` and one chromium tab (Debian's, through Playwright), as a
visitor uses the app:

* cold: from launching the server to the landing page rendered and its script finished.
* first visit (every other page once, in ``appkit.registry.PAGES`` order, through the sidebar
  links): seconds from the click (its event in the page, in the page's clock: Playwright's own
  round trips, 0.2-0.3 s a switch here, are printed apart) to the first chart of the new page (a Vega-Lite, Plotly,
  deck.gl, Graphviz chart or image in the main area; "-" when the page drew none) and to
  "done" (the run finished and no rerun followed within 0.3 s).
* warm switch: every page visited twice more; the median of its "done" times (and, beside it, the
  same switches timed by Playwright).
* widget changes (a representative set per page, not every widget): the page's
  ``main_control`` from the registry, then the first other sliders, select boxes, radios,
  checkboxes/toggles and number inputs of the main area (not the sidebar) in page order, up to
  ``--per-page`` widgets; each moved away and back ``--repeats`` times (a slider one step, a
  select box or radio to another option, a checkbox flipped, a number input stepped). Each
  change gets two times: "server", the server's own run time (the ``exec_time`` Streamlit
  reports at the end of each run, summed over the runs the change caused: see ``Wire``), and
  "shown", from the input until the browser shows the run finished (slider debounce and the
  browser's drawing included; on this 2-core machine chromium's drawing also competes with the
  server for the CPUs, which the server time pays too). A move that starts no rerun within 3 s
  (a widget inside a form, a slider at its end) is not a sample. Also the server process's CPU
  seconds per change.
* a chart's own controls (inputs under a chart, ``.vega-bindings``: Vega-Lite selections that switch the view
  in the browser, e.g. the gate heat map's unit order and count): each moved away and back ``--repeats``
  times, seconds from the input's event to the first frame the chart is redrawn in (goal <= 0.2 s).
* rss: the server's resident memory after all of it.
* lessons (on a second fresh server, presenter mode): every step of every lesson reached by Next, answered
  (seconds from the click to its view drawn), its control moved away and back (server time); then a class
  arriving at once (``--burst`` visitors opening one step): server CPU seconds per visitor. ``--lessons only``
  prints that walk alone, its figure last.

Links are found by their exact URL path, never by text ("Exposure bias" is also the start of
"Exposure bias (LM)": matching by text clicked the page already shown, the title never changed,
and the run died with "Page.wait_for_function: Timeout 60000ms exceeded"). A page that times
out is reported as such and the run goes on.

Goals (issue 14) on the project's 2-core machine: first chart <= 3 s, done <= 6 s, warm switch
<= 1 s, widget p95 <= 0.5 s, rss <= 1.2 GB. The last line printed is the figure:
``app_latency: cold <x>s, warm <y>s, widget p95 <z>s, rss <r>MB`` (warm: median of all warm
switches as shown; widget p95: server time, over every sample of every page; the shown p95 is
printed on the line before).
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from appkit.registry import PageSpec, available_pages
from tests.browser.driver import IDLE, free_port, launch, rss_mb, start_server, stop_server, widget

ROOT = Path(__file__).resolve().parents[1]

CHART_IDS = ("stVegaLiteChart", "stArrowVegaLiteChart", "stPlotlyChart", "stDeckGlJsonChart",
             "stGraphVizChart", "stImage")
CHARTS = ", ".join(f"[data-testid='stMain'] [data-testid='{t}']" for t in CHART_IDS)
MOVABLE = ("stSlider", "stSelectbox", "stRadio", "stCheckbox", "stNumberInput")
KIND_TESTID = {"slider": "stSlider", "select_slider": "stSlider", "selectbox": "stSelectbox", "radio": "stRadio",
               "checkbox": "stCheckbox", "toggle": "stCheckbox", "number_input": "stNumberInput",
               "text_input": "stTextInput", "text_area": "stTextArea"}
TIMEOUT_MS = 180_000
# Counts script runs (stApp's data-test-script-state turning "running"); survives page switches
# (the navigation is client-side, stApp stays).
WATCH = """() => {
  if (window.__seqvizRuns !== undefined) return;
  window.__seqvizRuns = 0;
  const app = document.querySelector("[data-testid='stApp']");
  new MutationObserver(() => {
    const state = app.getAttribute('data-test-script-state');
    if (state === 'running') window.__seqvizRuns += 1;
    if (state === 'notRunning') window.__seqvizIdleAt = performance.now();
  }).observe(app, {attributes: true, attributeFilter: ['data-test-script-state']});
}"""
STATE = "document.querySelector(\"[data-testid='stApp']\").getAttribute('data-test-script-state')"
# Notes (performance.now()) when the link is clicked and when the first chart of the page that replaced the
# title ``old`` appears (stApp's state turning "notRunning" is noted by WATCH).
CHART_WATCH = """([sel, old]) => {
  window.__seqvizT0 = performance.now();
  window.__seqvizChartAt = null;
  window.__seqvizClickAt = null;  // the click's own time in the page: Playwright's round trips are not the app's
  document.addEventListener('click', () => { window.__seqvizClickAt = performance.now(); },
                            {capture: true, once: true});
  if (window.__seqvizChartObserver) window.__seqvizChartObserver.disconnect();
  const check = () => {
    const h1 = document.querySelector('h1');
    if (window.__seqvizChartAt === null && h1 && h1.innerText !== old && document.querySelector(sel))
      window.__seqvizChartAt = performance.now();
  };
  window.__seqvizChartObserver = new MutationObserver(check);
  window.__seqvizChartObserver.observe(document.body, {childList: true, subtree: true});
}"""


# A chart's own control (a Vega-Lite selection bound to an input under the chart): moved in the page, timed
# from the input's event to the first animation frame whose canvas differs (Vega redraws in the browser; the
# server hears of the choice afterwards, to keep it).
IN_CHART = """async ([chart, index, away]) => {
  const inputs = [...chart.querySelectorAll('.vega-bindings input')];
  const input = inputs[index];
  const canvas = chart.querySelector('canvas');  // Vega draws on a canvas or into an SVG
  const look8 = c => {  // the canvas's size and 8 of its pixel rows: cheap enough to read every frame
    const g = c.getContext('2d'), rows = [c.width, c.height];
    for (let k = 1; k <= 8; k++) rows.push(g.getImageData(0, Math.floor(c.height * k / 9), c.width, 1).data.join());
    return rows.join('|');
  };
  const before = canvas ? look8(canvas) : null;
  let changed = false;
  const watch = new MutationObserver(() => { changed = true; });
  if (!canvas) watch.observe(chart.querySelector('svg'), {subtree: true, childList: true, attributes: true});
  const t0 = performance.now();
  if (input.type === 'range') {
    input.value = String(Number(input.value) + (away ? 4 : -4));
    input.dispatchEvent(new Event('input', {bubbles: true}));
  } else {
    const group = inputs.filter(i => i.name === input.name);
    const next = away ? group[(group.indexOf(group.find(i => i.checked)) + 1) % group.length] : group[0];
    next.checked = true;
    next.dispatchEvent(new Event('change', {bubbles: true}));
  }
  return await new Promise(done => {
    const look = () => {  // the first frame painted after the chart changed
      if (canvas ? look8(chart.querySelector('canvas')) !== before : changed) {
        watch.disconnect(); done(performance.now() - t0);
      } else if (performance.now() - t0 > 5000) { watch.disconnect(); done(null); }
      else requestAnimationFrame(look);
    };
    requestAnimationFrame(look);
  });
}"""


@dataclass
class PageTimes:
    title: str
    first_chart: float | None = None
    first_done: float | None = None
    warm: list[float] = field(default_factory=list)
    widget: list[float] = field(default_factory=list)
    widget_cpu: list[float] = field(default_factory=list)
    widget_server: list[float] = field(default_factory=list)  # the same changes, server time on the wire
    warm_server: list[float] = field(default_factory=list)
    warm_playwright: list[float] = field(default_factory=list)  # the same switches, Playwright's clock
    moved: list[str] = field(default_factory=list)
    by_widget: dict[str, list[tuple]] = field(default_factory=dict)  # label -> (shown s, CPU s, server s)
    in_chart: dict[str, list[float]] = field(default_factory=dict)  # a chart's own control -> drawn s
    exceptions: list[str] = field(default_factory=list)
    note: str = ""


def cpu_s(pid: int) -> float:
    """User + system CPU seconds a process has used (Linux /proc): load-independent cost."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Wire:
    """The server's own time for each script run, read from the app's websocket (DevTools protocol).

    Streamlit ends every run (a fragment's too) with a ``page_profile`` message holding the run's
    ``exec_time``, measured on the server from the script's start to its end; the benchmark's
    server is started with ``browser.gatherUsageStats`` on so that it sends it (the browser has no
    network here, so nothing leaves the machine). A change's server time is the sum over the runs
    it caused. Not the frames' arrival times: DevTools stamps a frame when the page's main thread
    takes it, so while the browser draws (on a 2-core machine running both, often several times the
    server's time) those stamps drift late (measured: 0.8 s between the input and the last frame
    for a run whose script took 0.27 s).
    """

    def __init__(self, page):
        self.runs: list[float] = []  # exec_time of each finished run, seconds, in arrival order
        self.cdp = page.context.new_cdp_session(page)
        self.cdp.on("Network.webSocketFrameReceived", self._received)
        self.cdp.send("Network.enable")

    def _received(self, event: dict) -> None:
        import base64

        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        frame = event["response"]
        if frame.get("opcode") != 2:  # Streamlit's messages are binary protobuf
            return
        msg = ForwardMsg()
        try:
            msg.ParseFromString(base64.b64decode(frame["payloadData"]))
        except Exception:  # noqa: BLE001 - not a Streamlit message: not ours to time
            return
        if msg.WhichOneof("type") == "page_profile":
            self.runs.append(msg.page_profile.exec_time / 1e6)

    def mark(self) -> int:
        return len(self.runs)

    def server_seconds(self, mark: int) -> float | None:
        """The summed server time of the runs that finished after ``mark`` (None: none did)."""
        runs = self.runs[mark:]
        return sum(runs) if runs else None


def p95(values: list[float]) -> float:
    """Nearest-rank 95th percentile (the largest of fewer than 20 samples)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def runs(page) -> int:
    page.evaluate(WATCH)
    return page.evaluate("() => window.__seqvizRuns")


def settle(page, t0: float, settle_ms: int = 300) -> float:
    """Wait for the run to finish and stay finished ``settle_ms``; seconds from ``t0`` to its end."""
    while True:
        page.wait_for_selector(IDLE, timeout=TIMEOUT_MS)
        done = time.perf_counter() - t0
        count = runs(page)
        page.wait_for_timeout(settle_ms)
        if runs(page) == count and page.evaluate(f"() => {STATE}") == "notRunning":
            return done


def nav_link(page, spec: PageSpec):
    """The sidebar link whose URL path is exactly the page's (the default page's is "/")."""
    want = "" if spec.default else spec.url_path
    for link in page.locator("[data-testid='stSidebarNav'] a").all():
        if urlparse(link.get_attribute("href") or "").path.strip("/") == want:
            return link
    raise RuntimeError(f"no sidebar link to /{want}")


ROUND_TRIPS: list[float] = []  # per switch: Playwright's wait for "done" minus the page's own clock


def switch(page, spec: PageSpec, wire: Wire | None = None) -> tuple[float | None, float, float | None]:
    """Click the page's link; (seconds to its first chart or None, seconds to done, server seconds or None).

    Both from the click event, in the page's own clock (``performance.now()``): Playwright's click (scrolling,
    actionability checks) and its polls for the end (a round trip through its driver each) added 0.2-0.3 s
    to every switch on the 2-core machine, which no visitor waits for. Its own figure is kept in ROUND_TRIPS.
    """
    before = page.locator("h1").first.inner_text() if page.locator("h1").count() else ""
    link = nav_link(page, spec)
    runs(page)
    page.evaluate(CHART_WATCH, [CHARTS, before])
    mark = wire.mark() if wire else None
    t0 = time.perf_counter()
    link.click()
    page.wait_for_function("old => { const e = document.querySelector('h1'); return e && e.innerText !== old; }",
                           arg=before, timeout=TIMEOUT_MS)
    waited = settle(page, t0)
    chart, done = page.evaluate("""() => {
      const from = window.__seqvizClickAt === null ? window.__seqvizT0 : window.__seqvizClickAt;
      return [window.__seqvizChartAt === null ? null : (window.__seqvizChartAt - from) / 1000,
              window.__seqvizClickAt === null ? null : (window.__seqvizIdleAt - from) / 1000];
    }""")
    if done is None or done <= 0:  # no click seen in the page: Playwright's own clock
        done = waited
    if chart is not None:  # a chart may be mounted just after the run's end: done is when both are
        done = max(done, chart)
    ROUND_TRIPS.append(waited - done)
    return chart, done, wire.server_seconds(mark) if wire else None


def _open_select(page, box):
    """Open a select box's list (a click on the field, else its Open button, else ArrowDown)."""
    options = page.locator("[role='option']")
    attempts = (lambda: box.locator("input").first.click(), lambda: box.locator("button").first.click(),
                lambda: (box.locator("input").first.focus(), page.keyboard.press("ArrowDown")))
    for attempt in attempts:
        if page.locator("[role='listbox']").count():  # a list left open by the last try (Escape on a
            page.keyboard.press("Escape")                # closed select box would clear its value)
        attempt()
        try:
            options.first.wait_for(timeout=3_000)
            return options
        except Exception:
            continue
    raise TimeoutError("the select box's list did not open")


class Mover:
    """Moves one widget away and back, as a user would. ``away``/``back`` do the preparation (focus,
    open a list, type) and return the final input (the key press or click) that is timed."""

    def __init__(self, page, box, testid: str, text: str | None = None):
        self.page, self.box, self.testid, self.text, self.original = page, box, testid, text, None

    def away(self):
        page, box = self.page, self.box
        if self.testid == "stSlider":
            box.locator("input[type='range']").first.focus()
            return lambda: page.keyboard.press("ArrowRight")
        if self.testid == "stSelectbox":
            self.original = box.locator("input").first.input_value()
            options = _open_select(page, box)
            texts = options.all_inner_texts()
            return options.nth(next(i for i, t in enumerate(texts) if t != self.original)).click
        if self.testid == "stRadio":
            labels = box.locator("[data-testid='stRadioOption']")
            checked = [v == "true" for v in labels.evaluate_all("es => es.map(e => e.getAttribute('data-selected'))")]
            self.original = checked.index(True) if True in checked else 0
            return labels.nth(checked.index(False)).click
        if self.testid == "stCheckbox":
            return box.locator("label").first.click
        if self.testid == "stNumberInput":
            return box.locator("[data-testid='stNumberInputStepUp']").click
        entry = box.locator("textarea, input").first  # text input / area
        self.original = entry.input_value()
        entry.fill(self.text if self.text is not None else self.original + " and more")
        return lambda: entry.press("Control+Enter" if self.testid == "stTextArea" else "Enter")

    def back(self):
        page, box = self.page, self.box
        if self.testid == "stSlider":
            box.locator("input[type='range']").first.focus()
            return lambda: page.keyboard.press("ArrowLeft")
        if self.testid == "stSelectbox":
            now = box.locator("input").first.input_value()
            options = _open_select(page, box)  # back to the first value (or, from a placeholder, another one)
            texts = options.all_inner_texts()
            back = [i for i, t in enumerate(texts) if t == self.original] or [
                i for i, t in enumerate(texts) if t != now]
            return options.nth(back[0]).click
        if self.testid == "stRadio":
            return box.locator("[data-testid='stRadioOption']").nth(self.original or 0).click
        if self.testid == "stCheckbox":
            return box.locator("label").first.click
        if self.testid == "stNumberInput":
            return box.locator("[data-testid='stNumberInputStepDown']").click
        entry = box.locator("textarea, input").first
        entry.fill(self.original or "")
        return lambda: entry.press("Control+Enter" if self.testid == "stTextArea" else "Enter")


def timed_change(page, pid: int, prepare, wire: Wire | None = None) -> tuple[float, float, float | None] | None:
    """(seconds from the input to the rerun's end as shown, server CPU seconds, the server's own run
    time or None) of one change; None without a rerun."""
    commit = prepare()
    count = runs(page)
    mark = wire.mark() if wire else None
    c0, t0 = cpu_s(pid), time.perf_counter()
    commit()
    try:
        page.wait_for_function("n => window.__seqvizRuns > n", arg=count, timeout=3_000)
    except Exception:  # no rerun: a form, a slider at its end, an option already chosen
        return None
    seconds = settle(page, t0)
    return seconds, cpu_s(pid) - c0, wire.server_seconds(mark) if wire else None


def movers(page, spec: PageSpec, per_page: int) -> list[tuple[str, Mover]]:
    """The main control first, then other widgets of the main area in page order."""
    found: list[tuple[str, Mover]] = []
    main_box = None
    if spec.main_control and spec.main_control[0] in KIND_TESTID:
        kind, label, *text = spec.main_control
        testid = KIND_TESTID[kind]
        candidate = widget(page, testid, label)  # main area or sidebar
        if candidate.count() and candidate.first.is_visible():
            main_box = candidate.first
            found.append((label, Mover(page, main_box, testid, *text)))
    selector = ", ".join(f"[data-testid='stMain'] [data-testid='{t}']" for t in MOVABLE)
    for box in page.locator(selector).all():
        if len(found) >= per_page:
            break
        try:
            if not box.is_visible() or box.locator("[disabled], [aria-disabled='true']").count():
                continue
            label = box.locator("[data-testid='stWidgetLabel']").first.inner_text(timeout=1_000).strip()
        except Exception:
            continue
        if not label or any(label == name for name, _ in found):
            continue
        testid = box.get_attribute("data-testid")  # found again by label: nth() shifts when a rerun adds widgets
        found.append((label, Mover(page, widget(page, testid, label), testid)))
    return found


def measure_widgets(page, pid: int, spec: PageSpec, times: PageTimes, repeats: int, per_page: int,
                    wire: Wire | None = None) -> None:
    for label, mover in movers(page, spec, per_page):
        moved = False
        for _ in range(repeats):
            for act in (mover.away, mover.back):
                try:
                    sample = timed_change(page, pid, act, wire)
                except Exception as e:  # a widget that went away after a rerun, a popover that did not open
                    times.note += f" {label!r}: {type(e).__name__}: {str(e).splitlines()[0][:150]};"
                    if page.locator("[role='listbox']").count():
                        page.keyboard.press("Escape")
                    sample = None
                if sample is not None:
                    times.widget.append(sample[0])
                    times.widget_cpu.append(sample[1])
                    if sample[2] is not None:
                        times.widget_server.append(sample[2])
                    times.by_widget.setdefault(label, []).append(sample)
                    moved = True
                for text in page.locator("[data-testid='stException']").all_inner_texts():
                    first = " ".join(text.split())[:160]
                    if first not in times.exceptions:
                        times.exceptions.append(first)
        if moved:
            times.moved.append(label)


@dataclass
class LessonTimes:
    """Per lesson step: the first view after answering, the step change that reached it, the control's moves."""
    label: str
    answered: float | None = None  # from the answer's click to the view drawn (shown), s
    answered_server: float | None = None
    step_server: float | None = None  # the Next click's run(s)
    control: list[float] = field(default_factory=list)  # server time per move of the step's control
    note: str = ""


def measure_in_chart(page, times: PageTimes, repeats: int) -> None:
    """Each control under a main-area chart (``.vega-bindings``: the view switched in the browser), moved away
    and back ``repeats`` times: seconds until the chart is redrawn."""
    charts = page.locator("[data-testid='stMain'] [data-testid='stVegaLiteChart']:has(.vega-bindings)")
    for c in range(charts.count()):
        chart = charts.nth(c).element_handle()
        labels = chart.evaluate("""el => [...el.querySelectorAll('.vega-bindings input')].map((i, k, all) =>
            all.findIndex(j => j.name === i.name) === k ? i.closest('.vega-bind').querySelector('.vega-bind-name')
            .innerText.trim() : null)""")
        for index, label in enumerate(labels):
            if label is None:  # the other options of a radio already listed
                continue
            for _ in range(repeats):
                for away in (True, False):
                    ms = page.evaluate(IN_CHART, [chart, index, away])
                    if ms is not None:
                        times.in_chart.setdefault(label, []).append(ms / 1000)
                    settle(page, time.perf_counter())  # the server keeps the choice: let that run end


def measure_lessons(browser, env: dict, repeats: int, burst: int) -> tuple[list[LessonTimes], float, float]:
    """Every step of every lesson in presenter mode on a freshly started server, as a class meets it: Next
    (from the step before), the predict-first answer (the view appears), the step's control away and back.
    Then ``burst`` visitors open one step at once (a class arriving): the server's CPU seconds per visitor.
    Returns (per step times, burst CPU seconds per visitor, the burst's wall seconds)."""
    from seqviz.lessons.load import lessons

    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(15_000)
    wire, port = Wire(page), free_port()
    server = start_server(env, port, run_times=True)
    out: list[LessonTimes] = []
    try:
        for lid, lesson in lessons().items():
            page.goto(f"http://127.0.0.1:{port}/lessons?lesson={lid}&step=1&present=1", wait_until="domcontentloaded")
            settle(page, time.perf_counter())
            for i, step in enumerate(lesson.steps):
                t = LessonTimes(f"{lid} {i + 1} {step.station or ''} {step.view}".replace("  ", " "))
                out.append(t)
                try:
                    if i:
                        sample = timed_change(page, server.pid, lambda: page.locator(
                            "[data-testid='stButton'] button", has_text="Next").first.click, wire)
                        t.step_server = sample[2] if sample else None
                    answer = page.locator("[data-testid='stRadio']").first.locator("[data-testid='stRadioOption']")
                    sample = timed_change(page, server.pid, lambda: answer.first.click, wire)  # to the run's end
                    page.locator(CHARTS).first.wait_for(timeout=5_000)  # drawn by then (a view without one fails)
                    t.answered, t.answered_server = (sample[0], sample[2]) if sample else (None, None)
                    label = step.control.label
                    mover = Mover(page, widget(page, KIND_TESTID[step.control.kind], label), KIND_TESTID[step.control.kind])
                    for _ in range(repeats):
                        for act in (mover.away, mover.back):
                            sample = timed_change(page, server.pid, act, wire)
                            if sample is not None and sample[2] is not None:
                                t.control.append(sample[2])
                except Exception as e:  # a step that did not draw: reported, the walk goes on
                    t.note += f"{type(e).__name__}: {str(e).splitlines()[0][:150]}"
        url = f"http://127.0.0.1:{port}/lessons?lesson=stations&step=10&present=1&answer=1"
        visitors = [browser.new_page(viewport={"width": 1400, "height": 900}) for _ in range(burst)]
        c0, t0 = cpu_s(server.pid), time.perf_counter()
        for v in visitors:  # all at once: none waits for another's page
            v.goto(url, wait_until="commit")
        for v in visitors:
            v.locator(CHARTS).first.wait_for(timeout=TIMEOUT_MS)
            v.wait_for_selector(IDLE, timeout=TIMEOUT_MS)
        wall, per_visitor = time.perf_counter() - t0, (cpu_s(server.pid) - c0) / max(burst, 1)
        for v in visitors:
            v.close()
    finally:
        stop_server(server)
        page.close()
    return out, per_visitor, wall


def print_lessons(found: list[LessonTimes], burst: int, per_visitor: float, wall: float) -> None:
    print("lessons, presenter mode, fresh server (goal: first view <= 3 s after answering, step change and "
          "control p95 <= 0.5 s server time):")
    header = ("step", "view after answer", "(server)", "Next (server)", "control p95 server", "n")
    rows = [(t.label, fmt(t.answered), fmt(t.answered_server), fmt(t.step_server), fmt(p95(t.control)),
             str(len(t.control)) + (f"  [{t.note}]" if t.note else "")) for t in found]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header) - 1)]
    for r in [header, *rows]:
        print(" | ".join(c.ljust(w) for c, w in zip(r, widths)) + " | " + r[-1])
    answered = [t.answered for t in found if t.answered is not None]
    worst = max((t for t in found if t.answered is not None), key=lambda t: t.answered, default=None)
    steps = [t.step_server for t in found if t.step_server is not None]
    controls = [x for t in found for x in t.control]
    print(f"lessons: {len(answered)} of {len(found)} steps drawn; first view after answering max "
          f"{fmt(max(answered) if answered else None)}s ({worst.label if worst else '-'}), step change p95 "
          f"{fmt(p95(steps))}s, control p95 {fmt(p95(controls))}s server; class burst {burst} visitors: "
          f"{per_visitor:.2f}s server CPU each, {wall:.1f}s for all")


def fmt(x: float | None) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoints", default=None, help="checkpoint root(s) (default: ./checkpoints)")
    parser.add_argument("--repeats", type=int, default=2, help="away-and-back moves per widget")
    parser.add_argument("--per-page", type=int, default=4, help="widgets moved per page")
    parser.add_argument("--pages", default="", help="comma-separated page files (default: all)")
    parser.add_argument("--lessons", choices=("also", "only", "no"), default="also",
                        help="walk every lesson step on a second fresh server (only: that walk alone)")
    parser.add_argument("--burst", type=int, default=10, help="visitors opening one lesson step at once")
    args = parser.parse_args()
    env = dict(os.environ)
    if args.checkpoints:
        env["SEQVIZ_CHECKPOINTS"] = args.checkpoints
    pages = available_pages()
    landing = next(p for p in pages if p.default)
    wanted = [p for p in pages if not p.default and (not args.pages or p.path in args.pages.split(","))]
    table = {p.path: PageTimes(p.title) for p in wanted}
    load_before = os.getloadavg()
    from playwright.sync_api import sync_playwright

    lesson_walk = None
    if args.lessons == "only":
        with sync_playwright() as pw:
            browser = launch(pw)
            try:
                lesson_walk = measure_lessons(browser, env, args.repeats, args.burst)
            finally:
                browser.close()
        print_lessons(lesson_walk[0], args.burst, *lesson_walk[1:])
        return
    with sync_playwright() as pw:
        browser = launch(pw)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(15_000)  # clicks and reads; the waits for runs have their own
        wire = Wire(page)
        port = free_port()
        t0 = time.perf_counter()
        server = start_server(env, port, run_times=True)
        up = time.perf_counter() - t0
        try:
            page.goto(f"http://127.0.0.1:{port}/", wait_until="domcontentloaded")
            page.locator("h1").first.wait_for(timeout=TIMEOUT_MS)
            cold = settle(page, t0)
            cold_cpu = cpu_s(server.pid)
            for spec in wanted:  # first visits: models load, torch and friends are imported
                try:
                    table[spec.path].first_chart, table[spec.path].first_done, _ = switch(page, spec, wire)
                except Exception as e:
                    table[spec.path].note += f" first visit: {type(e).__name__}: {str(e).splitlines()[0]};"
                    page.goto(f"http://127.0.0.1:{port}/", wait_until="domcontentloaded")
                    settle(page, time.perf_counter())
            for _ in range(2):  # warm switches, always from another page
                for spec in [landing, *wanted]:
                    try:
                        _, done, server_s = switch(page, spec, wire)
                    except Exception as e:
                        if spec.path in table:
                            table[spec.path].note += f" warm: {type(e).__name__};"
                        continue
                    if spec.path in table:
                        table[spec.path].warm.append(done)
                        table[spec.path].warm_playwright.append(done + ROUND_TRIPS[-1])
                        if server_s is not None:
                            table[spec.path].warm_server.append(server_s)
            for spec in wanted:
                try:
                    if urlparse(page.url).path.strip("/") != spec.url_path:  # the same link: no switch
                        switch(page, spec)
                    measure_widgets(page, server.pid, spec, table[spec.path], args.repeats, args.per_page, wire)
                    measure_in_chart(page, table[spec.path], args.repeats)
                except Exception as e:
                    table[spec.path].note += f" widgets: {type(e).__name__}: {str(e).splitlines()[0]};"
            rss = rss_mb(server.pid)
        finally:
            stop_server(server)
        try:
            if args.lessons == "also":
                lesson_walk = measure_lessons(browser, env, args.repeats, args.burst)
        finally:
            browser.close()

    load_after = os.getloadavg()
    print(f"machine: {os.cpu_count()} CPUs, load average {load_before[0]:.1f} before and {load_after[0]:.1f} "
          f"after the run (1/5/15 min after: {', '.join(f'{x:.1f}' for x in load_after)})")
    print(f"server answered /_stcore/health after {up:.2f} s; cold start to the landing page {cold:.2f} s "
          f"(server CPU {cold_cpu:.2f} s)")
    print(f"widget changes: per page the main control + up to {args.per_page - 1} other main-area widgets, "
          f"each moved away and back {args.repeats}x; times in s (goal: first chart <= 3, done <= 6, "
          f"warm <= 1, widget p95 <= 0.5 server time). \"server\": from the browser's message to the run's "
          f"end on the websocket; \"shown\": until the browser has drawn it (it shares the CPUs here)")
    header = ("page", "first chart", "first done", "warm shown", "(Playwright)", "warm server", "widget p95 server",
              "shown", "n", "CPU p95", "widgets moved")
    rows = []
    for spec in wanted:
        t = table[spec.path]
        rows.append((t.title, fmt(t.first_chart), fmt(t.first_done),
                     fmt(statistics.median(t.warm) if t.warm else None),
                     fmt(statistics.median(t.warm_playwright) if t.warm_playwright else None),
                     fmt(statistics.median(t.warm_server) if t.warm_server else None), fmt(p95(t.widget_server)),
                     fmt(p95(t.widget)), str(len(t.widget)),
                     fmt(p95(t.widget_cpu)), ", ".join(t.moved) + (f"  [{t.note.strip()}]" if t.note else "")
                     + (f"  [exception: {' / '.join(t.exceptions)}]" if t.exceptions else "")))
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header) - 1)]
    for r in [header, *rows]:
        print(" | ".join(c.ljust(w) for c, w in zip(r, widths)) + " | " + r[-1])
    print("slowest widget per page (p95 of its own changes, s: server; shown; server CPU):")
    for spec in wanted:
        t = table[spec.path]
        if t.by_widget:
            def server_p95(samples):
                return p95([x for _, _, x in samples if x is not None])

            label, samples = max(t.by_widget.items(), key=lambda kv: server_p95(kv[1]))
            print(f"  {t.title}: {label!r} {fmt(server_p95(samples))}; shown {fmt(p95([x for x, _, _ in samples]))}"
                  f"; CPU {fmt(p95([c for _, c, _ in samples]))}")
    warm_all = [w for t in table.values() for w in t.warm]
    shown_all = [w for t in table.values() for w in t.widget]
    widget_all = [w for t in table.values() for w in t.widget_server]
    worst = max(table.values(), key=lambda t: t.first_done or 0, default=None)
    if worst is not None and worst.first_done:
        print(f"slowest first visit: {worst.title} {worst.first_done:.2f} s; warm switches p95 "
              f"{fmt(p95(warm_all))} s; server rss {rss:.0f} MB (goal <= 1200)")
    warm_s = statistics.median(warm_all) if warm_all else float("nan")
    warm_server = [w for t in table.values() for w in t.warm_server]
    if ROUND_TRIPS:
        print(f"page switches timed by Playwright instead (its click and polls included): "
              f"+{statistics.median(ROUND_TRIPS):.2f} s median, +{max(ROUND_TRIPS):.2f} s at most")
    print(f"shown in the browser: widget p95 {p95(shown_all):.2f}s; warm switch server median "
          f"{statistics.median(warm_server) if warm_server else float('nan'):.2f}s")
    in_chart = {f"{t.title}: {label}": v for t in table.values() for label, v in t.in_chart.items()}
    if in_chart:
        every = [x for v in in_chart.values() for x in v]
        print(f"view-only controls switched in the browser (a chart's own, redrawn without a server run): p95 "
              f"{p95(every):.2f}s over {len(every)} moves (goal <= 0.2 s shown); "
              + "; ".join(f"{k} {p95(v):.2f}" for k, v in in_chart.items()))
    if lesson_walk is not None:
        print_lessons(lesson_walk[0], args.burst, *lesson_walk[1:])
    print(f"app_latency: cold {cold:.2f}s, warm {warm_s:.2f}s, widget p95 {p95(widget_all):.2f}s, rss {rss:.0f}MB")


if __name__ == "__main__":
    main()
