"""The Attention and Exposure-bias pages open a user's own encoder-decoder state dict typed in the sidebar."""

from __future__ import annotations

import os

import pytest

from appkit.registry import PAGES
from tests.app.test_pages import open_page
from tests.seq2seq.test_plain_seq2seq import open_layout

ATTENTION = next(p for p in PAGES if p.path == "attention.py")
EXPOSURE = next(p for p in PAGES if p.path == "exposure_bias.py")


@pytest.fixture
def plain_root(tmp_path, monkeypatch):
    monkeypatch.setenv("SEQVIZ_CHECKPOINTS", str(tmp_path / "shipped"))  # nothing shipped
    monkeypatch.setenv("SEQVIZ_ALLOWED_DIRS", os.pathsep.join([str(tmp_path)]))
    (tmp_path / "shipped").mkdir()
    open_layout("bentrevett-3", tmp_path)
    open_layout("pytorch-tutorial", tmp_path)
    return tmp_path


def typed(page, path, field_key: str, sentence: str):
    from appkit.sidebar import widget_key

    at = open_page(page)
    name = page.path.removesuffix(".py")
    at.sidebar.radio(key=widget_key("seq2seq", "source", name)).set_value("Local folder").run()
    at.sidebar.text_input(key=widget_key("seq2seq", "folder", name)).input(str(path)).run()
    at.text_input(key=field_key).input(sentence).run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    return at


def test_the_attention_page_draws_a_plain_models_alignment(plain_root):
    at = typed(ATTENTION, plain_root / "bentrevett-3", "att_sentence", "ich bin gross")
    text = " ".join(m.value for m in at.markdown)
    assert "**Greedy translation:**" in text
    assert "**Source units:** `<sos>` · `ich` · `bin` · `gross` · `<eos>`" in text  # what the model reads
    assert len(at.get("vega_lite_chart")) >= 1, [i.value for i in at.info]
    at = typed(ATTENTION, plain_root / "pytorch-tutorial", "att_sentence", "je suis grand")
    assert any("no attention" in i.value for i in at.info)


def test_the_exposure_page_runs_on_a_plain_model(plain_root):
    at = typed(EXPOSURE, plain_root / "bentrevett-3", "eb_src", "ich bin gross")
    at.text_input(key="eb_ref").input("i am tall").run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    assert any(m.label == "First divergence" for m in at.metric), [i.value for i in at.info]
    assert any(m.value.startswith("**Free-running output:**") for m in at.markdown)
