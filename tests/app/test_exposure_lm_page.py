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
    assert metric(at, "Mean log p(real), TF") == f"{sum(gold) / 30:.3f}"


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


def test_each_slider_s_neighbours_are_prefetched_so_moving_one_step_computes_nothing(tiny_only, monkeypatch):
    """The page queues the two runs and charts one step away on each slider; once the background worker
    ran them, a one-step move decodes nothing and builds no chart in the visitor's run, and shows the
    library's numbers."""
    from appkit import models as cm
    from appkit.sections import exposure_bias as sec
    from seqviz.charts import exposure as charts
    from seqviz.introspect import exposure as ex

    tasks = []
    monkeypatch.setattr(cm, "prefetch", lambda func, *args: tasks.append((func, args)))
    at = open_clean(PAGE, {"recurrent_lm": "tiny-gru", "ebl_prompt": "12", "ebl_n": "30"})
    at.text_area(key="ebl_text").input(LONG).run()
    assert not at.exception, at.exception
    queued = {args[2:5] for func, args in tasks if func is sec.lm_runs_specs and args[1] == LONG}
    assert queued == {(11, 30, 0.0), (13, 30, 0.0), (12, 29, 0.0), (12, 31, 0.0), (12, 30, 0.1)}  # no T < 0
    want = ex.compare_continuation(load(tiny_only / "tiny-gru"), LONG, 12, 30, temperature=0.1, seed=0)
    for func, args in tasks:  # what the background worker does between the runs
        func(*args)

    def refused(*args, **kwargs):
        raise AssertionError("computed during the visitor's run")

    for module, names in ((ex, ("compare_continuation",)), (charts, ("gold_logprob_chart", "divergence_chart"))):
        for name in names:
            monkeypatch.setattr(module, name, refused)
    slider(at, "ebl_temp").set_value(0.1).run()
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    assert metric(at, "Mean log p(real), own prefix") == f"{want['table'].gold_logp_fr.mean():.3f}"
