"""Every language-model page on a model of real size (mamba-130m's shape): first chart and memory per visit.

The model is ``benchmarks.scale``'s (24 blocks, 768 wide, 1,536 channels x 16 states, vocabulary 50,280, random
weights), in a checkpoints folder beside the shipped ones. Each page is visited in a fresh process that first does
what the server does before its first visitor (``appkit.startup.warm``: the imports, the shipped results read) and
opens the landing page, through Streamlit's AppTest; then, its peak resident set reset (``/proc/self/clear_refs``),
it opens the page with the model picked (``?recurrent_lm=...``): the model is loaded during the visit. Right after,
the same visit with the shipped LSTM: what the page costs this machine anyway (its floor). Figures:

* first chart: seconds from the page's run start to its first Vega-Lite chart or metric (the hidden early chart of
  ``appkit.preload`` left out), and the CPU seconds the process spent by then (on a busy machine, about what an
  idle one takes) (goal <= 5 s);
* run: the whole run; memory: the process's peak resident set during the visit and the background work it
  queued (waited for), above its resident set before the visit (goal <= 1.5 GB); a visit past ``STOP_GB`` is
  stopped (the machine is shared);
* what the page said (its ``st.info``: where it offered fewer tokens or one layer, or why a view does not apply).

    python -m benchmarks.scale_pages [--page gates.py] [--folder DIR]

Last line: the worst page's figures. One torch thread, as the app runs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NAME = "mamba-130m-shape"
FLOOR = "shakespeare-char-lstm"  # the same visit with a shipped model: what the page costs this machine anyway
FIRST_CHART_GOAL, MEMORY_GOAL = 5.0, 1.5  # seconds; GB above the server's own
STOP_GB = 6.0  # a visit's process is stopped past this resident set (a shared machine)
CHARTS = ("vega_lite_chart", "altair_chart", "line_chart", "bar_chart", "area_chart", "scatter_chart", "metric")


def vm(field: str) -> float:
    """A /proc/self/status figure (VmRSS, VmHWM) in GB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 2**20
    raise KeyError(field)


def visit(page_path: str, root: Path, name: str = NAME) -> dict:
    """One page's visit in this (fresh) process: what the server does first, the landing page, then the page with
    the model ``name``."""
    os.environ["SEQVIZ_CHECKPOINTS"] = str(root)
    import streamlit
    from streamlit.delta_generator import DeltaGenerator
    from streamlit.testing.v1 import AppTest

    from seqviz import background
    from appkit.preload import SPEC
    from appkit.startup import warm

    warm()
    first: list[float] = []

    def timed(drawn):
        def draw(self, spec=None, *args, **kwargs):  # the first chart with data: what a visitor sees first
            if spec is not SPEC and not first:
                first.append((time.perf_counter(), time.process_time()))
            return drawn(self, spec, *args, **kwargs)
        return draw

    for kind in CHARTS:  # the methods, and st.<kind> (bound to the main container when Streamlit was imported)
        setattr(DeltaGenerator, kind, timed(getattr(DeltaGenerator, kind)))
        setattr(streamlit, kind, getattr(streamlit._main, kind))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
    at.run()
    idle()
    before = vm("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # the peak resident set starts again from here
    at.query_params["recurrent_lm"] = name
    at.switch_page(f"pages/{page_path}")
    first.clear()
    start, cpu = time.perf_counter(), time.process_time()
    at.run()
    run = time.perf_counter() - start
    idle()  # what the page queued for the visitor's next move counts too
    errors = [str(e.value)[:200] for e in at.exception] + [str(e.value)[:200] for e in at.error]
    said = [str(i.value)[:160] for i in at.info]
    background.shutdown()
    return {"page": page_path, "first_chart_s": (first[0][0] - start) if first else None, "run_s": run,
            "first_cpu_s": (first[0][1] - cpu) if first else None, "before_gb": before,
            "above_gb": vm("VmHWM") - before, "errors": errors, "said": said}


def idle(timeout: float = 600.0) -> None:
    """Wait for the app's background worker to finish what was queued."""
    from seqviz import background

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with background._lock:
            pending = [f for f in background._pending if not f.done()]
        if not pending:
            return
        time.sleep(0.1)


def watched(page: str, root: Path, env: dict, name: str = NAME) -> dict | None:
    """One page's visit with the model ``name`` in a fresh process, stopped if its resident set passes ``STOP_GB``
    (the machine is shared: the figures then say it was stopped there); None if it failed otherwise."""
    child = subprocess.Popen([sys.executable, "-m", "benchmarks.scale_pages", "--visit", page, "--root", str(root),
                              "--model", name], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                             cwd=ROOT)
    start, status = time.perf_counter(), Path(f"/proc/{child.pid}/status")
    while child.poll() is None:
        try:
            rss = next(int(x.split()[1]) for x in status.read_text().splitlines() if x.startswith("VmRSS:")) / 2**20
        except (OSError, StopIteration):
            rss = 0.0
        if rss > STOP_GB:
            child.kill()
            child.communicate()
            return {"page": page, "first_chart_s": None, "first_cpu_s": None, "run_s": time.perf_counter() - start,
                    "before_gb": 0.0, "above_gb": rss, "errors": [f"stopped at {rss:.1f} GB resident"], "said": []}
        time.sleep(0.5)
    out, err = child.communicate()
    if child.returncode:
        print(f"{page}: the visit failed\n{err[-2000:]}")
        return None
    return json.loads(out.strip().splitlines()[-1])


def seconds(value) -> str:
    return "none" if value is None else f"{value:.1f}s"


def lm_pages(only: str | None) -> list[str]:
    from appkit.registry import PAGES

    return [p.path for p in PAGES if p.model_type == "recurrent_lm" and p.exists and only in (None, p.path)]


def checkpoints(folder: Path, root: Path) -> Path:
    """A checkpoints root: the model beside the shipped language models (links)."""
    root.mkdir(parents=True, exist_ok=True)
    for shipped in sorted((ROOT / "checkpoints").glob("shakespeare-char-*")):
        (root / shipped.name).symlink_to(shipped)
    (root / NAME).symlink_to(folder)
    return root


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--page", default=None, help="one page file (default: every language-model page)")
    parser.add_argument("--folder", type=Path, default=None, help="where the model is (built there if absent)")
    parser.add_argument("--visit", default=None, help=argparse.SUPPRESS)  # the fresh process's part
    parser.add_argument("--root", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--model", default=NAME, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.visit:
        print(json.dumps(visit(args.visit, args.root, args.model)))
        return 0
    from benchmarks.scale import build

    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = build(args.folder or Path(tmp) / NAME)
        root = checkpoints(folder, Path(tmp) / "checkpoints")
        for page in lm_pages(args.page):
            r, floor = watched(page, root, env), watched(page, root, env, FLOOR)  # one after the other: paired
            if r is None or floor is None:
                return 1
            r["floor_s"] = floor["first_chart_s"]
            results.append(r)
            print(f"{page:24s} first chart {seconds(r['first_chart_s'])} (CPU {seconds(r['first_cpu_s'])}; the "
                  f"shipped LSTM's {seconds(floor['first_chart_s'])}, CPU {seconds(floor['first_cpu_s'])}), run "
                  f"{r['run_s']:5.1f} s, memory +{r['above_gb']:.2f} GB (server {r['before_gb']:.2f} GB before; "
                  f"the LSTM's +{floor['above_gb']:.2f}); load average {os.getloadavg()[0]:.1f}"
                  + (f"; ERRORS {r['errors']}" if r["errors"] else "")
                  + (f"; said: {' | '.join(r['said'])}" if r["said"] else ""), flush=True)
    slowest = max(results, key=lambda r: float("inf") if r["first_chart_s"] is None else r["first_chart_s"])
    largest = max(results, key=lambda r: r["above_gb"])
    ok = all(r["first_chart_s"] is not None and r["first_chart_s"] <= FIRST_CHART_GOAL and not r["errors"]
             and r["above_gb"] <= MEMORY_GOAL for r in results)
    print(f"scale_pages: worst first chart {seconds(slowest['first_chart_s'])} ({slowest['page']}, the shipped "
          f"LSTM's {seconds(slowest['floor_s'])}; goal <= {FIRST_CHART_GOAL:.0f}s), worst memory "
          f"+{largest['above_gb']:.2f}GB ({largest['page']}, goal <= {MEMORY_GOAL}GB), {len(results)} pages, "
          f"{sum(bool(r['errors']) for r in results)} with errors")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
