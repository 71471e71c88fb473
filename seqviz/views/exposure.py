"""Views of exposure bias: a model's two runs on one text, teacher-forced and on its own, position by position.

``gold_logprob`` and ``divergence`` are ``fn(model, **choices) -> View`` (``seqviz.views``) for a
character (or word) language model continuing a real text: the Exposure bias (LM) page and
``seqviz figure exposure_bias_lm`` draw them. Both read one position table
(``seqviz.introspect.exposure.position_table``); ``_logprob_view`` and ``_divergence_view`` draw any
such table, so a translator's two runs (``compare_translation``) can become views of the same charts.
"""

from __future__ import annotations

from typing import NotRequired, TypedDict

import pandas as pd

from seqviz.charts import exposure as charts
from seqviz.introspect.language import join_tokens
from seqviz.text import _
from seqviz.views import View, deferred, memo
from seqviz.views.registry import Figure, declare

ex = deferred("seqviz.introspect.exposure")  # torch: imported when a view is computed, not when one is read

PROMPT_MAX = 120  # tokens of prompt at most (the page's slider)
LONGEST = 200  # tokens of continuation at most
PROMPT, N = 40, 60  # the page's defaults (tokens of prompt, of continuation)
READ = PROMPT_MAX + LONGEST  # tokens of the text read once, teacher-forced, for every prompt and length within
READINGS = 3  # how often a comparison reads prompt + continuation: teacher-forced, written token by token, traced


def _check(model, text: str, prompt: int, n: int) -> tuple[int, ...]:
    if model.tokenizer is None:
        raise ValueError("this model has no tokenizer")
    ids = tuple(model.tokenizer.encode(text).ids)
    if prompt < 1 or n < 1:
        raise ValueError("the prompt and the continuation need at least one token each")
    if len(ids) < prompt + n:
        raise ValueError(f"the text has {len(ids)} tokens; a {prompt}-token prompt and a "
                         f"{n}-token continuation need {prompt + n}")
    return ids


def _names(model) -> list[str]:
    return ["logits", f"layers.{model.config.n_layers - 1}.h"]  # what predicted each token, and the state it read


def _teacher_forced(model, ids: tuple[int, ...], upto: int):
    """The trace (logits, last layer's h) of the text's first ``max(READ, upto)`` tokens, once per model.

    A causal model's output at position i reads tokens 0..i only: the teacher-forced run of any prompt and
    continuation within those tokens is a slice of this one trace. A model of real size (``seqviz.budget.whole``)
    reads the ``upto`` tokens asked for only."""
    from seqviz import budget

    read = ids[: max(READ, upto) if budget.whole(model, READ) else upto]
    return memo(model, ("teacher-forced", read), lambda: model.trace([list(read)], names=_names(model)))


def _free_running(model, ids: tuple[int, ...], prompt: int, n: int, temperature: float, seed: int):
    """(tokens, trace) of the model continuing the prompt on its own for as long as the text allows (at least
    ``n`` tokens), once per prompt and sampling setting: ``generate`` draws one token a step from one seeded
    generator, so its first n tokens are the n-token run, and the trace's first positions are that run's. A model
    of real size (``seqviz.budget.whole``) writes the ``n`` tokens asked for only: each costs a step of every
    layer."""
    from seqviz import budget
    from seqviz.models.recurrent import generate

    longest = max(n, min(LONGEST, len(ids) - prompt)) if budget.whole(model, READ) else n

    def run():
        own = generate(model, list(ids[:prompt]), longest, temperature=temperature, seed=seed)
        return own, model.trace([list(ids[:prompt]) + own], names=_names(model))

    return memo(model, ("free-running", ids[:prompt], longest, temperature, seed), run)


class RunsFacts(TypedDict):
    first_divergence: int | None  # the first position where the model's own run emits another token (None: none)
    tokens: int  # tokens of the text read
    prompt_tokens: int  # tokens of prompt
    n: int  # tokens continued
    temperature: float  # the own run's sampling temperature (0: greedy)
    seed: int  # its seed
    prompt: str  # the prompt as text
    real: str  # the real continuation as text
    own: str  # the model's own continuation as text
    note: NotRequired[str]  # a model of real size continues fewer tokens than asked, and this says so


class LogprobNumbers(TypedDict):  # what ``_logprob_view`` adds to a position table's facts
    mean_logp_tf: float  # mean log p(real token), teacher-forced
    mean_logp_fr: float  # ... free-running (after its own tokens)
    wrong_tf: int  # positions whose likeliest token is not the real one, teacher-forced
    wrong_fr: int  # positions whose own token is not the real one, free-running


class DivergenceNumbers(TypedDict):  # what ``_divergence_view`` adds
    mean_kl: float  # mean KL(p_TF ‖ p_FR)
    max_h_dist: float  # the largest ‖h_TF − h_FR‖ of the last layer


class LogprobFacts(RunsFacts, LogprobNumbers):
    pass


class DivergenceFacts(RunsFacts, DivergenceNumbers):
    pass


def runs(model, text: str, prompt: int = 40, n: int = 60, temperature: float = 0.0, seed: int = 0):
    """(position table, facts) of ``text``'s first ``prompt`` tokens continued ``n`` tokens both ways: the
    table of ``introspect.exposure.compare_continuation``, from traces shared by every prompt and length."""
    from seqviz import budget

    prompt, n, temperature, seed = int(prompt), int(n), float(temperature), int(seed)
    asked = n  # a model of real size reads prompt + n tokens three times (read, written, read back): n is cut
    n = min(n, max(1, budget.tokens_for(model, prompt + n, rows=READINGS) - prompt))

    def compute():
        ids = _check(model, text, prompt, n)
        tf = _teacher_forced(model, ids, prompt + n)
        own, fr = _free_running(model, ids, prompt, n, temperature, seed)
        last = _names(model)[1]
        at = slice(prompt - 1, prompt - 1 + n)  # position i predicts token i + 1
        vocab = model.tokenizer.tokens
        names = lambda xs: [vocab[i] for i in xs]  # noqa: E731
        table = ex.position_table(list(ids[prompt:prompt + n]), tf["logits"][0, at], tf[last][0, at], own[:n],
                               fr["logits"][0, at], fr[last][0, at], names, banned=model.tokenizer.special_ids)
        kind = model.tokenizer.kind
        facts = {"first_divergence": ex.first_divergence(table), "tokens": len(ids), "prompt_tokens": prompt, "n": n,
                 "temperature": temperature, "seed": seed, "prompt": join_tokens(names(ids[:prompt]), kind),
                 "real": join_tokens(names(ids[prompt:prompt + n]), kind), "own": join_tokens(names(own[:n]), kind)}
        if n < asked:
            facts["note"] = _("This model is large: each run reads the prompt and its continuation, so {n} of the {a} "
                              "tokens asked for are continued here.").format(n=n, a=asked)
        return table, facts

    return memo(model, ("runs", text, prompt, n, temperature, seed), compute)


def _logprob_view(table: pd.DataFrame, facts: dict) -> View:
    facts = {**facts, "mean_logp_tf": float(table["gold_logp_tf"].mean()),
             "mean_logp_fr": float(table["gold_logp_fr"].mean()), "wrong_tf": int(table["wrong_tf"].sum()),
             "wrong_fr": int(table["wrong_fr"].sum())}
    return View(charts.gold_logprob_chart(table, facts["first_divergence"]), table, facts,
                "log p of the real token per position")


def _divergence_view(table: pd.DataFrame, facts: dict) -> View:
    facts = {**facts, "mean_kl": float(table["kl"].mean()), "max_h_dist": float(table["h_dist"].max())}
    return View(charts.divergence_chart(table), table, facts, "Divergence per position")


def _opening(model, peers=(), folder=None) -> list[dict]:
    """A ``ships`` declaration: what the Exposure bias (LM) page opens on (the first sample text, greedy)."""
    from seqviz.introspect.language import SAMPLE_TEXTS

    text = SAMPLE_TEXTS["hamlet"]
    prompt, n = defaults(model, text)
    return [{"text": text, "prompt": prompt, "n": n, "temperature": 0.0, "seed": 0}]


@declare(facts=LogprobFacts, ships=_opening, figure=Figure("exposure_bias_lm", default_text=None,
                                       options={"prompt": "prompt", "n": "n", "temperature": "temperature", "seed": "seed"}))
def gold_logprob(model, text: str, prompt: int = 40, n: int = 60, temperature: float = 0.0, seed: int = 0) -> View:
    """log p(real next token) at each of ``n`` positions after a ``prompt``-token prompt, after the real prefix
    (teacher-forced) and after the model's own continuation (greedy at temperature 0, else sampled with
    ``seed``); a rule where they first differ. Facts: the first divergence, the mean log p of each run, the
    prompt, the real continuation and the model's own as text."""
    return _logprob_view(*runs(model, text, prompt, n, temperature, seed))


@declare(facts=DivergenceFacts, ships=_opening)
def divergence(model, text: str, prompt: int = 40, n: int = 60, temperature: float = 0.0, seed: int = 0) -> View:
    """KL(p_TF ‖ p_FR) and the last layer's state distance ‖h_TF − h_FR‖ at each position of the two runs."""
    return _divergence_view(*runs(model, text, prompt, n, temperature, seed))


def defaults(model, text: str) -> tuple[int, int]:
    """The prompt and continuation lengths the page opens on for ``text`` (its sliders' ranges): a prompt of at
    most ``PROMPT`` tokens, leaving 6 to continue, ending at a word boundary (cut back to the last whole word: it
    read "…the questio|n"), and a continuation of ``N`` within the text."""
    ids = model.tokenizer.encode(text or "").ids
    prompt = min(PROMPT, PROMPT_MAX, len(ids) - 6)
    pieces = [model.tokenizer.decode([i]) for i in ids[: prompt + 1]]
    k = prompt
    while k > 1 and k < len(pieces) and pieces[k][:1].isalnum() and not pieces[k - 1][-1:].isspace():
        k -= 1  # the next token goes on with the same word
    prompt = k if k > 1 else prompt
    return prompt, min(N, LONGEST, len(ids) - prompt)
