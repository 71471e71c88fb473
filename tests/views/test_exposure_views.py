"""seqviz.views.exposure against torch: the two runs of a language model continuing a real text."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

from seqviz import figures
from seqviz.introspect.exposure import compare_continuation
from seqviz.views import exposure as views
from tests.conftest import build_tiny_lm
from tests.float32 import ATOL, RTOL

TEXT = "To be, or not to be, that is the question: whether 'tis nobler in the mind to suffer the slings. " * 3


@pytest.fixture(scope="module")
def lstm():
    return build_tiny_lm("lstm", seed=5)


def log_softmax(model, ids: list[int]) -> torch.Tensor:
    """log p(· | ids[:i+1]) at every position i, from the model's own forward pass over ``ids``."""
    logits, _ = model(torch.tensor([ids]))
    return torch.log_softmax(logits[0].double(), -1)


def greedy(model, ids: list[int], n: int) -> list[int]:
    """n tokens, each the likeliest non-special one after the whole prefix read again."""
    ids = list(ids)
    for _ in range(n):
        last = log_softmax(model, ids)[-1]
        last[model.tokenizer.special_ids] = -float("inf")
        ids.append(int(last.argmax()))
    return ids[-n:]


@pytest.mark.parametrize("prompt, n", [(40, 60), (12, 30), (120, 5)])  # later ones slice the first one's traces
def test_teacher_forced_and_own_log_p_equal_torch(lstm, prompt, n):
    ids = lstm.tokenizer.encode(TEXT).ids
    view = views.gold_logprob(lstm, TEXT, prompt=prompt, n=n)
    gold = ids[prompt:prompt + n]
    tf = log_softmax(lstm, ids[:prompt + n])
    assert view.data["gold_logp_tf"].to_numpy() == pytest.approx(
        [float(tf[prompt - 1 + t, gold[t]]) for t in range(n)], rel=RTOL, abs=ATOL)  # position i predicts i + 1
    own = greedy(lstm, ids[:prompt], n)
    fr = log_softmax(lstm, ids[:prompt] + own)
    assert view.data["gold_logp_fr"].to_numpy() == pytest.approx(
        [float(fr[prompt - 1 + t, gold[t]]) for t in range(n)], rel=RTOL, abs=ATOL)
    wrong = [a != b for a, b in zip(own, gold)]
    assert view.facts["first_divergence"] == (wrong.index(True) if any(wrong) else None)
    assert view.facts["mean_logp_tf"] == pytest.approx(float(view.data["gold_logp_tf"].mean()))
    assert view.facts["own"] == lstm.tokenizer.decode(own) and view.facts["real"] == TEXT[prompt:prompt + n]


def test_the_divergence_is_the_kl_of_the_two_runs_by_hand(lstm):
    prompt, n = 20, 25
    ids = lstm.tokenizer.encode(TEXT).ids
    view = views.divergence(lstm, TEXT, prompt=prompt, n=n)
    p = log_softmax(lstm, ids[:prompt + n])[prompt - 1:prompt - 1 + n]
    q = log_softmax(lstm, ids[:prompt] + greedy(lstm, ids[:prompt], n))[prompt - 1:prompt - 1 + n]
    kl = (p.exp() * (p - q)).sum(-1)
    assert view.data["kl"].to_numpy() == pytest.approx(kl.numpy(), rel=1e-3, abs=1e-6)
    assert view.facts["mean_kl"] == pytest.approx(float(kl.mean()), rel=1e-3, abs=1e-6)
    assert set(view.chart.to_dict(validate=False)) >= {"vconcat"}


@pytest.mark.parametrize("temperature, seed", [(0.0, 0), (1.0, 3), (0.7, 11)])
def test_sliced_runs_are_the_runs_of_exactly_that_length(lstm, temperature, seed):
    """Sampled continuations too: the first n tokens of a longer run (one generator, one draw a step) are the
    n-token run that compare_continuation makes on its own."""
    views.gold_logprob(lstm, TEXT, prompt=30, n=100, temperature=temperature, seed=seed)  # the longer run first
    for n in (7, 50):
        view = views.gold_logprob(lstm, TEXT, prompt=30, n=n, temperature=temperature, seed=seed)
        alone = compare_continuation(lstm, TEXT, 30, n, temperature=temperature, seed=seed)
        pd.testing.assert_frame_equal(view.data, alone["table"], rtol=RTOL, atol=ATOL)
        assert view.facts["first_divergence"] == alone["first_divergence"]


def test_a_text_too_short_is_refused(lstm):
    with pytest.raises(ValueError, match="a 10-token prompt and a 10-token continuation need 20"):
        views.gold_logprob(lstm, "To be", prompt=10, n=10)
    with pytest.raises(ValueError, match="at least one token"):
        views.divergence(lstm, TEXT, prompt=0, n=10)


def test_the_cli_figure_is_the_page_s_view(lstm):
    chart, frame, footnote = figures.render("exposure_bias_lm", lstm, TEXT, prompt=12, n=30)
    view = views.gold_logprob(lstm, TEXT, prompt=12, n=30)
    assert frame.equals(view.data) and "prompt: 12" in footnote
    assert chart.to_dict(validate=False) == view.chart.to_dict(validate=False)


@pytest.mark.parametrize("text", ["To be, or not to be, that is the question:\nWhether 'tis nobler in the mind to "
                                  "suffer the slings and arrows", "a" * 50 + " bcd efg hij klm nop qrs tuv wxyz"])
def test_the_default_prompt_ends_at_a_word_boundary(lstm, text):
    """Issue 51: the page opened on the prompt "…that is the questio|n"."""
    prompt, n = views.defaults(lstm, text)
    ids = lstm.tokenizer.encode(text).ids
    shown, after = lstm.tokenizer.decode(ids[:prompt]), lstm.tokenizer.decode(ids[prompt:])
    assert 1 < prompt <= views.PROMPT and prompt + n <= len(ids)
    if text.startswith("To be"):
        assert shown == "To be, or not to be, that is the " and after.startswith("question")
    else:  # a first word longer than the prompt cannot end at a boundary: it is cut at PROMPT, not emptied
        assert prompt == views.PROMPT
    assert not (shown[-1:].isalnum() and after[:1].isalnum()) or prompt == views.PROMPT
