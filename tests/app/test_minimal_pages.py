"""Every recurrent-LM page, and each of its tabs, through AppTest on tiny minGRU and minLSTM checkpoints."""

from __future__ import annotations

import pytest

from appkit.registry import PAGES
from tests.app.tabs import choose_tab, tab_sets
from tests.app.test_picker_truth import in_use
from tests.app.test_pages import open_page
from tests.conftest import build_tiny_lm, tiny_card

LM_PAGES = [p for p in PAGES if p.model_type == "recurrent_lm" and p.exists]
CELLS = ("mingru", "minlstm")
TABBED = ("gates.py", "gradient_flow.py", "exploding_vanishing.py", "trajectories.py")  # pages with lazy tabs: each is opened


@pytest.fixture(scope="module")
def minimal_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("minimal-checkpoints")
    for i, cell in enumerate(CELLS):
        model = build_tiny_lm(cell, seed=i)
        model.save_pretrained(root / f"tiny-{cell}", tiny_card(model, f"tiny-{cell}"))
    return root


def clean(at, where: str) -> None:
    assert not at.exception, f"{where}: {at.exception}"
    assert not at.error, f"{where}: {[e.value for e in at.error]}"


@pytest.mark.parametrize("cell", CELLS)
@pytest.mark.parametrize("page", LM_PAGES, ids=[p.path for p in LM_PAGES])
def test_every_tab_of_every_lm_page_runs_on_a_minimal_cell(page, cell, minimal_root, monkeypatch):
    monkeypatch.setenv("SEQVIZ_CHECKPOINTS", str(minimal_root))
    at = open_page(page, {"recurrent_lm": f"tiny-{cell}"})
    clean(at, page.path)
    assert in_use(at)[0] == f"tiny-{cell}", page.path
    opened = 0
    for key, labels in tab_sets(at.main):
        for label in labels:
            if choose_tab(at, key, label):
                at.run()
                clean(at, f"{page.path} · {label}")
                opened += 1
    assert opened or page.path not in TABBED, f"{page.path}: no tab opened"
