"""Every recurrent-LM page, and each of its tabs, through AppTest on a tiny random transformers xLSTM folder."""

from __future__ import annotations

import pytest

from appkit.registry import PAGES
from tests.app.tabs import walk_family
from tests.app.test_minimal_pages import clean
from tests.app.test_pages import open_page
from tests.conftest import build_tiny_lm, tiny_card
from tests.families.xlstm_tiny import build_tiny_xlstm

LM_PAGES = [p for p in PAGES if p.model_type == "recurrent_lm" and p.exists]


@pytest.fixture(scope="module")
def xlstm_root(tmp_path_factory):
    """A checkpoints root: tiny-xlstm (a character tokenizer of its own) beside a tiny LSTM."""
    root = tmp_path_factory.mktemp("xlstm-checkpoints")
    build_tiny_xlstm(root / "tiny-xlstm")
    lstm = build_tiny_lm("lstm", seed=1)
    lstm.save_pretrained(root / "tiny-lstm", tiny_card(lstm, "tiny-lstm"))
    return root


@pytest.mark.parametrize("page", LM_PAGES, ids=[p.path for p in LM_PAGES])
def test_every_tab_of_every_lm_page_runs_on_an_xlstm(page, xlstm_root, monkeypatch):
    walk_family(page, "tiny-xlstm", xlstm_root, monkeypatch, "xLSTM")


def test_the_memory_tab_ranks_columns_by_the_hand_computed_product_of_forget_gates(xlstm_root, monkeypatch):
    """The memory tab's first unit and its span: ∏ σ(f̃_t) > 0.5 of its head, from the forget gate's own weights
    (soft-capped pre-activation of the block's normalised input), cumulated by hand."""
    import numpy as np
    import torch

    import seqviz
    from seqviz.introspect.language import prepare
    from seqviz.views.gates import DEFAULT_TEXT

    monkeypatch.setenv("SEQVIZ_CHECKPOINTS", str(xlstm_root))
    page = next(p for p in LM_PAGES if p.path == "gates.py")
    at = open_page(page, {"recurrent_lm": "tiny-xlstm", "gate_tab": "Memory ∏ f"})
    clean(at, "gates.py memory")
    lm = seqviz.load(xlstm_root / "tiny-xlstm")
    ids = prepare(lm.tokenizer, DEFAULT_TEXT)[0]
    block = lm.model.backbone.blocks[0]
    with torch.no_grad():
        x = block.norm_mlstm(lm.model.backbone.embeddings(torch.tensor([ids])))[0].double()
        pre = x @ block.mlstm_layer.fgate_preact.weight.double().T + block.mlstm_layer.fgate_preact.bias.double()
        f = torch.sigmoid(15 * torch.tanh(pre / 15))  # [T, NH]
    product = torch.cumprod(f, 0).repeat_interleave(lm.config.value_dim, 1).numpy()  # [T, U]: a head's columns
    span = np.where((product > 0.5).all(0), len(ids), (product > 0.5).argmin(0))
    best = int(np.lexsort((np.arange(len(span)), -np.log10(product[-1]), -span))[0])
    box = next(s for s in at.selectbox if s.label == "Unit (longest memory first)")
    assert int(box.value) == best
    metric = next(m for m in at.metric if m.label.startswith(f"Unit {best}: "))
    assert metric.value.split()[-2] == str(int(span[best]))
    assert any("An xLSTM keeps" in c.value for c in at.caption)
