"""Robustness figures: bad files refused, fuzz examples survived, concurrent visitors, server memory.

    python -m benchmarks.robustness [--seconds 120] [--visitors 20] [--examples 100] [--no-browser]

* bad files: every case of tests/hardening/cases.py through the library and ``python -m seqviz
  inspect`` (in-process); a case counts when both refuse it with its message. Each is printed
  with the exact message the user reads.
* fuzz cases: the Hypothesis tests of tests/hardening/test_fuzz.py, ``--examples`` each; the
  examples run (none may raise anything but the documented errors).
* concurrent sessions: ``--visitors`` AppTest visitors in threads for ``--seconds``
  (tests/hardening/sessions.py); those that finished without a problem, provided the shared
  models kept their checksums.
* rss: ``streamlit run app.py`` on the shipped checkpoints, every page of appkit.registry.PAGES
  opened in chromium, then the server's resident memory (goal <= 1200 MB).

The last line printed is the figure:
``robustness: <n> bad files refused, <m> fuzz cases, <k> concurrent sessions, rss <x>MB``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import shutil
import tempfile
import warnings
from pathlib import Path

import torch

from appkit.registry import available_pages
from tests.browser.driver import rss_mb
from tests.hardening.cases import CASES, build, open_case

ROOT = Path(__file__).resolve().parents[1]


def bad_files(work: Path) -> int:
    """Refuse every case through the library and the command line; print what the user saw."""
    from seqviz.checkpoints import CheckpointError
    from seqviz.cli import main as cli

    os.environ["SEQVIZ_ALLOWED_DIRS"] = str(work / "allowed")
    refused = 0
    for case in CASES:
        built = build(case, work)
        try:
            open_case(case, built, work)
            said = "ACCEPTED"
        except CheckpointError as e:
            said = str(e)
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            status = cli(["inspect", str(built.path)])
        ok = (case.message in said and status == 2 and (case.cli_message or case.message) in err.getvalue()
              and (built.marker is None or not built.marker.exists()))
        refused += ok
        print(f"{'ok  ' if ok else 'FAIL'} {case.name:24s} {case.what}\n     -> {said}")
    del os.environ["SEQVIZ_ALLOWED_DIRS"]
    return refused


def fuzz(examples: int) -> int:
    """Every Hypothesis test of test_fuzz.py with ``examples`` examples; the examples run."""
    os.environ["SEQVIZ_FUZZ_EXAMPLES"] = str(examples)  # read when test_fuzz is imported
    from tests.hardening import test_fuzz

    for name in sorted(dir(test_fuzz)):
        fn = getattr(test_fuzz, name)
        if name.startswith("test_") and hasattr(fn, "hypothesis"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # zipfile's "Duplicate name" while building fuzzed zips
                fn()
            print(f"fuzz {name}: {test_fuzz.FUZZ_CASES.total()} examples so far")
    for name, n in sorted(test_fuzz.FUZZ_CASES.items()):
        print(f"  {n:5d} {name}")
    return sum(test_fuzz.FUZZ_CASES.values())


def visitors(n: int, seconds: float, work: Path) -> int:
    """n concurrent visitors on every page; the number without a problem (0 if a shared model changed)."""
    from tests.conftest import build_tiny_lm, tiny_card
    from tests.hardening.conftest import SHIPPED
    from tests.hardening.sessions import cache_report, checksum, run_visitors
    from tests.hardening.test_concurrency import make_visitors, shared_models

    root = work / "checkpoints"
    for i, cell in enumerate(("rnn", "gru", "lstm")):
        model = build_tiny_lm(cell, seed=i)
        model.save_pretrained(root / f"tiny-{cell}", tiny_card(model, f"tiny-{cell}"))
    for name in SHIPPED:
        (root / name).symlink_to(ROOT / "checkpoints" / name, target_is_directory=True)
    os.environ["SEQVIZ_CHECKPOINTS"] = str(root)
    people = make_visitors(root, work, n)
    models = shared_models(root)
    before = {p: checksum(m) for p, m in models.items()}
    uploads = set(Path(tempfile.gettempdir()).glob("seqviz-upload-*"))
    try:
        wall = run_visitors(people, seconds)
    finally:  # the app keeps one extracted upload per session; these sessions are over
        for leftover in set(Path(tempfile.gettempdir()).glob("seqviz-upload-*")) - uploads:
            shutil.rmtree(leftover, ignore_errors=True)
    same = {p: checksum(m) for p, m in models.items()} == before
    for v in people:
        for problem in v.problems:
            print(f"visitor {v.index}: {problem}")
    print(f"{n} visitors for {seconds:.0f} s (wall {wall:.0f} s): {sum(v.runs for v in people)} script runs, "
          f"{sum(v.visits for v in people)} page visits; shared models unchanged: {same}")
    for kind, name, entries, limit in cache_report():
        print(f"  cache {kind:8s} {name:60s} {entries:4d} / {limit}")
    return sum(not v.problems for v in people) if same else 0


def server_rss() -> float:
    """Resident memory of `streamlit run app.py` after chromium opened every page (shipped checkpoints)."""
    from playwright.sync_api import sync_playwright

    from tests.browser.driver import free_port, launch, start_server, stop_server, wait_idle

    env = {k: v for k, v in os.environ.items() if k != "SEQVIZ_CHECKPOINTS"}
    with sync_playwright() as pw:
        browser = launch(pw)
        port = free_port()
        server = start_server(env, port)
        try:
            print(f"server started: rss {rss_mb(server.pid):.0f} MB")
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            for spec in available_pages():
                page.goto(f"http://127.0.0.1:{port}/{spec.url_path}", wait_until="domcontentloaded")
                wait_idle(page)
                print(f"after {spec.title}: rss {rss_mb(server.pid):.0f} MB")
            return rss_mb(server.pid)
        finally:
            stop_server(server)
            browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=float(os.environ.get("SEQVIZ_CONCURRENCY_SECONDS", 120)))
    parser.add_argument("--visitors", type=int, default=20)
    parser.add_argument("--examples", type=int, default=100)
    parser.add_argument("--no-browser", action="store_true", help="skip the server memory (no chromium here)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    rss = float("nan") if args.no_browser else server_rss()
    with tempfile.TemporaryDirectory(prefix="seqviz-robustness-") as tmp:
        n = bad_files(Path(tmp) / "bad")
        m = fuzz(args.examples)
        k = visitors(args.visitors, args.seconds, Path(tmp) / "visitors")
    print(f"{n} of {len(CASES)} bad files refused with their message; {m} fuzz examples; {k} of {args.visitors} "
          f"visitors without a problem; server rss {rss:.0f} MB (goal <= 1200)")
    print(f"robustness: {n} bad files refused, {m} fuzz cases, {k} concurrent sessions, rss {rss:.0f}MB")


if __name__ == "__main__":
    main()
