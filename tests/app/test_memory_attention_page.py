"""The Memory as attention page through AppTest: every shipped LM family opens it (a tanh RNN gets its family's
sentence and a link to Gradient flow), its captions are the library's unrolling recomputed here, the step moves,
and an old link to the Gate page's tab lands on it."""

from __future__ import annotations

import numpy as np
import pytest

from seqviz.text import gettext_in
from appkit.registry import PAGES
from seqviz import load
from seqviz.families import of
from seqviz.introspect.implicit import contributions
from seqviz.views import implicit as iv
from tests.app.test_links import open_link
from tests.app.test_pages import open_page
from tests.app.test_picker_truth import in_use
from tests.conftest import ROOT

PAGE = next(p for p in PAGES if p.path == "memory_attention.py")
SHIPPED = sorted(p.name for p in (ROOT / "checkpoints").glob("shakespeare-char-*"))


def clean(at, what: str) -> None:
    assert not at.exception, f"{what}: {at.exception}"
    assert not at.error, f"{what}: {[e.value for e in at.error]}"


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_lm_opens_the_page_or_says_why_not(name):
    at = open_page(PAGE, {"recurrent_lm": name})
    clean(at, name)
    assert in_use(at)[0] == name
    family = of(load(ROOT / "checkpoints" / name).config)
    if not family.applies("linear_form"):
        assert [i.value for i in at.info] == [family.why_not("linear_form")]
        assert not at.get("vega_lite_chart") and not at.slider
        assert any("gradient_flow" in str(link.proto) for link in at.get("page_link"))
        return
    assert len(at.get("vega_lite_chart")) == 2
    step = at.slider(key="ma_pos")
    assert step.value == step.max == iv.last_step(len(iv.DEFAULT_TEXT))  # opens on the last scored step
    step.set_value(step.value - 40).run()
    clean(at, f"{name}, step moved")
    assert any(c.value.startswith(f"At step {at.slider(key='ma_pos').value} ") for c in at.caption)


def test_the_captions_are_the_unrolling_recomputed_here():
    """The layer map's share from far back and the knockout verdict, on the shipped LSTM at its first layer."""
    at = open_page(PAGE, {"recurrent_lm": "shakespeare-char-lstm"})
    at.slider(key="ma_pos").set_value(100).run()
    clean(at, "step 100")
    model = load(ROOT / "checkpoints" / "shakespeare-char-lstm")
    ids = model.tokenizer.encode(iv.DEFAULT_TEXT).ids
    mass = np.abs(contributions(model, ids, layer=0).contributions[100]).sum(-1)
    far = mass[: 100 - iv.FAR + 1].sum() / mass[:101].sum()
    captions = [c.value for c in at.caption]
    token = iv.DEFAULT_TEXT[100].replace(" ", "␣")  # a character model: token 100 is character 100
    assert any(c.startswith(f"At step 100 («{token}») {far:.0%} of the layer's memory") for c in captions), captions
    assert any(c.startswith("Does a large share mean a large effect?") for c in captions)
    at.selectbox(key="ma_unit_0").select_index(1).run()  # the longest-reaching unit
    clean(at, "a unit")
    assert any("of this unit's memory c" in c.value for c in at.caption)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_an_old_link_to_the_gate_pages_tab_opens_this_page(lang):
    other = {"en": "zh", "zh": "en"}[lang]
    text = "HAMLET.\nThe rest is silence, and so it is.\n"
    at = open_link("gates.py", {"lang": lang, "gate_tab": gettext_in(other, "Memory as attention"),
                                "gate_text": text, "gate_layer": "1", "gate_pos": "20"})
    assert at.title[0].value == gettext_in(lang, "Memory as attention")
    assert at.text_area(key="ma_text").value == text and at.selectbox(key="ma_layer").value == 1
    assert at.slider(key="ma_pos").value == 20


def test_the_attention_page_draws_the_translation_in_the_lstms_and_the_mambas_memory_once_opened():
    """Under the alignment, collapsed: opened, the word maps of the shipped LSTM and Mamba reading the translation
    (their word rows the translation's words), with the sentence computed from the same facts."""
    from seqviz.views import implicit_compare as compared

    attention = next(p for p in PAGES if p.path == "attention.py")
    at = open_page(attention)
    clean(at, "attention")
    before = len(at.get("vega_lite_chart"))
    at.session_state["att_memories"] = True
    at.run()
    clean(at, "attention, memories opened")
    assert len(at.get("vega_lite_chart")) == before + 1
    translator = load(ROOT / "checkpoints" / "zh-en-attention-gru")
    lms = tuple((name, load(ROOT / "checkpoints" / name)) for name in compared.COMPARED)
    facts = compared.word_maps(translator, at.text_input(key="att_sentence").value, lms).facts
    assert facts["titles"] == ("LSTM", "Mamba")
    assert compared.word_caption(facts) in [c.value for c in at.caption]
