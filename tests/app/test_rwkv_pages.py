"""Every recurrent-LM page, and each of its tabs, through AppTest on a tiny random transformers RWKV-4 folder, and
the memory tab's ranking against the decays computed by hand."""

from __future__ import annotations

import pytest

from appkit.registry import PAGES
from tests.app.tabs import walk_family
from tests.app.test_minimal_pages import clean
from tests.app.test_pages import open_page
from tests.conftest import build_tiny_lm, tiny_card
from tests.core.test_rwkv import build_tiny_rwkv

LM_PAGES = [p for p in PAGES if p.model_type == "recurrent_lm" and p.exists]


@pytest.fixture(scope="module")
def rwkv_root(tmp_path_factory):
    """A checkpoints root: tiny-rwkv (a character tokenizer of its own) beside a tiny LSTM (seqviz's vocabulary)."""
    import json

    import seqviz

    root = tmp_path_factory.mktemp("rwkv-checkpoints")
    build_tiny_rwkv(root / "tiny-rwkv", seed=0, tokenizer=True)
    (root / "tiny-rwkv" / "card.json").write_text(json.dumps(tiny_card(seqviz.load(root / "tiny-rwkv"), "tiny-rwkv")))
    lstm = build_tiny_lm("lstm", seed=1)
    lstm.save_pretrained(root / "tiny-lstm", tiny_card(lstm, "tiny-lstm"))
    return root


@pytest.mark.parametrize("page", LM_PAGES, ids=[p.path for p in LM_PAGES])
def test_every_tab_of_every_lm_page_runs_on_an_rwkv(page, rwkv_root, monkeypatch):
    walk_family(page, "tiny-rwkv", rwkv_root, monkeypatch, "RWKV")


def test_the_memory_tab_ranks_channels_by_their_decay(rwkv_root, monkeypatch):
    """An RWKV's decay e^(−w) is the same at every token, so the memory tab's first channel is the one with the
    smallest w = exp(time_decay) (its ∏ e^(−w) stays above 0.5 longest), and the caption says how it keeps it."""
    import numpy as np
    import torch

    import seqviz
    from seqviz.introspect.language import prepare
    from seqviz.views.gates import DEFAULT_TEXT

    monkeypatch.setenv("SEQVIZ_CHECKPOINTS", str(rwkv_root))
    at = open_page(next(p for p in LM_PAGES if p.path == "gates.py"), {"recurrent_lm": "tiny-rwkv",
                                                                        "gate_tab": "Memory ∏ f"})
    clean(at, "gates.py memory")
    lm = seqviz.load(rwkv_root / "tiny-rwkv")
    T = len(prepare(lm.tokenizer, DEFAULT_TEXT)[0])
    w = torch.exp(lm.model.rwkv.blocks[0].attention.time_decay.double()).numpy()
    product = np.exp(-np.outer(np.arange(1, T + 1), w))  # [T, C]: ∏ e^(−w) from position 0
    span = np.where((product > 0.5).all(0), T, (product > 0.5).argmin(0))
    best = int(np.lexsort((np.arange(len(span)), w * T, -span))[0])  # -log ∏ e^(−w) = w·T: lower first
    box = next(s for s in at.selectbox if s.label == "Unit (longest memory first)")
    assert int(box.value) == best == int(np.argmin(w))
    assert any("RWKV keeps" in c.value for c in at.caption)
