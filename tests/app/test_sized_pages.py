"""Pages on a model of real size say what they read less of: fewer tokens of a text, one layer of saturation, the top
layer's gradient, fewer continued tokens. A tiny Mamba stands in for a large one under a shrunken budget."""

from __future__ import annotations

import pytest

from appkit.registry import PAGES
from seqviz import budget
from seqviz.views import gates as gv
from tests.app.tabs import choose_tab
from tests.app.test_minimal_pages import clean
from tests.app.test_pages import open_page
from tests.conftest import build_tiny_mamba

PAGE = {p.path: p for p in PAGES}
LONG = "To be, or not to be, that is the question:\nWhether 'tis nobler in the mind to suffer\n" * 2


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sized-checkpoints")
    build_tiny_mamba(folder / "tiny-mamba")
    return folder


@pytest.fixture
def large(root, monkeypatch):
    """The tiny Mamba as a model of real size: no whole trace, 64 tokens a view, one saturation layer per chart."""
    monkeypatch.setenv("SEQVIZ_CHECKPOINTS", str(root))
    monkeypatch.setattr(budget, "WHOLE_TRACE", 0)
    monkeypatch.setattr(budget, "WORK", 1.0)
    monkeypatch.setattr(budget, "PAIR_WORK", 1.0)
    monkeypatch.setattr(gv, "FACET_UNITS", 1)


def said(at) -> str:
    return " | ".join([i.value for i in at.info] + [w.value for w in at.warning])


def test_a_long_text_is_cut_and_the_page_says_why(large):
    at = open_page(PAGE["gates.py"], {"recurrent_lm": "tiny-mamba"})
    at.text_area(key="gate_text").input(LONG).run()
    clean(at, "gates.py")
    assert "This model is large: a page reads up to 64 tokens" in said(at)
    assert at.slider(key="gate_pos").max == 63


def test_saturation_is_drawn_for_the_chosen_layer_and_the_page_says_so(large):
    at = open_page(PAGE["units.py"], {"recurrent_lm": "tiny-mamba", "units_layer": "1"})
    clean(at, "units.py")
    assert "saturation is drawn for layer 1 alone" in said(at)


def test_switching_units_off_reads_the_first_tokens_and_says_so(large, root, monkeypatch):
    monkeypatch.setattr(budget, "FEWEST_TOKENS", 8)  # the page reads 100 tokens, the six edited runs 16 each
    monkeypatch.setattr(budget, "WORK", 100 * budget.parameters(root / "tiny-mamba"))
    at = open_page(PAGE["interventions.py"], {"recurrent_lm": "tiny-mamba"})
    at.text_area(key="units_text").input(LONG).run()
    clean(at, "interventions.py")
    assert "the text is read 6 times here" in said(at) and "its first 16 tokens are read (84 cut)" in said(at)


def test_the_gradient_page_draws_the_top_layer_and_fewer_tokens_and_says_so(large):
    at = open_page(PAGE["gradient_flow.py"], {"recurrent_lm": "tiny-mamba"})
    clean(at, "gradient_flow.py")
    assert any("tiny-mamba (Mamba) is large: its curve reads the first 64 tokens." in c.value for c in at.caption)
    assert choose_tab(at, "gf_tab", "Layers")
    at.run()
    clean(at, "gradient_flow.py · Layers")
    assert "its top layer alone is drawn" in said(at)


def test_the_continuation_is_shorter_and_the_page_says_so(large):
    at = open_page(PAGE["exposure_bias_lm.py"], {"recurrent_lm": "tiny-mamba"})
    at.text_area(key="ebl_text").input(LONG).run()
    clean(at, "exposure_bias_lm.py")
    assert "tokens asked for are continued here" in said(at)
