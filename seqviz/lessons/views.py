"""The live views a lesson step can show: each computes on shipped models and returns a chart and its numbers.

A view is ``fn(models, cards, value, **params) -> View``: ``models`` maps checkpoint names to loaded
models (read-only: edits go to copies), ``cards`` the same names to their card.json, ``value`` the
step's one control, ``params`` the step's fixed settings from the lesson file. ``View.numbers`` is
what the step's "what to notice" templates quote (``{ratio:.2f}``) and what its predict-first
question is checked against (boolean numbers name the options that are right). Charts come from
``seqviz.charts``, through the page views of ``seqviz.views`` where a page draws the same; nothing
here imports Streamlit, and no number is typed in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from seqviz.names import shown_name, shown_name_of
from seqviz.text import _
from seqviz.views import attention as att_views
from seqviz.views import decoding as dec_views
from seqviz.views import gates as gate_views
from seqviz.views import gradients as grad_views
from seqviz.views import interventions as edit_views
from seqviz.views import language as lm_views
from seqviz.views import trajectories as traj_views
from seqviz.views import word2vec as w2v_views


@dataclass
class View:
    """What a step draws: one chart (or a few, one under the other), the numbers its notes quote, and an
    optional table beside it."""

    chart: object  # an Altair chart from seqviz.charts, or a tuple of them
    numbers: dict  # name -> float/int/str/bool, quoted by the step's templates
    table: pd.DataFrame | None = field(default=None)

    def spec(self) -> dict | list[dict]:
        """The Vega-Lite spec the page draws: one dict, or a list of them for several charts."""
        if isinstance(self.chart, tuple):
            return [c.to_dict(validate=False) for c in self.chart]
        return self.chart.to_dict(validate=False)


def _at(dist: pd.DataFrame, d: int) -> float:
    """Mean gradient norm at distance d (the largest distance measured, if d is beyond it)."""
    row = dist[dist["distance"] <= d].iloc[-1]
    return float(row["mean"])


# ------------------------------------------------------------------ recurrent models
def padding(models, cards, value, texts: list, layer: int = 0) -> View:
    """S1: a right-padded batch read with and without the mask; ``value`` cuts the short text (the Hidden-state
    trajectories page's padding study, ``seqviz.views.trajectories.mask_distance``)."""
    model = next(iter(models.values()))
    short = texts[0][: int(value)]
    ids = tuple(tuple(model.tokenizer.encode(t).ids) for t in (texts[1], short))
    shown = traj_views.mask_distance(model, ids, layer)
    f = shown.facts
    return View(shown.chart, {"pads": f["pads"], "length": f["length"], "distance": f["distance"],
                              "cosine": f["cosine"], "loss_masked": f["loss_masked"], "long_text": texts[1],
                              "short_text": short, "loss_all": f["loss_pads_counted"],
                              "differs": f["distance"] > 1e-6, "same": f["distance"] <= 1e-6})


def clipping(models, cards, value, chars: int = 20000, lr: float = 3.0, seed: int = 0) -> View:
    """S4: a small tanh RNN trained twice by SGD (same seed), without and with clipping at c = ``value``: the loss
    and ‖g‖ per step, one above the other.

    The Exploding and vanishing page's "Clipping" tab (``seqviz.views.gradients.clipping_loss``, ``clipping_norms``)
    on the first ``chars`` characters of the held-out plays, ``lr`` large enough that ‖g‖ spikes.
    """
    loss = grad_views.clipping_loss(None, float(value), lr, seed, chars)  # what the question asks about, on top
    shown = grad_views.clipping_norms(None, float(value), lr, seed, chars)
    return View((loss.chart, shown.chart), {k: v for k, v in shown.facts.items() if k not in ("seed", "plays")})


def gate_means(models, cards, value, text: str, layer: int = 0) -> View:
    """S5: the LSTM's mean gates at every character (the Gate activations page's ``seqviz.views.gates.gate_means``),
    the position ``value`` marked, the forget gate's average over the chart dashed: does it keep more here?"""
    model = next(iter(models.values()))
    ids = tuple(model.tokenizer.encode(text).ids)
    shown = gate_views.gate_means(model, ids, layer, int(value), mark=True)
    nums = dict(shown.facts)
    nums["pos"] = nums.pop("position")
    high = nums["forget"] > nums["forget_avg"]
    nums.update(forget_high=high, forget_low=not high)
    return View(shown.chart, nums)


def memory(models, cards, value, text: str, layer: int = 0, start: int = 0) -> View:
    """S6: the trained LSTM's longest-memory unit (∏ f > 0.5 from ``start``) and its span with b_f shifted by ``value``
    (the Gate activations page's ``seqviz.views.gates.memory_product``: the shift goes to a copy)."""
    model = next(iter(models.values()))
    ids = tuple(model.tokenizer.encode(text).ids)
    delta = float(value)
    shown = gate_views.memory_product(model, ids, layer, start, None, delta)
    f = shown.facts
    span, span_new, rest = f["span"], f["span_shifted"], f["rest"]
    return View(shown.chart, {"unit": f["unit"], "layer": layer, "start": f["position"], "token": f["token"],
                              "delta": delta, "span": span, "span_new": span_new, "longer_by": span_new - span,
                              "rest": rest, "units": f["units"], "median": f["median"],
                              "median_new": f["median_shifted"], "mean_f": f["mean_gate"], "to_end": span_new == rest,
                              "longer": span_new > span, "not_longer": span_new <= span})


def switch_off(models, cards, value, text: str, layer: int = 0) -> View:
    """S6: the ``value`` longest-memory units of ``layer`` switched off (c = 0 at every token): Δ surprisal per
    token of the text against as many random units (the Single units page's ``switch_off_text``)."""
    model = next(iter(models.values()))
    ids = tuple(model.tokenizer.encode(text).ids)
    shown = edit_views.switch_off_text(model, ids, layer=layer, pick="top", k=int(value), mark=True)
    f, d = shown.facts, shown.data
    bracket = d[d["token"] == "]"]
    worst = d.loc[d["delta"].idxmax()]
    name_dot = worst["token"] == "." and d.loc[: worst["step"], "token"].isin(["\n"]).sum() == 0  # the first line
    return View(shown.chart, {"k": int(value), "units": f["units"], "layer": layer, "mean": f["mean_delta"],
                              "random": f["mean_delta_random"], "token": f["worst_token"], "step": f["worst_step"],
                              "worst": f["worst_delta"], "worst_random": f["worst_delta_random"],
                              "bracket": float(bracket["delta"].iloc[-1]) if len(bracket) else 0.0,
                              "name_dot": bool(name_dot), "bracket_worst": worst["token"] == "]",
                              "everywhere": not name_dot and worst["token"] != "]"})


def memory_race(models, cards, value, text: str, layer: int = 0) -> View:
    """∏ f of the LSTM's longest-memory unit beside ∏ exp(Δ·A) of the Mamba's longest-memory channel, from
    position ``value`` of the same text (``seqviz.views.gates.memory_race``); the step's models in that order."""
    lstm, mamba = models.values()
    ids = tuple(lstm.tokenizer.encode(text).ids)
    product, _per_token = gate_views.memory_race([lstm, mamba], ids, layer, int(value))
    f = product.facts
    span, other = f["span_0"], f["span_1"]
    return View(product.chart, {"start": f["position"], "token": f["token"], "rest": f["rest"], "layer": layer,
                                "unit": f["unit_0"], "span": span, "mean_f": f["mean_gate_0"],
                                "channel": f["unit_1"], "mamba_span": other, "mean_decay": f["mean_gate_1"],
                                "lstm_to_end": f["to_end_0"], "mamba_to_end": f["to_end_1"],
                                "lstm_longer": span > other, "mamba_longer": other > span, "as_long": span == other,
                                "both_to_end": f["to_end_0"] and f["to_end_1"]})


def decay_by_token(models, cards, value, text: str, layer: int = 0) -> View:
    """The same two memories gate by gate: f_t of the LSTM's unit and exp(Δ_t·A) of the Mamba's channel at each
    token from position ``value``. A fixed A would forget at one rate; Δ_t, computed from the token, moves it."""
    lstm, mamba = models.values()
    ids = tuple(lstm.tokenizer.encode(text).ids)
    _product, per_token = gate_views.memory_race([lstm, mamba], ids, layer, int(value))
    f = per_token.facts
    ratio = f["rate_ratio_1"]
    return View(per_token.chart, {"start": f["position"], "token": f["token"], "unit": f["unit_0"],
                                  "channel": f["unit_1"], "f_min": f["gate_min_0"], "f_min_token": f["gate_min_token_0"],
                                  "f_max": f["gate_max_0"], "decay_min": f["gate_min_1"],
                                  "decay_min_token": f["gate_min_token_1"], "decay_max": f["gate_max_1"],
                                  "decay_max_token": f["gate_max_token_1"], "ratio": ratio,
                                  # 1 − f of a float32 f near 1 (0.9999) holds 3 significant digits: so many shown
                                  "lstm_ratio": float(f"{f['rate_ratio_0']:.3g}"), "selective": ratio >= 2.0,
                                  "fixed": ratio < 2.0})


def three_cells(models, cards, value, text: str, tokens: int = 50) -> View:
    """S7: ‖∂L_t/∂h_k‖ against distance for the RNN, GRU and LSTM, the distance ``value`` the question asks about
    marked (a rule, each curve's mean there as a dot).

    The Gradient flow page's distance curve (``seqviz.views.gradients.distance_curve``)."""
    from seqviz.charts.gradients import mark_distance

    d = int(value)
    names = {name: shown_name_of(name, model) for name, model in models.items()}  # as a class reads them
    shown = grad_views.distance_curve(next(iter(models.values())), text, tokens,
                                      tuple((names[n], m) for n, m in models.items()))
    nums = {"d": d}
    for name, model in models.items():
        nums[model.config.cell] = _at(shown.data[shown.data["model"] == grad_views.cell_label(names[name], model)], d)
    best = max(("rnn", "gru", "lstm"), key=lambda c: nums.get(c, -1.0))
    nums.update({f"best_{c}": c == best for c in ("rnn", "gru", "lstm")})
    chart = mark_distance(shown.chart, shown.data, d, _("t − k = {d}").format(d=d))
    return View(chart, nums)


def perplexity(models, cards, value, text: str) -> View:
    """S7: every model's perplexity on a text (bars, the checkpoint ``value`` outlined: what the question asks
    about), and the per-character surprisal of ``value`` under it, its biggest surprise labelled.

    The Language model page's first view (``seqviz.views.language.surprisal``), for each model."""
    from seqviz.charts import language as lm_charts

    shown = {name: lm_views.surprisal(m, text) for name, m in models.items()}
    names = {name: shown_name_of(name, m) for name, m in models.items()}
    f = shown[value].facts
    best = min(shown, key=lambda n: shown[n].facts["perplexity"])
    nums = {"model": names[value], "ppl": f["perplexity"], "loss": f["mean_loss"], "n": f["scored"],
            "worst": f["worst"], "worst_loss": f["worst_loss"], "best": names[best],
            "best_ppl": shown[best].facts["perplexity"]}
    nums.update({f"best_is_{model.config.cell}": n == best for n, model in models.items()})
    bars = lm_charts.perplexity_bars(pd.DataFrame({"model": [names[n] for n in shown],
                                                   "perplexity": [v.facts["perplexity"] for v in shown.values()]}),
                                     names[value])
    surprise = lm_charts.surprisal_bars(shown[value].data, f["scale"], "nats", label_top=True)
    return View((bars, surprise), nums)


# ------------------------------------------------------------------ word vectors
def analogy(models, cards, value, a: str, b: str, expected: dict, k: int = 10) -> View:
    """S9: a : b :: ``value`` : ? by 3CosAdd over the whole vocabulary; is the expected word first?

    The word2vec page's Analogy lab (``seqviz.views.word2vec.analogy``)."""
    from seqviz.charts.word2vec import topk_chart

    want = expected.get(value)
    shown = w2v_views.analogy(next(iter(models.values())), a, b, value, k=k, expected=want)
    f = shown.facts
    rows = shown.data[["rank", "word", "score"]]
    if want and f["expected_rank"] and want not in set(rows["word"]):  # the word asked about, below the first k
        rows = pd.concat([rows, pd.DataFrame({"rank": [f["expected_rank"]], "word": [want],
                                              "score": [f["expected_score"]]})], ignore_index=True)
    rows = rows.assign(word=[f"{r}. {w}" for r, w in zip(rows["rank"], rows["word"])])
    marked = [w for w in rows["word"] if want and w.endswith(f". {want}")]
    chart = topk_chart(rows, "score", marked, shown.chart.title)
    return View(chart, {"a": a, "b": b, "c": value, "expected": want or "", "top": f["top"],
                              "score": f["score"], "rank": f["expected_rank"] or 0,
                              "expected_score": f["expected_score"] if want else float("nan"),
                              "vocabulary": f["vocabulary"], "hit": f["expected_rank"] == 1,
                              "miss": f["expected_rank"] != 1})


# ------------------------------------------------------------------ seq2seq
GAP = 10.0  # BLEU points: "far behind", and a gap that "grows with length" (the notes quote it)


def bottleneck(models, cards, value, attention: str, plain: str) -> View:
    """The seq2seq bottleneck: BLEU by source length with and without attention (the cards' numbers), the bucket
    ``value`` marked. The trend is read over the whole chart (the gap at the longest bucket against the shortest's),
    the gap at ``value`` where a question names the bucket; both against ``GAP`` points."""
    from seqviz.charts.attention import bleu_vs_length

    names = {n: shown_name(n, cards[n], None) for n in (attention, plain)}
    view = att_views.bottleneck({names[n]: cards[n] for n in (attention, plain)})
    curves = view.data
    order = curves.drop_duplicates("bucket").sort_values("min_len")["bucket"].tolist()
    gaps = {b: float(g.set_index("model")["bleu"].pipe(lambda s: s[names[attention]] - s[names[plain]]))
            for b, g in curves.groupby("bucket")}
    at = curves[curves["bucket"] == value].set_index("model")["bleu"]
    gap, first, last = gaps[value], gaps[order[0]], gaps[order[-1]]
    return View(bleu_vs_length(curves, selected=value),
                {"bucket": value, "with": float(at[names[attention]]), "without": float(at[names[plain]]),
                 "gap": gap, "first": order[0], "gap_first": first, "last": order[-1], "gap_last": last,
                 "threshold": GAP, "worse_long": last - first > GAP, "same": last - first <= GAP,
                 "far_behind": gap > GAP, "close": gap <= GAP,
                 "attention_exact": float(at[names[attention]]) >= 99.5})  # a synthetic corpus, learnt almost exactly


def alignment(models, cards, value, sentence: str, word: str | None = None, sharp: float = 0.5) -> View:
    """Attention: one target word's weights over the source at temperature ``value`` (the bars named by the word),
    the line ``sharp`` the question compares its largest weight with dashed."""
    from seqviz.charts.attention import target_weights_bar

    model = next(iter(models.values()))
    own = att_views.alignment(model, sentence)  # the word is picked at T = 1, for every T
    targets = own.data.drop_duplicates("t")["target"].tolist()
    t = targets.index(word) if word in targets else own.facts["target"]
    bar = att_views.target_weights(model, sentence, float(value), target=t)
    f = bar.facts
    chart = target_weights_bar(bar.data, t, _("α of “{word}” over the source").format(word=targets[t]),
                               (float(sharp), _("{share:g} of its attention").format(share=float(sharp))))
    return View(chart, {"temperature": float(value), "word": targets[t], "source": f["source"], "j": f["j"],
                        "max": f["max_weight"], "entropy": f["entropy"], "uniform": math.log(f["n_source"]),
                        "n": f["n_source"], "translation": own.facts["translation"], "level": float(sharp),
                        "sharp": f["max_weight"] > sharp, "flat": f["max_weight"] <= sharp})


CROSSED = 0.25  # a word's strongest source lies "far from its own position": a quarter of the sentence off the diagonal


def alignment_map(models, cards, value) -> View:
    """Attention: the whole alignment of sentence ``value``, read over every English word (not <eos>, not
    punctuation): crossed when some word's strongest source lies more than ``CROSSED`` of the sentence off the
    diagonal. The example named and outlined: the content word farthest off it where one crosses, else the word
    farthest off (positions counted from 1, as the note reads them: "the 2nd of 7")."""
    from seqviz.charts.attention import alignment_heatmap
    from seqviz.introspect.attention import target_stats

    model = next(iter(models.values()))
    view = att_views.alignment(model, value)
    frame = view.data
    stats = target_stats(frame)
    n_src, n_tgt = int(frame["j"].max()) + 1, int(frame["t"].max()) + 1
    words = stats[stats["word"]]
    off = (words["j"] / max(n_src - 1, 1) - words["t"] / max(n_tgt - 1, 1)).abs()
    crossed = float(off.max()) > CROSSED
    content = off[words["content"] & (off > CROSSED)]  # the example named: a content word where one crosses
    best = words.loc[content.idxmax() if len(content) else off.idxmax()]
    return View(alignment_heatmap(frame, selected=int(best["t"])),
                {"translation": view.facts["translation"], "word": str(best["target"]), "t": int(best["t"]) + 1,
                 "source": str(best["source"]), "j": int(best["j"]) + 1, "weight": float(best["max_weight"]),
                 "n_src": n_src, "n_tgt": n_tgt, "offset": float(off[best.name]), "crossed": crossed,
                 "straight": not crossed})


def injection(models, cards, value, source: str, reference: str) -> View:
    """Teacher forcing vs free running: force the gold prefix, inject the model's second choice at ``value``."""
    model = next(iter(models.values()))
    gold = reference.split()
    k = int(min(max(int(value), 0), len(gold) - 1))
    view = dec_views.injection(model, source, " ".join(gold), k)
    f = view.facts
    recovered = f["errors_after"] == 0  # only the injected word differs: the rest is the reference's, aligned
    return View(view.chart, {"k": k, "injected": f["injected"], "gold": gold[k], "errors": f["errors_after"],
                             "edit": f["edit_distance"], "output": f["output"], "recovered": recovered,
                             "snowball": not recovered})


VIEWS = {f.__name__: f for f in (padding, clipping, gate_means, memory, switch_off, three_cells, perplexity, analogy,
                                  bottleneck, alignment, alignment_map, injection, memory_race, decay_by_token)}


def declared_view(name: str, models: dict, value, params: dict, choice: str, table: bool = False) -> View:
    """A declared view (``seqviz.views.registry``, by name) on the step's first model, its ``choice`` at the
    control's ``value``, a ``text`` param as token ids where the view reads ``ids``, the step's other models as its
    ``models`` ((name, model) pairs) where it compares; numbers: its own facts."""
    from seqviz.views.registry import named

    d = named(name)
    model = next(iter(models.values()), None)
    choices = dict(params)
    if "text" in choices and "text" not in d.choices and "ids" in d.choices:
        choices["ids"] = tuple(model.tokenizer.encode(choices.pop("text")).ids)
    if "models" in d.choices:  # a comparison: the step's other models, by name, as a page passes compared ones
        choices["models"] = tuple(models.items())[1:]
    shown = d.fn(model, **choices, **{choice: value})
    return View(shown.chart, dict(shown.facts), shown.data if table else None)


def run_view(name: str, models: dict, cards: dict, value, params: dict, choice: str = "", table: bool = False) -> View:
    """The step's view ``name`` at control ``value``: a declared view (its ``choice`` set to ``value``), else a
    lesson adapter of ``VIEWS``; ValueError for an unknown view."""
    if name not in VIEWS:
        view = declared_view(name, models, value, params, choice, table)
    else:
        view = VIEWS[name](models, cards, value, **params)
    view.numbers = {k: _plain(v) for k, v in view.numbers.items()}
    return view


def _plain(v):
    """numpy scalars as Python ones, so templates format them and tests compare them."""
    if isinstance(v, np.bool_):
        return bool(v)
    if isinstance(v, np.generic):
        return v.item()
    return v
