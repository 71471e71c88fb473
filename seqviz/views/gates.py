"""Views of a recurrent LM's gates: the token × unit heat map, the means per token, memory, saturation, units.

Each is ``fn(model, **choices) -> View`` (``seqviz.views``); the Gate activations page, the stations
lesson, ``seqviz figure gates`` and the HTML export draw them. ``ids`` is one text's token ids.
Importing this module costs neither torch nor Altair (the page's constants, its first charts shipped):
the computations and charts are imported by the views that run them.
"""

from __future__ import annotations

from typing import NotRequired, TypedDict

from typing_extensions import TypedDict as OpenTypedDict  # extra_items (PEP 728): a family's own signals

from seqviz.families import of
from seqviz.text import N_, _
from seqviz.views import View, memo, traced
from seqviz.views.registry import Figure, declare

WINDOW = 64  # tokens per heat-map page: moving the position within a page redraws nothing
UNITS_SHOWN = 32  # heat-map rows at first: large enough to read from the back of a room
MOST_UNITS = 96  # the most rows the heat map's count slider offers
SORTS = {"variance": N_("variance"), "value": N_("value"), "index": N_("index")}  # the heat map's unit orders
ORDER, COUNT = "unit_order", "unit_count"  # the heat map's in-browser selections, as a page reads them back
DELTA = 1.0  # the memory tab's bias shift at first
MAX_TOKENS = 1000  # tokens read of a text
DEFAULT_TEXT = "HAMLET.\nTo be, or not to be, that is the question:\nWhether 'tis nobler in the mind to suffer\n" \
               "The slings and arrows of outrageous fortune. [Exit.]\n"
SAMPLE_CHUNKS, SAMPLE_LENGTH = 16, 500  # the corpus sample saturation and the unit ranking read
SIGNAL_LABELS = {"input": N_("input gate i"), "forget": N_("forget gate f"), "cell": N_("candidate g̃"),
                 "output": N_("output gate o"), "c": N_("cell state c"), "h": N_("hidden state h"),
                 "reset": N_("reset gate r"), "update": N_("update gate z"), "new": N_("candidate h̃"),
                 "preact": N_("pre-activation"), "decay": N_("decay exp(Δ·A)"),
                 "output_z": N_("output gate SiLU(z)"), "s": N_("state s")}
FEATURES = {"inside_brackets": N_("inside brackets"), "inside_quotes": N_("inside quotes"),
            "position_in_line": N_("position in the line"), "position_in_word": N_("position in the word"),
            "after_newline": N_("after a line break"), "is_uppercase": N_("capital letter"), "is_vowel": N_("vowel"),
            "is_space": N_("space"), "is_punctuation": N_("punctuation"), "speaker_line": N_("speaker's name line"),
            "any feature": N_("any feature"), "": N_("nothing simple (|r| < 0.3)")}
ANY = "any feature"


def label(signal: str) -> str:
    """A signal's name as people read it ("forget gate f"), in the installed language."""
    return _(SIGNAL_LABELS[signal]) if signal in SIGNAL_LABELS else signal


def feature_label(feature: str) -> str:
    return _(FEATURES[feature]) if feature in FEATURES else feature


def window(position: int, n_tokens: int) -> range:
    """The heat map's page of ``WINDOW`` tokens holding ``position``."""
    lo = max(0, min(position, n_tokens - 1)) // WINDOW * WINDOW
    return range(lo, min(lo + WINDOW, n_tokens))


def _signal(model, signal: str | None) -> str:
    family = of(model)
    signal = signal or family.signals[0]
    if signal not in family.signals:
        raise ValueError(f"a {family.title} shows {', '.join(family.signals)}; got {signal!r}")
    return signal


def _layer(model, layer: int) -> int:
    if not 0 <= int(layer) < model.config.n_layers:
        raise ValueError(f"layer must be 0..{model.config.n_layers - 1}, got {layer}")
    return int(layer)


# ------------------------------------------------------------------ what the pages open on (shipped results)
def _opening_ids(model) -> tuple:
    """The token ids of the text the Gate activations page opens on."""
    from seqviz.introspect.language import prepare

    return tuple(prepare(model.tokenizer, DEFAULT_TEXT, MAX_TOKENS)[0])


def _each_layer(choices):
    """A ``ships`` declaration: ``choices(model, ids, layer) -> [choices]`` at every layer (what the page's Layer
    control switches to), on the page's default text."""
    def ships(model, peers=(), folder=None) -> list[dict]:
        ids = _opening_ids(model)
        return [c for layer in range(model.config.n_layers) for c in choices(model, ids, layer)]
    return ships


def _delta(model) -> float:
    """The memory tab's bias shift at first: none where the retention has no bias of its own (Mamba's decay)."""
    return DELTA if of(model).applies("retention_bias") else 0.0


def _opened_unit(model, ids: tuple, layer: int) -> dict:
    """The memory tab's choices at ``layer``: the unit it opens on (the longest memory, as trained)."""
    unit = memory_spans(model, ids, layer, 0, 0.0).facts["unit"]
    return {"ids": ids, "layer": layer, "position": 0, "unit": unit, "delta": _delta(model)}


# ------------------------------------------------------------------ what each gate did at each token
def sort_named(value) -> str:
    """A unit order from an address: its key, or its label in the installed language (links made by the radio
    the heat map's own control replaced); ValueError for another."""
    found = {**{k: k for k in SORTS}, **{_(v): k for k, v in SORTS.items()}}.get(str(value))
    if found is None:
        raise ValueError(f"no unit order {value!r}")
    return found


def unit_range(width: int) -> tuple[int, int]:
    """The heat map's unit-count slider for a layer of ``width`` units: (least, most)."""
    most = min(MOST_UNITS, width)
    return min(4, most), most


class HeatMapFacts(TypedDict):
    first: int  # the page's first token
    last: int  # ... and its last
    tokens: int  # tokens read
    units: int  # units shown at first
    order: str  # the unit order it opens on (one of SORTS)
    position: int  # the position the page holds
    paged: bool  # the text is longer than one page of WINDOW tokens


@declare(version=3, facts=HeatMapFacts,  # 2: every order's ranks and the in-browser order and count; 3: every token labelled
         ships=_each_layer(lambda model, ids, layer: [
             {"ids": ids, "layer": layer, "signal": of(model).signals[0], "order_by": "variance",
              "units": min(UNITS_SHOWN, model.config.d_hidden), "position": 0}]),
         figure=Figure("gates", text="ids", choice="ids", defaults={"units": 48},
                       options={"layer": "layer", "signal": "signal", "sort": "order_by", "units": "units",
                                "position": "position"}, quotes={"tokens": "{first}–{last} of {tokens}"}))
def heat_map(model, ids: tuple, layer: int = 0, signal: str | None = None, order_by: str = "variance",
             units: int = 32, position: int = 0) -> View:
    """One signal of one layer, token × unit, on the page of ``WINDOW`` tokens holding ``position``. The chart
    holds every unit among the ``MOST_UNITS`` first of each order (by variance, by value at ``position``, by
    index; ranks in ``r_<order>``) and switches the order and the count shown in the browser (``UnitSwitch``),
    opening on ``order_by`` and ``units``: those two controls change only the view."""
    import numpy as np

    from seqviz.charts import gates as charts
    from seqviz.introspect.gates import order_units, row_tokens, unit_matrix

    layer, signal = _layer(model, layer), _signal(model, signal)
    if order_by not in SORTS:
        raise ValueError(f"order_by must be one of {', '.join(SORTS)}, got {order_by!r}")
    trace = traced(model, ids, layer)
    tokens = row_tokens(trace)
    values = unit_matrix(trace, layer, signal)
    width = values.shape[1]
    position = max(0, min(int(position), len(tokens) - 1))
    least, most = unit_range(width)
    units = max(least, min(int(units), most))
    orders = {by: order_units(values, by, position) for by in SORTS}
    steps = window(position, len(tokens))
    frame = charts.heatmap_frame(values, tokens, np.unique(np.concatenate([o[:most] for o in orders.values()])), steps)
    for by, order in orders.items():
        rank = np.empty(width, dtype=np.int32)
        rank[order] = np.arange(width)
        frame[f"r_{by}"] = rank[frame["unit"].to_numpy()]
    switch = charts.UnitSwitch({k: _(v) for k, v in SORTS.items()}, order_by, units, least, most,
                               _("Sort units by"), _("Units shown"), (ORDER, COUNT))
    chart = charts.gate_heatmap(frame, signal, tokens[: steps[-1] + 1], pick="pick", legend=label(signal),
                                title=_("{signal}: token × unit").format(signal=label(signal)), switch=switch)
    return View(chart, frame, {"first": steps[0], "last": steps[-1], "tokens": len(tokens), "units": units,
                               "order": order_by, "position": position, "paged": len(tokens) > WINDOW},
                f"{signal} heatmap")


class GateMeansFacts(OpenTypedDict, extra_items=float):  # and each of the family's signals: its mean there
    position: int  # the position whose means the facts give
    token: str  # the token there


@declare(version=2, facts=GateMeansFacts, ships=_each_layer(lambda model, ids, layer: [{"ids": ids, "layer": layer, "position": 0}]))
def gate_means(model, ids: tuple, layer: int = 0, position: int = 0, mark: bool = False) -> View:
    """Each gate's mean over the units at every token of the heat map's page; facts: the means at ``position``.
    ``mark``: the position marked by a rule, and the retention gate's average over the tokens drawn (fact
    ``<gate>_avg``) dashed."""
    import pandas as pd
    from seqviz.charts import gates as charts
    from seqviz.introspect.gates import gate_means as means_frame
    from seqviz.introspect.gates import row_tokens

    layer = _layer(model, layer)
    trace = traced(model, ids, layer)
    tokens, cell = row_tokens(trace), model.config.cell
    position = max(0, min(int(position), len(tokens) - 1))
    steps = window(position, len(tokens))
    frame = means_frame(trace, cell, layer)
    shown = frame[frame["step"].isin(steps)]
    kept = of(model).retention
    levels = None
    if mark and kept in set(frame["signal"]):
        average = float(shown.loc[shown["signal"] == kept, "mean"].mean())  # over what the chart draws
        levels = pd.DataFrame({"signal": [kept], "mean": [average], "label": [_("average over the chart")]})
    chart = charts.gate_means_chart(shown, tokens[: steps[-1] + 1], {s: label(s) for s in of(model).signals},
                                    position if mark else None, levels)
    at = frame[frame["step"] == position].set_index("signal")["mean"]
    return View(chart, frame, {"position": position, "token": tokens[position],
                               **{str(k): float(v) for k, v in at.items()},
                               **({} if levels is None else {f"{kept}_avg": float(levels["mean"].iloc[0])})},
                "Gate means per token")


# ------------------------------------------------------------------ memory: how long a unit keeps its state
def _shifted_gates(model, ids: tuple, layer: int, delta: float):
    """The retention gate [T, U] of ``layer`` with its bias shifted by ``delta`` (on a copy), kept per model."""
    from seqviz.introspect import memory as mem
    from seqviz.introspect.gates import unit_matrix

    if not delta:  # as trained: a slice of the text's trace
        return unit_matrix(traced(model, ids, layer), layer, of(model).kept_by())
    return memo(model, ("what-if", tuple(ids), layer, float(delta)),
                lambda: mem.what_if_gates(model, list(ids), layer, float(delta)))


class MemorySpansFacts(TypedDict):
    unit: int  # the unit that keeps its memory longest (as trained)
    span: int  # its span: tokens from ``position`` while ∏ of its retention gate > 0.5
    span_shifted: int  # ... with the gate's bias shifted by ``delta``
    rest: int  # tokens from ``position`` to the end (the longest a span can be)
    median: float  # the median unit's span
    median_shifted: float  # ... shifted
    units: int  # units of the layer
    position: int  # where the spans start
    token: str  # the token there
    symbol: str  # the retention gate's symbol (f, z, exp(Δ·A))
    held: str  # what the memory is (c, h, s)
    delta: float  # the bias shift


@declare(needs=("memory",), facts=MemorySpansFacts, ships=_each_layer(lambda model, ids, layer: [
    {"ids": ids, "layer": layer, "position": 0, "delta": d} for d in dict.fromkeys((0.0, _delta(model)))]))
def memory_spans(model, ids: tuple, layer: int = 0, position: int = 0, delta: float = 1.0) -> View:
    """Every unit's memory span from ``position`` (∏ of its retention gate > 0.5), as trained and with the
    gate's bias shifted by ``delta``, longest first; no chart (the memory charts draw one unit)."""
    import numpy as np
    from seqviz.introspect import memory as mem
    from seqviz.introspect.gates import row_tokens

    layer, cell, family = _layer(model, layer), model.config.cell, of(model)
    family.kept_by()  # ValueError with the family's sentence where nothing keeps the state (a plain RNN)
    trace = traced(model, ids, layer)
    tokens = row_tokens(trace)
    position = max(0, min(int(position), len(tokens) - 1))
    table = mem.memory_units(trace, cell, layer, position)
    shifted = mem.spans(_shifted_gates(model, ids, layer, delta), position)
    table = table.assign(span_shifted=shifted[table["unit"].to_numpy()])
    top = table.iloc[0]
    return View(None, table, {"unit": int(top["unit"]), "span": int(top["span"]),
                              "span_shifted": int(top["span_shifted"]), "rest": len(tokens) - position,
                              "median": float(table["span"].median()), "median_shifted": float(np.median(shifted)),
                              "units": len(table), "position": position, "token": tokens[position],
                              "symbol": family.symbol, "held": family.memory, "delta": float(delta)}, "Memory spans")


class MemoryUnitFacts(MemorySpansFacts):  # ``unit`` and its spans are the chosen unit's
    to_end: bool  # its memory lasts to the end of the text
    mean_gate: float  # its retention gate's mean since ``position``
    longer_by: int  # span_shifted − span


def _unit_frame(model, ids: tuple, layer: int, position: int, unit: int | None, delta: float):
    from seqviz.introspect import memory as mem
    from seqviz.introspect.gates import row_tokens, unit_matrix

    spans = memory_spans(model, ids, layer, position, delta)
    unit = spans.facts["unit"] if unit is None else int(unit)
    trace = traced(model, ids, layer)
    runs = (_("as trained"), _("b_{s} {d:+.1f}").format(s=of(model).symbol, d=float(delta)))
    frame = mem.product_frame(unit_matrix(trace, layer, of(model).kept_by()),
                              _shifted_gates(model, ids, layer, delta) if delta else None, unit, row_tokens(trace),
                              spans.facts["position"], labels=runs)
    row = spans.data.set_index("unit").loc[unit]
    facts = {**spans.facts, "unit": unit, "span": int(row["span"]), "span_shifted": int(row["span_shifted"]),
             "to_end": bool(row["to_end"]), "mean_gate": float(row["mean_gate"])}
    facts["longer_by"] = facts["span_shifted"] - facts["span"]
    return frame, facts


@declare(needs=("memory",), facts=MemoryUnitFacts,
         ships=_each_layer(lambda model, ids, layer: [_opened_unit(model, ids, layer)]))
def memory_product(model, ids: tuple, layer: int = 0, position: int = 0, unit: int | None = None,
                   delta: float = 1.0) -> View:
    """∏ of one unit's retention gate since ``position`` (log axis, the 0.5 line), as trained and with its
    bias shifted by ``delta``; ``unit`` None: the unit that keeps its memory longest."""
    from seqviz.charts import gates as charts

    layer = _layer(model, layer)
    frame, facts = _unit_frame(model, ids, layer, position, unit, delta)
    s, start = facts["symbol"], facts["token"].replace("\n", "⏎")
    chart = charts.memory_chart(  # a short title: on a phone a longer one is cut off
        frame, of(model).kept_by(), product_title=_("∏ {s} (log scale)").format(s=s),
        title=_("Unit {u}: ∏ {s} since position {p} («{t}»)").format(u=facts["unit"], s=s, p=facts["position"],
                                                                     t=start), step_title=_("position"))
    return View(chart, frame, facts, f"Memory product unit {facts['unit']}")


@declare(needs=("memory",), facts=MemoryUnitFacts,
         ships=_each_layer(lambda model, ids, layer: [_opened_unit(model, ids, layer)]))
def retention(model, ids: tuple, layer: int = 0, position: int = 0, unit: int | None = None,
              delta: float = 1.0) -> View:
    """One unit's retention gate (f or z) at each token since ``position``, as trained and shifted."""
    from seqviz.charts import gates as charts

    layer = _layer(model, layer)
    frame, facts = _unit_frame(model, ids, layer, position, unit, delta)
    gate = of(model).kept_by()
    chart = charts.retention_chart(frame, gate, title=label(gate), step_title=_("position"),
                                   head=_("Unit {u}: {g} at each token").format(u=facts["unit"], g=label(gate)))
    return View(chart, frame, facts, f"Gate per token unit {facts['unit']}")


# and per model i (model_i, cell_i, unit_i, span_i, to_end_i, mean_gate_i, gate_min_i, gate_min_token_i, gate_max_i,
# gate_max_token_i, rate_ratio_i: see memory_race)
class MemoryRaceFacts(OpenTypedDict, extra_items=str | int | float | bool):
    rest: int  # tokens from ``position`` to the end
    position: int  # where the memories start
    token: str  # the token there


@declare(needs=("memory",), facts=MemoryRaceFacts)
def memory_race(models: list, ids: tuple, layer: int = 0, position: int = 0) -> tuple[View, View]:
    """Each model's longest memory from ``position`` on the same text, on one chart: ∏ f of an LSTM's unit, ∏
    exp(Δ_t·A) of a Mamba channel's slowest state, ∏ z of a GRU's (the product View); and the gate at each
    token (the per-token View). Facts per model i: ``unit_i``, ``span_i`` (tokens with ∏ > 0.5),
    ``to_end_i``, ``gate_min_i`` / ``gate_max_i`` and their tokens, ``rate_ratio_i`` (the fastest forgetting
    step's −log gate over the slowest's: 1 for a gate that is the same at every token)."""
    import numpy as np
    import pandas as pd
    from seqviz.charts import gates as charts

    if len(models) < 2 or any(m.tokenizer is None or m.tokenizer.tokens != models[0].tokenizer.tokens
                              for m in models):
        raise ValueError("comparing memories needs two or more models that read the same vocabulary")
    frames, facts, gates = [], {"rest": 0}, []
    for i, model in enumerate(models):
        frame, f = _unit_frame(model, ids, layer, position, None, 0.0)
        family = of(model)
        cell = family.name
        name = f"{family.title} · {_(family.unit)} {f['unit']}"
        frame = frame[frame["run"] == frame["run"].iloc[0]].assign(run=name)
        g, tokens = frame["gate"].to_numpy(), frame["token"].tolist()
        rate = -np.log(np.clip(g, 1e-300, 1.0))
        lo, hi = int(np.argmin(g)), int(np.argmax(g))
        facts.update({f"model_{i}": name, f"cell_{i}": cell, f"unit_{i}": f["unit"], f"span_{i}": f["span"],
                      f"to_end_{i}": f["to_end"], f"mean_gate_{i}": float(g.mean()), f"gate_min_{i}": float(g[lo]),
                      f"gate_min_token_{i}": tokens[lo], f"gate_max_{i}": float(g[hi]),
                      f"gate_max_token_{i}": tokens[hi],
                      f"rate_ratio_{i}": float(rate.max() / max(float(rate.min()), 1e-12))})
        facts.update(rest=f["rest"], position=f["position"], token=f["token"])
        frames.append(frame.assign(cell=cell))
        gates.append(family.kept_by())
    frame = pd.concat(frames, ignore_index=True)
    start = facts["token"].replace("\n", "⏎")
    # the series are named by model and unit only (short enough for a phone's legend); the axes name the gates
    product = charts.memory_chart(frame, gates[0], product_title=_("memory kept ∏ (log scale)"),
                                  title=_("Memory since «{t}»").format(t=start), step_title=_("position"), gates=gates)
    per_token = charts.forgetting_chart(frame, gates, title=_("forgotten, −log gate (log scale)"),
                                        step_title=_("position"), head=_("What is forgotten"))
    return (View(product, frame, facts, "Memory race: product"), View(per_token, frame, facts, "Memory race: per token"))


class MemoryTableFacts(MemorySpansFacts):
    sample_tokens: int  # tokens of the corpus sample the features were measured on


@declare(needs=("memory",), facts=MemoryTableFacts,
         ships=_each_layer(lambda model, ids, layer: [{"ids": ids, "layer": layer, "position": 0}]))
def memory_table(model, ids: tuple, layer: int = 0, position: int = 0, rows: int = 8) -> View:
    """The ``rows`` units that keep their memory longest and the text feature each one's state tracks."""
    from seqviz.introspect import memory as mem

    spans = memory_spans(model, ids, layer, position, 0.0)
    ranking = unit_ranking(model, layer, of(model).memory)
    top = spans.data.head(rows).merge(mem.tracked_features(ranking.data, spans.data["unit"][:rows]), on="unit")
    return View(None, top, {**spans.facts, "sample_tokens": ranking.facts["sample_tokens"]}, "Longest memories")


def sources(model, ids: tuple, layer: int = 0) -> None:
    """What every position of the page's views slices (memoised): the text's trace, and the memory table's unit
    ranking over the corpus sample (none for a plain RNN: it has no memory tab)."""
    traced(model, ids, layer)
    if of(model).applies("memory"):
        unit_ranking(model, layer, of(model).memory)


# ------------------------------------------------------------------ over a corpus sample
FACET_UNITS = 2048  # layers x units the saturation chart draws at once (a column per layer); beyond, one layer


def sample_texts(model, chunks: int = SAMPLE_CHUNKS, length: int = SAMPLE_LENGTH,
                 rows: int = 1) -> tuple[list[str], str]:
    """``chunks`` pieces of ``length`` characters of held-out text (``reference_texts``), fewer and shorter where the
    model is so large that ``seqviz.budget.tokens_for`` reads fewer tokens (190 of mamba-130m; read ``rows`` times,
    fewer still); and their source."""
    from seqviz import budget
    from seqviz.introspect.projection import reference_texts

    tokens = budget.tokens_for(model, chunks * length, rows)
    n = max(1, min(chunks, tokens // length))
    return reference_texts(n, min(length, tokens // n))


def sample_trace(model, layer: int | None = None):
    """The model's trace of the corpus sample saturation and the unit ranking read (kept per model and sample
    source: the corpus may be fetched after the first run): every name while that is small (``seqviz.budget``),
    else ``layer``'s alone."""
    from seqviz import budget

    texts, source = sample_texts(model)
    if layer is None or budget.whole(model, sum(map(len, texts))):
        return memo(model, ("sample", source), lambda: model.trace(texts))
    names = budget.layer_names(model, layer)
    return memo(model, ("sample", source, int(layer)), lambda: model.trace(texts, names=names))


def one_layer(config, layer: int) -> dict:
    """The saturation view's choices on a page whose Layer control reads ``layer``: none while every layer's units
    fit one chart (``FACET_UNITS``), else that layer."""
    from seqviz.budget import widest

    return {} if config.n_layers * widest(config) <= FACET_UNITS else {"layer": int(layer)}


# The Single units page's saturation thresholds (below, above), by the label its slider shows
SATURATION = {f"{lo:g} / {1 - lo:g}": (lo, round(1 - lo, 2)) for lo in (0.02, 0.05, 0.1, 0.2)}


class SaturationFacts(TypedDict):
    tokens: int  # tokens of the corpus sample
    low: float  # a gate below this is saturated low
    high: float  # ... above this high
    tanh_low: float  # the same thresholds on tanh's range (h)
    tanh_high: float  # ...
    note: NotRequired[str]  # a model of many wide layers: drawn for one layer, and this says so


@declare(facts=SaturationFacts, ships=lambda model, peers=(), folder=None: [{"low": 0.1, "high": 0.9}])  # Single units
def saturation(model, low: float = 0.1, high: float = 0.9, layer: int | None = None) -> View:
    """Karpathy et al. (2015): each unit's fraction of tokens with its gate below ``low`` / above ``high``, every
    layer (a column each), or ``layer``'s alone (``one_layer``: a model of 24 layers; its note says so)."""
    from seqviz.charts import gates as charts
    from seqviz.introspect.gates import saturation_counts, saturation_frame, thresholds
    from seqviz.trace import walk

    cfg = model.config
    layers = range(cfg.n_layers) if layer is None else [_layer(model, layer)]
    texts, _source = sample_texts(model)
    family = of(model)
    names = [f"layers.{i}.{leaf}" for i in layers for leaf in family.leaves if leaf not in family.on_request]
    counts = {}
    for part in walk(model, texts, names=names):  # a layer at a time: nothing but counts is kept
        counts.update(saturation_counts(part, cfg.cell, cfg.n_layers, low, high,
                                        layers=sorted({int(n.split(".")[1]) for n in part if n.startswith("layers.")})))
    frame = saturation_frame(counts)
    chart = charts.saturation_chart(frame, {s: label(s) for s in of(model).signals})
    tanh_low, tanh_high = thresholds("h", low, high)
    note = "" if layer is None else _("This model has {n} layers of {w:,} units: saturation is drawn for layer {i} "
                                      "alone, the one chosen above.").format(n=cfg.n_layers, w=frame["unit"].nunique(),
                                                                            i=layers[0])
    return View(chart, frame, {"tokens": int(frame["tokens"].iloc[0]), "low": low, "high": high,
                               "tanh_low": tanh_low, "tanh_high": tanh_high, **({"note": note} if note else {})},
                "Saturation")


class UnitRankingFacts(TypedDict):
    sample_tokens: int  # tokens of the corpus sample
    features: list[str]  # the text features ranked
    feature: str  # the feature shown (ANY: every one)
    signal: str  # the signal ranked
    shown: int  # bars drawn
    units: int  # width of the signal ranked (a Mamba's inner signals are wider than its hidden state)


@declare(facts=UnitRankingFacts)
def unit_ranking(model, layer: int = 0, signal: str | None = None, feature: str = ANY, top: int = 20) -> View:
    """Every (feature, unit) pair of one signal ranked by |Pearson r| over the corpus sample (``data``), and
    a bar chart of the strongest ``top`` for ``feature`` (None when no feature varies)."""
    import pandas as pd
    from seqviz.charts import gates as charts
    from seqviz.introspect.gates import row_tokens, signal_key
    from seqviz.introspect.units import rank_units, text_features

    layer, signal = _layer(model, layer), _signal(model, signal)

    def rank():
        t = sample_trace(model, layer)
        values = t[signal_key(layer, signal)][t["mask"]].double().numpy()
        # features per text, so a bracket left open at the end of one chunk does not leak into the next
        features = pd.concat([text_features(row_tokens(t, b)) for b in range(len(t["mask"]))], ignore_index=True)
        return rank_units(values, features, top=None), len(values), values.shape[1]

    ranking, n, units = memo(model, ("ranking", layer, signal), rank)
    shown = (ranking if feature == ANY else ranking[ranking["feature"] == feature]).head(top)
    chart = charts.ranking_chart(shown) if len(shown) else None
    return View(chart, ranking, {"sample_tokens": n, "features": sorted(set(ranking["feature"])), "feature": feature,
                                 "signal": signal, "shown": len(shown), "units": units}, "Unit ranking")


class UnitOnTextFacts(TypedDict):
    unit: int  # the unit drawn
    units: int  # units of the layer


@declare(version=2, facts=UnitOnTextFacts)
def unit_on_text(model, ids: tuple, layer: int = 0, signal: str | None = None, unit: int = 0) -> View:
    """The text laid out line by line, each token coloured by one unit's value."""
    import pandas as pd
    from seqviz.charts import gates as charts
    from seqviz.introspect.gates import row_tokens, unit_matrix

    layer, signal = _layer(model, layer), _signal(model, signal)
    trace = traced(model, ids, layer)
    tokens, values = row_tokens(trace), unit_matrix(trace, layer, signal)
    unit = max(0, min(int(unit), values.shape[1] - 1))
    chart = charts.unit_text_chart(tokens, values[:, unit], signal, unit, line_width=30,
                                   title=_("{signal} · unit {unit}").format(signal=label(signal), unit=unit))
    frame = pd.DataFrame({"step": range(len(tokens)), "token": tokens, signal: values[:, unit]})
    return View(chart, frame, {"unit": unit, "units": values.shape[1]}, f"Unit {unit} on the text")
