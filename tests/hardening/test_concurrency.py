"""Twenty visitors at once on every page of appkit.registry.PAGES, a third of them with their own upload.

Each visitor (tests/hardening/sessions.py) types its own word, picks its own model and moves each
page's main control, in its own thread against the same process-wide caches, for
``SEQVIZ_CONCURRENCY_SECONDS`` (default 20 here; benchmarks/robustness.py runs 120). Afterwards:
no exception anywhere, no visitor ever saw another's word or model, the shared cached models are
bit-for-bit what they were (parameter checksums), and every cache stayed within its max_entries.
"""

from __future__ import annotations

import ast
import os
import tempfile
from pathlib import Path

import pytest
import streamlit as st

from appkit.registry import PAGES
from tests.conftest import ROOT, build_tiny_lm
from tests.hardening.sessions import (Visitor, cache_report, checksum, run_visitors, untouched,
                                      zipped_checkpoint)

VISITORS = 20
SECONDS = float(os.environ.get("SEQVIZ_CONCURRENCY_SECONDS", "20"))
CELLS = ("rnn", "gru", "lstm")


def make_visitors(root: Path, work: Path, n: int = VISITORS) -> list[Visitor]:
    """n visitors; every third uploads a tiny model of its own (its own random weights)."""
    import seqviz
    from seqviz.introspect.language import score_text

    pages = [p for p in PAGES if p.exists]
    visitors = []
    for i in range(n):
        cell = CELLS[i % 3]
        if i % 3 == 0:
            model = build_tiny_lm(cell, seed=100 + i)
            name = f"visitor-{i:02d}"
            folder = model.save_pretrained(work / name, {"name": name})
            v = Visitor(i, pages, f"{name}.zip", upload=zipped_checkpoint(folder, name))
        else:
            model = seqviz.load(root / f"tiny-{cell}")
            v = Visitor(i, pages, f"tiny-{cell}")
        v.expected_perplexity = f"{score_text(model, v.text).perplexity:.2f}"
        visitors.append(v)
    return visitors


def shared_models(root: Path) -> dict:
    """Every checkpoint under the root, loaded through the app's cache (the objects visitors share)."""
    from appkit.cache import list_checkpoints, model

    return {c.path: model(c.ref()) for c in list_checkpoints(roots=[root])}


@pytest.fixture
def app_root(hardening_root, monkeypatch):
    """The hardening root; caches are kept from earlier tests (a server's are warm too) and emptied after."""
    monkeypatch.setenv("SEQVIZ_CHECKPOINTS", str(hardening_root))
    yield hardening_root
    st.cache_data.clear()
    st.cache_resource.clear()


def test_twenty_visitors_at_once(app_root, tmp_path):
    uploads_before = set(Path(tempfile.gettempdir()).glob("seqviz-upload-*"))
    visitors = make_visitors(app_root, tmp_path)
    models = shared_models(app_root)
    before = {path: checksum(m) for path, m in models.items()}
    assert len(before) >= 5, sorted(before)
    try:
        wall = run_visitors(visitors, SECONDS)
    finally:
        for leftover in set(Path(tempfile.gettempdir()).glob("seqviz-upload-*")) - uploads_before:
            import shutil

            shutil.rmtree(leftover, ignore_errors=True)
    problems = [f"visitor {v.index}: {p}" for v in visitors for p in v.problems]
    assert not problems, "\n".join(problems[:20])
    assert all(v.visits >= 1 for v in visitors)
    seen = set().union(*(v.seen_pages for v in visitors))
    assert seen == {p.path for p in PAGES if p.exists}, f"pages nobody visited: {sorted({p.path for p in PAGES} - seen)}"
    # The shared models: the same numbers, still eval-mode, no gradients, no hooks left behind.
    after = {path: checksum(m) for path, m in models.items()}
    assert after == before, [p for p in before if after[p] != before[p]]
    assert {path: untouched(m) for path, m in models.items() if untouched(m)} == {}
    fresh = shared_models(app_root)  # what the cache serves now (reloaded if it was evicted): the same
    assert {path: checksum(m) for path, m in fresh.items()} == before
    over = [row for row in cache_report() if not row[2] <= row[3] < float("inf")]
    assert not over, over  # (kind, function, entries, max_entries)
    runs = sum(v.runs for v in visitors)
    print(f"{len(visitors)} visitors, {runs} script runs, {sum(v.visits for v in visitors)} page visits "
          f"in {wall:.0f} s")


def test_every_cache_has_max_entries():
    """Memory stays bounded: each st.cache_data / st.cache_resource decorator in the app names max_entries."""
    decorators, unbounded = [], []
    for path in sorted([*ROOT.glob("appkit/**/*.py"), *ROOT.glob("pages/*.py"), ROOT / "app.py"]):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            for dec in getattr(node, "decorator_list", []):
                func = dec.func if isinstance(dec, ast.Call) else dec
                if isinstance(func, ast.Attribute) and func.attr in ("cache_data", "cache_resource"):
                    decorators.append(f"{path.name}:{node.name}")
                    keywords = dec.keywords if isinstance(dec, ast.Call) else []
                    if not any(k.arg == "max_entries" and not (isinstance(k.value, ast.Constant) and k.value.value
                                                               is None) for k in keywords):
                        unbounded.append(f"{path.name}:{node.name}")
    assert len(decorators) >= 10, decorators
    assert not unbounded, f"caches without max_entries: {unbounded}"


def test_the_checks_can_fail(app_root):
    """A foreign word on the page, a changed weight, a hook or training mode: each is caught."""
    import torch
    from streamlit.testing.v1 import AppTest

    pages = [p for p in PAGES if p.exists]
    mine, theirs = Visitor(1, pages, "tiny-gru"), Visitor(2, pages, "tiny-gru")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.switch_page("pages/language_model.py").run()
    next(t for t in at.text_area if t.label == "Text").input(theirs.text)
    mine.run(at, "a page showing another visitor's text")
    assert any(theirs.word in p and "another visitor's text" in p for p in mine.problems), mine.problems

    model = build_tiny_lm("gru")
    before = checksum(model)
    assert untouched(model) == []
    model.head.bias[0] += 1e-6
    assert checksum(model) != before
    handle = model.layers[0].register_forward_hook(lambda *a: None)
    model.train()
    assert untouched(model) == ["in training mode", "hooks left on a module"]
    handle.remove()
    with torch.no_grad():
        model.eval().requires_grad_(True)
    assert untouched(model) == ["parameters require or hold gradients"]
