"""Exposure bias (LM) through AppTest: the numbers against torch, and its text-dependent slider ranges."""

from __future__ import annotations

import pytest
import torch

from appkit.registry import PAGES
from seqviz import load
from tests.app.test_pages import open_clean

PAGE = next(p for p in PAGES if p.path == "exposure_bias_lm.py")
LONG = "To be, or not to be, that is the question: whether 'tis nobler in the mind to suffer the slings. " * 3


def metric(at, label):
    return next(m.value for m in at.metric if m.label.startswith(label))


def slider(at, key):
    return at.slider(key=key)


def test_teacher_forced_log_p_equals_torch(tiny_only):
    at = open_clean(PAGE, {"recurrent_lm": "tiny-gru", "ebl_prompt": "12", "ebl_n": "30"})
    at.text_area(key="ebl_text").input(LONG).run()
    assert not at.exception
    assert (slider(at, "ebl_prompt").value, slider(at, "ebl_n").value) == (12, 30)
    model = load(tiny_only / "tiny-gru")
    ids = model.tokenizer.encode(LONG).ids
    logits, _ = model(torch.tensor([ids]))
    logp = torch.log_softmax(logits[0].double(), -1)
    gold = [float(logp[12 - 1 + t, ids[12 + t]]) for t in range(30)]  # position 11 + t predicts token 12 + t
    assert metric(at, "Mean log p(real), teacher-forced") == f"{sum(gold) / 30:.3f}"


def test_ranges_follow_the_text_length(tiny_only):
    at = open_clean(PAGE)
    at.text_area(key="ebl_text").input(LONG).run()
    n_tokens = len(LONG)  # a character model: one token per character, all in the tiny alphabet
    assert slider(at, "ebl_prompt").max == 120
    slider(at, "ebl_prompt").set_value(120).run()
    assert slider(at, "ebl_n").max == min(200, n_tokens - 120)
    slider(at, "ebl_n").set_value(slider(at, "ebl_n").max).run()
    assert not at.exception and metric(at, "First divergence")
    short = "To be, or not to be, that is"  # 28 tokens: the kept 120 and 178 are out of range now
    at.text_area(key="ebl_text").input(short).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    prompt, cont = slider(at, "ebl_prompt"), slider(at, "ebl_n")
    assert (prompt.max, prompt.value) == (len(short) - 6, len(short) - 6)
    assert (cont.max, cont.value) == (len(short) - prompt.value, len(short) - prompt.value)
    assert metric(at, "First divergence")
    at.text_area(key="ebl_text").input(LONG).run()  # longer again: the values stay, the ranges grow back
    assert not at.exception and slider(at, "ebl_prompt").max == 120


@pytest.mark.parametrize("text", ["", "   ", "To be", "To be, "])
def test_a_text_too_short_gets_a_message(tiny_only, text):
    at = open_clean(PAGE)
    at.text_area(key="ebl_text").input(text).run()
    assert not at.exception and not at.error
    assert any("need at least 8" in i.value for i in at.info), [i.value for i in at.info]


