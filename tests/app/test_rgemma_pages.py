"""Every recurrent-LM page, and each of its tabs, through AppTest on a tiny random transformers RecurrentGemma folder
(Griffin's blocks: recurrent, recurrent, attention, recurrent), with no page or view written for it."""

from __future__ import annotations

import pytest

from appkit.registry import PAGES
from tests.app.tabs import walk_family
from tests.app.test_minimal_pages import clean
from tests.app.test_pages import open_page
from tests.app.test_picker_truth import in_use
from tests.families.rgemma import build_tiny_rgemma

LM_PAGES = [p for p in PAGES if p.model_type == "recurrent_lm" and p.exists]


@pytest.fixture(scope="module")
def rgemma_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("rgemma-checkpoints")
    build_tiny_rgemma(root / "tiny-rgemma")
    return root


@pytest.mark.parametrize("page", LM_PAGES, ids=[p.path for p in LM_PAGES])
def test_every_tab_of_every_lm_page_runs_on_a_recurrent_gemma(page, rgemma_root, monkeypatch):
    walk_family(page, "tiny-rgemma", rgemma_root, monkeypatch, "RG-LRU", "RecurrentGemma")


def test_the_memory_tab_ranks_channels_by_the_product_of_their_decays(rgemma_root, monkeypatch):
    """The memory tab's first channel is the one whose ∏ a_t, multiplied out by hand from the traced decays, stays
    above 0.5 longest (ties: the smaller product last), and its caption is the entry's: the RG-LRU's a_t."""
    import numpy as np

    import seqviz
    from seqviz.introspect.language import prepare
    from seqviz.views.gates import DEFAULT_TEXT

    monkeypatch.setenv("SEQVIZ_CHECKPOINTS", str(rgemma_root))
    page = next(p for p in LM_PAGES if p.path == "gates.py")
    at = open_page(page, {"recurrent_lm": "tiny-rgemma", "gate_tab": "Memory ∏ f"})
    clean(at, "gates.py memory")
    lm = seqviz.load(rgemma_root / "tiny-rgemma")
    ids = prepare(lm.tokenizer, DEFAULT_TEXT)[0]
    a = lm.trace([ids], names=["layers.0.gates.forget"])["layers.0.gates.forget"][0].double().numpy()
    product = np.cumprod(a, 0)  # [T, W], from position 0
    span = np.where((product > 0.5).all(0), len(ids), (product > 0.5).argmin(0))
    best = int(np.lexsort((np.arange(len(span)), -np.log10(product[-1]), -span))[0])
    box = next(s for s in at.selectbox if s.label == "Unit (longest memory first)")
    assert int(box.value) == best
    assert any("The RG-LRU keeps" in c.value for c in at.caption)


def test_a_folder_typed_in_the_sidebar_opens_and_its_perplexity_is_transformers(rgemma_root, monkeypatch):
    """Typed as a local folder; the perplexity shown is exp(mean cross-entropy) of transformers' own forward."""
    import math

    import torch
    import torch.nn.functional as F
    from transformers import AutoTokenizer, RecurrentGemmaForCausalLM

    from appkit.sidebar import widget_key
    from seqviz.inputs import DEFAULT_SAMPLE, SAMPLES

    monkeypatch.setenv("SEQVIZ_CHECKPOINTS", str(rgemma_root))
    page = next(p for p in LM_PAGES if p.path == "language_model.py")
    at = open_page(page)
    at.sidebar.radio(key=widget_key("recurrent_lm", "source", "language_model")).set_value("Local folder").run()
    at.sidebar.text_input(key=widget_key("recurrent_lm", "folder", "language_model")).input(
        str(rgemma_root / "tiny-rgemma")).run()
    clean(at, "language_model.py, local folder")
    assert in_use(at) == ("tiny-rgemma", "local folder")
    assert any("RecurrentGemma" in c.value for c in at.sidebar.caption)
    folder = rgemma_root / "tiny-rgemma"
    model, tok = RecurrentGemmaForCausalLM.from_pretrained(folder).eval(), AutoTokenizer.from_pretrained(folder)
    ids = [i for i in tok(SAMPLES[DEFAULT_SAMPLE], add_special_tokens=False).input_ids if i != tok.unk_token_id]
    with torch.no_grad():
        logits = model(torch.tensor([ids]), use_cache=False).logits[0]
    loss = F.cross_entropy(logits[:-1], torch.tensor(ids[1:]))
    shown = next(m.value for m in at.metric if m.label == "Perplexity")
    assert shown == f"{math.exp(float(loss)):.2f}"
