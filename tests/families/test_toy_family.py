"""A family is its own module: a toy diagonal linear recurrence (tests/families/toy.py) registered at run time
opens on every recurrent-LM page, every tab, with no page or view edited."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import seqviz
from appkit.registry import PAGES
from seqviz import families
from tests.app.tabs import choose_tab, tab_sets
from tests.app.test_pages import open_page
from tests.app.test_picker_truth import in_use
from tests.families import toy

LM_PAGES = [p for p in PAGES if p.model_type == "recurrent_lm" and p.exists]


@pytest.fixture(scope="module")
def toy_root(tmp_path_factory):
    with toy.installed():
        root = tmp_path_factory.mktemp("toy-checkpoints")
        model = toy.build()
        loss = float(model.trace("the cat sat.")["loss"].mean())
        model.save_pretrained(root / "tiny-toy", {"name": "tiny-toy", "architecture": "2-layer toy, hidden 8",
                                                  "val_loss": round(loss, 4), "device": "cpu", "training_steps": 0})
        yield root


def test_the_toy_loads_through_the_registry_and_is_its_own_family(toy_root):
    model = seqviz.load(toy_root / "tiny-toy")
    assert isinstance(model, toy.ToyLM) and families.of(model) is toy.TOY
    trace = model.trace("the cat")
    a, h = trace["layers.0.gates.decay"][0], trace["layers.0.h"][0]
    drive = trace["layers.0.drive"][0]
    # the recurrence the entry's linear form names, checked step by step: h_t = a_t h_(t−1) + b_t
    assert torch.allclose(h[1:], a[1:] * h[:-1] + drive[1:], atol=1e-6)
    assert "toy" not in families.table() or families.get("toy") is toy.TOY


def test_the_toy_gradient_matrix_is_the_product_of_its_decays(toy_root):
    """One layer's ∂h_t/∂h_k is diag(a)^(t−k): G[t, k] = ‖diag(a)^(t−k) ∂L_t/∂h_t‖, an independent check of
    the autograd module the entry names."""
    model = seqviz.load(toy_root / "tiny-toy")
    ids = model.tokenizer.encode("the cat sat").ids
    ids = torch.tensor([ids])
    G = toy.gradient_matrix(model, ids, layer=1)
    a = torch.sigmoid(model.alpha[1]).double()
    h = model.trace(ids)["layers.1.h"][0].detach().requires_grad_(True)
    t = 6
    with torch.enable_grad():
        logp = torch.log_softmax(model.out(h[t]), -1)
        (g,) = torch.autograd.grad(-logp[ids[0, t + 1]], h)
    for k in range(t + 1):
        expected = float((a ** (t - k) * g[t].double()).norm())
        assert G[t, k] == pytest.approx(expected, rel=1e-4)
    assert np.isnan(G[t, t + 1])


@pytest.mark.parametrize("page", LM_PAGES, ids=[p.path for p in LM_PAGES])
def test_every_tab_of_every_lm_page_opens_a_registered_toy_family(page, toy_root, monkeypatch):
    monkeypatch.setenv("SEQVIZ_CHECKPOINTS", str(toy_root))
    with toy.installed():
        at = open_page(page, {"recurrent_lm": "tiny-toy"})
        assert not at.exception, f"{page.path}: {at.exception}"
        assert not at.error, f"{page.path}: {[e.value for e in at.error]}"
        assert in_use(at)[0] == "tiny-toy", page.path
        for key, labels in tab_sets(at.main):
            for label in labels:
                if choose_tab(at, key, label):
                    at.run()
                    assert not at.exception, f"{page.path} · {label}: {at.exception}"
                    assert not at.error, f"{page.path} · {label}: {[e.value for e in at.error]}"
