"""A script that runs the app's pages exits cleanly, with the production settings (background work on).

A daemon thread still inside torch at interpreter shutdown aborted such scripts with exit 134
("terminate called without an active exception") in 2 of 3 runs; ``seqviz.background`` owns every
background task now. The runs go two at a time, each in a fresh interpreter, as a benchmark runs them: two runs
by default (40 s on the 2-core machine), ten in the slow tier CI runs (240 s).
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.conftest import ROOT

SCRIPT = """
import sys
from streamlit.testing.v1 import AppTest
from appkit.registry import PAGES

for page in [p for p in PAGES if p.exists]:
    at = AppTest.from_file(sys.argv[1], default_timeout=120)
    at.run()
    at.switch_page(f"pages/{page.path}")
    at.run()
    if at.exception:
        print(f"{page.path}: {at.exception[0].message}", file=sys.stderr)
        sys.exit(3)
print("pages:", len(PAGES))
"""


def run_once(script) -> subprocess.CompletedProcess:
    # The production settings: none of the tests' SEQVIZ_ variables, except where the data cache is.
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEQVIZ_") or k == "SEQVIZ_DATA"}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, str(script), str(ROOT / "app.py")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("n", [2, pytest.param(10, marks=pytest.mark.slow)])
def test_running_every_page_from_a_script_exits_with_status_0_every_time(tmp_path, n):
    script = tmp_path / "every_page.py"
    script.write_text(SCRIPT)
    with ThreadPoolExecutor(2) as pool:
        runs = list(pool.map(run_once, [script] * n))
    codes = [r.returncode for r in runs]
    failed = [r.stderr[-1500:] for r in runs if r.returncode]
    assert codes == [0] * n, (codes, failed[:1])
    assert all("pages:" in r.stdout for r in runs)
    assert not any("terminate called" in r.stderr for r in runs)
