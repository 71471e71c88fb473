"""Every lesson verdict, at every value of its control, against what its chart draws (issue 50).

For each lesson × step × control option (a slider: its ends, its default and two points between), the step's view
is computed; the facts its predict-first options rest on are recomputed here from the chart's own data rows (the
Vega-Lite datasets the browser draws: not the view's numbers, not its text), and each option's ``when`` must agree.
A view without a check below fails: a new lesson's step says here what its verdict is read from.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache

import numpy as np
import pytest
import torch

import seqviz
from seqviz.introspect.projection import passage_only
from seqviz.lessons import lessons, run_view
from tests.conftest import ROOT

CK = ROOT / "checkpoints"
torch.set_num_threads(1)  # as the app runs (several threads on the loaded test machine run far slower)
FAR, QUARTER = 5, 0.25  # S0's question: "more than a quarter of its gradient from characters more than 5 steps back"
TENTH = 0.1  # S4 clipping's question: "less than a tenth of the largest rise without clipping"
GAP = 10.0  # the bottleneck's questions: "far behind", "grows": more than 10 BLEU points (the notes quote it)


@lru_cache(maxsize=None)
def _model(name: str):
    return seqviz.load(CK / name)


def _card(name: str) -> dict:
    return json.loads((CK / name / "card.json").read_text(encoding="utf-8"))


def values_of(control) -> list:
    """Every option of a menu control; a slider's ends, default and two points between."""
    if control.options:
        return list(control.options)
    lo, hi, step = control.min, control.max, control.step or 1
    picks = {lo, hi, control.default, lo + (hi - lo) // 3 // step * step, lo + 2 * (hi - lo) // 3 // step * step}
    return sorted(v for v in picks if control.valid(v))


def rows(specs: list[dict], *fields: str) -> list[dict]:
    """The rows of the first dataset (of any chart of the step) that has every one of ``fields``."""
    for spec in specs:
        for data in spec.get("datasets", {}).values():
            if data and all(f in data[0] for f in fields):
                return data
    raise AssertionError(f"no dataset with {fields}")


def span(products: list[float]) -> int:
    """How many steps a running product stays above one half (it only falls: gates lie in (0, 1))."""
    return sum(1 for p in products if p > 0.5)


def by(data: list[dict], key: str) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for row in data:
        out.setdefault(row[key], []).append(row)
    return out


# ------------------------------------------------------------------ each view: its verdict from its chart's rows
def connectivity(specs, value, step):
    cells = rows(specs, "col", "row", "step", "value")
    t = max(r["step"] for r in cells)
    rel = np.array([r["value"] for r in sorted(cells, key=lambda r: r["step"])])
    share = rel[: t - FAR].sum() / rel.sum()  # t − k > 5
    marked = {r["step"] for r in rows(specs, "mark") if r["mark"]}
    assert t == value and set(range(t - FAR, t + 1)) == marked, (t, marked)  # the target and the 5 before it
    return {"uses_far": share > QUARTER, "only_near": share <= QUARTER}


def padding(specs, value, step):
    bars = rows(specs, "text", "distance", "pads")
    short = next(r for r in bars if r["pads"] > 0)
    return {"differs": short["distance"] > 1e-6, "same": short["distance"] <= 1e-6}


def scalar_rnn(specs, value, step):
    curves = rows(specs, "t", "∂h_t/∂h_1", "table")
    forward = by(curves, "table")[curves[0]["table"]]  # the forward pass is drawn first, the book's after
    chain = next(r["∂h_t/∂h_1"] for r in forward if r["t"] == 3)
    return {"grows": chain > 1, "shrinks": chain <= 1}


def radius_bench(specs, value, step):
    curves = by(rows(specs, "distance", "mean", "model"), "model")
    trained = {r["distance"]: r["mean"] for r in list(curves.values())[1]}  # the trained RNN's own tanh
    d = step.params["far"]
    return {"explodes": trained[d] > trained[0], "vanishes": trained[d] <= trained[0]}


def clipping(specs, value, step):
    loss = by(rows(specs[:1], "series", "step", "loss"), "series")
    jumps = {name: max(np.diff([r["loss"] for r in sorted(rs, key=lambda r: r["step"])])) for name, rs in loss.items()}
    free, kept = jumps["without clipping"], jumps["with clipping"]
    ringed = {r["series"]: r["step"] for r in rows(specs[:1], "series", "step", "loss", "label")}
    for name, rs in loss.items():  # each run's largest rise is the point ringed
        ordered = sorted(rs, key=lambda r: r["step"])
        assert ordered[int(np.argmax(np.diff([r["loss"] for r in ordered]))) + 1]["step"] == ringed[name]
    return {"tamed": kept < TENTH * free, "not_tamed": kept >= TENTH * free}


def gate_means(specs, value, step):
    lines = rows(specs, "step", "signal", "mean", "shown")
    forget = {r["step"]: r["mean"] for r in lines if r["signal"] == "forget"}
    level = rows(specs, "signal", "mean", "label")[0]["mean"]
    assert level == pytest.approx(np.mean(list(forget.values())))  # the dashed line: its average over the chart
    rule = next(d for d in specs[0]["datasets"].values() if set(d[0]) == {"step", "shown"})
    assert rule == [{"step": value, "shown": lines[[r["step"] for r in lines].index(value)]["shown"]}]
    return {"forget_high": forget[value] > level, "forget_low": forget[value] <= level}


def forget_gain(specs, value, step):
    curves = rows(specs, "k", "path")
    gain = next(k for k in curves[0] if k not in ("k", "path"))
    constant = {r["k"]: r[gain] for r in curves if r["path"] == curves[0]["path"]}
    fk = constant.get(step.params["steps"], 0.0)  # drawn on a log axis: an underflow is not drawn
    return {"lossless": fk > 0.9, "a_third": 0.1 < fk <= 0.9, "nothing": fk <= 0.1}


def memory(specs, value, step):
    runs = by(rows(specs, "run", "step", "product"), "run")
    trained, shifted = (span([r["product"] for r in sorted(rs, key=lambda r: r["step"])]) for rs in runs.values()) \
        if len(runs) == 2 else (span([r["product"] for r in next(iter(runs.values()))]),) * 2
    return {"longer": shifted > trained, "not_longer": shifted <= trained}


def switch_off(specs, value, step):
    cells = sorted(rows(specs, "col", "row", "step", "value", "shown"), key=lambda r: r["step"])
    worst = max((r for r in cells if r["value"] is not None), key=lambda r: r["value"])  # the first: not predicted
    first_line = not any("⏎" in r["shown"] for r in cells[: worst["step"]])
    name_dot = worst["shown"] == "." and first_line
    assert next(r for r in rows(specs, "mark") if r["mark"])["step"] == worst["step"]  # the outlined one
    return {"name_dot": name_dot, "bracket_worst": worst["shown"] == "]",
            "everywhere": not name_dot and worst["shown"] != "]"}


def _family(label: str) -> str:
    return re.match(r"(LSTM|GRU|RNN)\b", label).group(1).lower()


def three_cells(specs, value, step):
    at = {_family(r["model"]): r["mean"] for r in rows(specs, "distance", "mean", "model") if r["distance"] == value}
    best = max(at, key=at.get)
    assert any(r.get("distance") == value and "label" in r for r in rows(specs, "distance", "label"))  # the rule
    return {f"best_{c}": c == best for c in ("rnn", "gru", "lstm")}


def perplexity(specs, value, step):
    bars = rows(specs[:1], "model", "perplexity", "chosen")
    best = _family(min(bars, key=lambda r: r["perplexity"])["model"])
    assert _family(next(r for r in bars if r["chosen"])["model"]) == value.rsplit("-", 1)[-1]
    return {f"best_is_{c}": c == best for c in ("rnn", "gru", "lstm")}


def analogy(specs, value, step):
    bars = rows(specs, "word", "score", "marked")
    expected = [r for r in bars if r["marked"]]
    assert len(expected) == 1 and expected[0]["word"].endswith(step.params["expected"][value])
    return {"hit": expected[0]["rank"] == 1, "miss": expected[0]["rank"] != 1}


def bottleneck(specs, value, step):
    curves = rows(specs, "bucket", "min_len", "bleu", "model")
    buckets = sorted({(r["min_len"], r["bucket"]) for r in curves})
    gap = {b: sum(r["bleu"] * (1 if r["model"].endswith(" with attention") else -1) for r in curves
                  if r["bucket"] == b) for _, b in buckets}
    trend = gap[buckets[-1][1]] - gap[buckets[0][1]]
    return {"worse_long": trend > GAP, "same": trend <= GAP, "far_behind": gap[value] > GAP,
            "close": gap[value] <= GAP}


def alignment(specs, value, step):
    bars = rows(specs, "source_label", "weight", "t")
    level = rows(specs, "weight", "label")[0]["weight"]
    assert {r["target"] for r in bars} == {step.params["word"]} and level == step.params["sharp"]
    top = max(r["weight"] for r in bars)
    return {"sharp": top > level, "flat": top <= level}


def alignment_map(specs, value, step):
    cells = rows(specs, "t", "target", "j", "weight")
    n_src, n_tgt = max(r["j"] for r in cells) + 1, max(r["t"] for r in cells) + 1
    offsets = []
    for t, rs in by(cells, "t").items():
        if re.fullmatch(r"[A-Za-z']+", rs[0]["target"]):  # an English word, not <eos> or punctuation
            j = max(rs, key=lambda r: r["weight"])["j"]
            offsets.append(abs(j / max(n_src - 1, 1) - t / max(n_tgt - 1, 1)))
    return {"crossed": max(offsets) > 0.25, "straight": max(offsets) <= 0.25}


def injection(specs, value, step):
    columns = sorted(rows(specs, "order", "op", "status"), key=lambda r: r["order"])
    forced = next(i for i, r in enumerate(columns) if r["op"] == "forced")
    wrong = [r for r in columns[forced + 1:] if r["op"] != "match"]
    return {"recovered": not wrong, "snowball": bool(wrong)}


def memory_race(specs, value, step):
    runs = [[r["product"] for r in sorted(rs, key=lambda r: r["step"])]
            for rs in by(rows(specs, "run", "step", "product"), "run").values()]
    lstm, mamba = span(runs[0]), span(runs[1])
    return {"lstm_longer": lstm > mamba, "mamba_longer": mamba > lstm, "as_long": lstm == mamba}


def decay_by_token(specs, value, step):
    runs = list(by(rows(specs, "run", "step", "forgotten"), "run").values())
    rate = np.array([r["forgotten"] for r in runs[1]])  # the Mamba's channel: −log exp(Δ_t·A)
    ratio = rate.max() / rate.min()
    return {"selective": ratio >= 2, "fixed": ratio < 2}


def _far(cells: list[dict], t: int) -> float:
    """The share of the memory at step ``t`` written 5 or more steps back ("…" sums every token before the window)."""
    return sum(r["weight"] for r in cells if r["t"] == t and r["j"] <= t - FAR)


def _marked(specs, nth: int = 0) -> list[dict]:
    """The ``nth`` map's marked row (one row per drawn column: the dataset its outline is drawn from)."""
    found = [data for spec in specs for data in spec.get("datasets", {}).values()
             if data and {"t", "j", "weight"} <= set(data[0]) and len({r["t"] for r in data}) == 1]
    return found[nth]


def unit_map(specs, value, step):
    row = _marked(specs)
    assert {r["t"] for r in row} == {value}  # the map marks the step the control chose
    share = _far(row, value)
    return {"mostly_far": share > 0.5, "mostly_recent": share <= 0.5}


def target(specs, value, step):
    from scipy.stats import spearmanr

    bars = [r for r in rows(specs, "j", "weight", "delta_loss") if r["delta_loss"] is not None and r["j"] < value]
    rho = spearmanr([r["weight"] for r in bars], [abs(r["delta_loss"]) for r in bars]).statistic
    return {"ranks": rho >= 0.5, "loosely": 0.2 <= rho < 0.5, "unranked": not rho >= 0.2}


def memory_pair(specs, value, step):
    first, second = _far(_marked(specs, 0), value), _far(_marked(specs, 1), value)
    return {"first_farther": first > second, "second_farther": second >= first}


def word_maps(specs, value, step):
    def spread(cells):  # mean entropy of a word's row as a fraction of ln(its columns), rows of 2 or more
        out = []
        for rs in by(cells, "t").values():
            w = np.array([r["weight"] for r in rs], dtype=float)
            if len(w) > 1 and w.sum() > 0:
                w = w / w.sum()
                out.append(float(-(w[w > 0] * np.log(w[w > 0])).sum() / np.log(len(w))))
        return float(np.mean(out)) if out else 0.0

    maps = [data for spec in specs for data in spec.get("datasets", {}).values()
            if data and {"t", "j", "weight"} <= set(data[0])]
    alignment, memories = spread(maps[0]), [spread(m) for m in maps[1:]]
    return {"alignment_sharper": alignment < min(memories), "memory_sharper": min(memories) <= alignment}


CHECKS = {"gradients.connectivity": connectivity, "padding": padding, "gradients.scalar_rnn": scalar_rnn,
          "gradients.radius_bench": radius_bench, "clipping": clipping, "gate_means": gate_means,
          "gradients.forget_gain": forget_gain, "memory": memory, "switch_off": switch_off,
          "three_cells": three_cells, "perplexity": perplexity, "analogy": analogy, "bottleneck": bottleneck,
          "alignment": alignment, "alignment_map": alignment_map, "injection": injection,
          "memory_race": memory_race, "decay_by_token": decay_by_token, "implicit.unit_map": unit_map,
          "implicit.target": target, "implicit_compare.memory_pair": memory_pair,
          "implicit_compare.word_maps": word_maps}
STEPS = [(lid, i, s) for lid, lesson in lessons().items() for i, s in enumerate(lesson.steps)]


@pytest.mark.parametrize("lid, i, step", STEPS, ids=[f"{lid}-{i + 1}" for lid, i, _s in STEPS])
def test_each_verdict_is_what_its_chart_draws_at_every_control_value(lid, i, step):
    assert step.view in CHECKS, f"{lid} step {i + 1}: say in CHECKS what the verdict of {step.view} is read from"
    with passage_only():
        for value in values_of(step.control):
            view = run_view(step.view, {n: _model(n) for n in step.models}, {n: _card(n) for n in step.cards},
                            value, step.params, step.choice, step.table)
            specs = view.spec() if isinstance(view.spec(), list) else [view.spec()]
            expected = CHECKS[step.view](specs, value, step)
            whens = [when for _text, when in step.options]
            assert set(whens) <= set(expected), (lid, i + 1, set(whens) - set(expected))
            assert {w: view.numbers[w] for w in whens} == {w: expected[w] for w in whens}, (lid, i + 1, value)
            assert sum(expected[w] for w in whens) == 1, (lid, i + 1, value)  # one right answer


def test_the_injection_chart_aligns_the_run_as_word_error_rate_does():
    """Its columns (``exposure.edit_ops``) are a minimal edit alignment: every token of both sides once, in order,
    as many non-matches as the Levenshtein distance; of equal alignments, the substitution comes first (what was
    left out follows the injected word: "bought" for "buy", then "three big apples" skipped)."""
    import random

    from seqviz.introspect.exposure import edit_distance, edit_ops

    rng = random.Random(0)
    for _ in range(500):
        a = [rng.choice("abc") for _ in range(rng.randint(0, 7))]
        b = [rng.choice("abc") for _ in range(rng.randint(0, 7))]
        ops = edit_ops(a, b)
        assert sum(op != "match" for op, _i, _j in ops) == edit_distance(a, b)
        assert [a[i] for _op, i, _j in ops if i is not None] == a and [b[j] for _op, _i, j in ops if j is not None] == b
        assert all((a[i] == b[j]) == (op == "match") for op, i, j in ops if i is not None and j is not None)
    ops = edit_ops("bought in the park".split(), "buy three big apples in the park".split())
    assert [op for op, _i, _j in ops] == ["sub", "skip", "skip", "skip", "match", "match", "match"]
