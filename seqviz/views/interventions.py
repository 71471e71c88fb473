"""Views of what a unit does, shown by changing it: switch units off, or patch their state from another text.

Each is ``fn(model, **choices) -> View`` (``seqviz.views``). The units are one, the memory tab's top k
(``seqviz.views.gates.memory_spans`` from the span's start) or k random ones; every effect is drawn beside
the same edit of k random units (``DRAWS`` seeded sets, none of the chosen), so it is read against chance;
the chosen units and the draws run as one batch from the unedited trace (``seqviz.models.edit_batch``).
The edited runs are exact (``seqviz.models.edits``): everything after the edit, in time and depth, is
recomputed. The state edited is the one the retention gate keeps (c for an LSTM, h otherwise) unless
``state`` says h.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NotRequired, TypedDict

from seqviz.text import N_, _
from seqviz.views import View, memo, traced
from seqviz.views.registry import declare
from seqviz.families import of
from seqviz.views.gates import _layer

PICKS = {"most": N_("those whose removal hurts most here (top k)"), "top": N_("the longest memories (top k)"),
         "one": N_("one unit"), "random": N_("k random units")}
OPENING_K = 8  # units the page switches off at first: one unit of 256 moves a text by ~0.03 nats, 8 by ~0.2
MOST_UNITS = 1024  # the widest state whose units are each switched off alone to rank them ("most")
HOW = {"zero": N_("set to 0"), "mean": N_("set to its mean over held-out text")}
DRAWS = 5  # random sets of k units: the control
MIN_CLASS = 20  # predictions of a kind of character before the facts may call it the most affected
LOSS = ("tokens", "mask", "loss", "loss_mask")  # what an edited run is asked for (no gates: fast)
PATCH_TARGET = "HAMLET.\nFarewell. Exit Ghost"  # the same words outside a stage direction's bracket ...
PATCH_SOURCE = "HAMLET.\nFarewell. [Exit Ghost"  # ... and inside one: does the open bracket's state carry?
# The held-out sample the switch-off is measured on: smaller than the one the memory tab ranks units on (16 x 500),
# since each change of a widget reruns it six times step by step (the units and five random draws); the captions
# quote its number of predictions.
SAMPLE_CHUNKS, SAMPLE_LENGTH = 8, 250
CLASS_LABELS = {"closing quote": N_("closing quote"), "closing bracket": N_("closing bracket"),
                "line break": N_("line break"), "space": N_("space"), "capital letter": N_("capital letter"),
                "letter": N_("letter"), "digit": N_("digit"), "punctuation": N_("punctuation")}


def class_label(name: str) -> str:
    return _(CLASS_LABELS[name]) if name in CLASS_LABELS else name


def no_memory_to_switch_off(config) -> str | None:
    """Why a family's longest memories cannot be switched off (a sentence, translated), or None: a plain RNN
    keeps no gated memory to rank."""
    return of(config).why_not("memory")


# Why these units, as a caption says it (``which_units``)
PICKED = {"most": N_("whose removal alone hurts this text most"), "top": N_("whose memory lasts longest here"),
          "one": "", "random": N_("drawn at random")}


def which_units(facts: Mapping) -> str:
    """The units an edit took, as a sentence begins: "Unit 51 of the cell state c in layer 0, whose removal alone
    hurts this text most" (``facts``: ``switch_off_text``'s or ``patch_next``'s)."""
    from seqviz.views.gates import label

    _prefix, layer, state = facts["name"].split(".")
    shown = (_("Unit {units} of the {state} in layer {layer}") if int(facts["n_units"]) == 1 else
             _("Units {units} of the {state} in layer {layer}")).format(units=facts["units"], state=label(state),
                                                                      layer=layer)
    why = PICKED.get(facts.get("pick"), "")
    return _("{units}, {why}").format(units=shown, why=_(why)) if why else shown


def text_caption(facts: Mapping) -> str:
    """The sentence under ``switch_off_text``'s chart on the Switch units off page, from its facts."""
    return _("{which}, {how} over tokens {start}–{stop}: mean Δ surprisal {d:+.3f} nats per token from the span's "
             "start, against {r:+.3f} for {random} (the mean of {draws} draws). Hit hardest: «{tok}» at position "
             "{step}, {wd:+.2f} nats ({wr:+.2f} for the random units). Red: harder than as trained; blue: easier; "
             "the first character, which nothing predicts, is left white.").format(
        which=which_units(facts), how=_(HOW[facts["how"]]), start=facts["start"], stop=facts["stop"],
        d=facts["mean_delta"], r=facts["mean_delta_random"], random=random_units(facts["n_units"]),
        draws=facts["draws"], tok=facts["worst_token"].replace("\n", "⏎"), step=facts["worst_step"],
        wd=facts["worst_delta"], wr=facts["worst_delta_random"])


def switch_off_caption(facts: Mapping) -> str:
    """The sentence under ``switch_off_text``'s chart, from its facts: which units, the mean Δ surprisal against
    as many random units, the token hit hardest."""
    return _("{which}, set to 0 at every token: mean Δ surprisal {d:+.3f} nats per token, against {r:+.3f} for "
             "{random}. Hit hardest: «{tok}» at position {step}, {wd:+.2f} nats. The Single units page switches any "
             "unit off, over held-out text too.").format(which=which_units(facts), d=facts["mean_delta"],
                                                          r=facts["mean_delta_random"],
                                                          random=random_units(facts["n_units"]),
                                                          tok=facts["worst_token"].replace("\n", "⏎"),
                                                          step=facts["worst_step"], wd=facts["worst_delta"])


def random_units(k: int) -> str:
    """“1 random unit” or “{k} random units” in the session's language: the control's name in legends and captions."""
    return _("1 random unit") if int(k) == 1 else _("{k} random units").format(k=int(k))


def state_name(model, layer: int, state: str | None) -> str:
    """The trace name of the state edited: ``held`` (c for an LSTM, a Mamba channel's slowest state s, h
    otherwise) unless ``state`` is given."""
    family = of(model)
    state = state or family.memory
    if state not in family.edit_states:
        raise ValueError(f"a {family.title} layer's edits here take {' or '.join(family.edit_states)}; got {state!r}")
    return f"layers.{_layer(model, layer)}.{state}"


def state_width(model, name: str) -> int:
    """Units of the state ``name``: a Mamba's s has one per channel, every other state one per hidden unit."""
    return of(model).state_width(model.config, name.rsplit(".", 1)[-1])


def units_of(model, layer: int = 0, state: str | None = None) -> int:
    """Units of the state an edit of ``layer`` targets (``state_name``): what a page's unit and k widgets range over."""
    return state_width(model, state_name(model, layer, state))


def harm_ranking(model, ids: tuple, name: str):
    """Every unit of the state ``name`` set to 0 alone over the whole text, one batch of edited runs (``_runs``):
    unit and mean Δ surprisal (nats per prediction), the most harmful first. What "most" picks from."""
    import pandas as pd
    from seqviz.introspect.interventions import deltas

    width = state_width(model, name)
    if width > MOST_UNITS:
        raise ValueError(f"{name} has {width} units, too many to switch off one by one here (at most {MOST_UNITS}): "
                         "choose the longest memories, one unit or random units")
    ids = _ids(model, ids)
    plain = traced(model, ids)
    runs = _runs(model, ids, name, [(u,) for u in range(width)], (0, len(ids)), "zero")
    frame = pd.DataFrame({"unit": range(width), "mean_delta": [float(deltas(plain, r).mean()) for r in runs]})
    return frame.sort_values(["mean_delta", "unit"], ascending=[False, True], kind="stable").reset_index(drop=True)


def chosen_units(model, ids: tuple, layer: int, pick: str, unit: int, k: int, seed: int, position: int = 0,
                 width: int | None = None, name: str | None = None) -> list:
    """The units to edit (of ``width``, the hidden size unless given): ``unit``; the ``k`` whose removal alone
    raises the text's surprisal most (``harm_ranking`` of the state ``name``); the ``k`` that keep their memory
    longest from ``position``; or ``k`` random ones (seeded)."""
    from seqviz.introspect.interventions import random_units
    from seqviz.views.gates import memory_spans

    width = model.config.d_hidden if width is None else int(width)
    if pick == "one":
        if not 0 <= int(unit) < width:
            raise ValueError(f"unit must be 0..{width - 1}, got {unit}")
        return [int(unit)]
    if not 1 <= int(k) <= width // 2:
        raise ValueError(f"k must be 1..{width // 2} (the random control draws k of the other units), got {k}")
    if pick == "most":
        return sorted(int(u) for u in harm_ranking(model, ids, name or state_name(model, layer, None))["unit"][:int(k)])
    if pick == "top":
        family = of(model)
        if not family.applies("memory"):
            raise ValueError(f"{family.why_not('memory')} Choose one unit or random units.")
        if width != family.state_width(model.config, family.memory):  # a Mamba's h is not its channels
            raise ValueError(f"a {family.title}'s longest memories are {_(family.unit)}s of its state {family.memory}: "
                             f"edit {family.memory}, or choose one unit or random units")
        return sorted(int(u) for u in memory_spans(model, ids, layer, position, 0.0).data["unit"][: int(k)])
    if pick == "random":
        return random_units(width, int(k), int(seed) + 1000)[0]
    raise ValueError(f"units are picked by {', '.join(PICKS)}; got {pick!r}")


def _span(span, n: int) -> tuple[int, int]:
    start, stop = (0, n) if span is None else (int(span[0]), int(span[1]))
    start, stop = max(0, start), min(n, stop)
    if stop <= start:
        raise ValueError(f"choose a span of at least one token within the text's {n} tokens")
    return start, stop


def _ids(model, ids: tuple, what: str = "the text") -> tuple:
    if len(ids) < 2:
        raise ValueError(f"{what} needs at least two tokens: one to read and one to predict")
    return tuple(int(i) for i in ids)


def _runs(model, target, name: str, unit_sets: list, span, how: str) -> list:
    """The loss of ``target`` (a text's ids, or "sample": the held-out sample) with each of ``unit_sets`` of
    ``name`` switched off over ``span``: one batch of edited runs from the unedited trace (``edited_traces``),
    a text's kept per model (the sample's deltas are kept instead, ``_sample_deltas``)."""
    from seqviz.models.edit_batch import edited_traces
    from seqviz.models.edits import ablate, unit_means

    if how not in HOW:
        raise ValueError(f"a unit is switched off by {', '.join(HOW)}; got {how!r}")

    layer = int(name.split(".")[1])

    def run():
        plain = sample_trace(model, layer) if target == "sample" else traced(model, target, layer, head=True)
        means = unit_means(sample_trace(model, layer), name) if how == "mean" else None
        return edited_traces(model, plain, [[ablate(name, list(u), span, means)] for u in unit_sets], LOSS)

    if target == "sample":
        return run()
    return memo(model, ("switch-off", target, name, tuple(map(tuple, unit_sets)), span, how), run)


def _sample_source() -> str:
    from seqviz.introspect.projection import reference_source

    return reference_source()


def sample_trace(model, layer: int | None = None):
    """The unedited trace of the held-out sample the switch-off views measure (kept per model and sample source: the
    corpus may be fetched after the first run): every name, or ``layer``'s and the head's where that is too large
    (``seqviz.views.gates.sample_texts``: the sample itself sized to the model)."""
    from seqviz import budget
    from seqviz.views.gates import sample_texts

    texts, source = sample_texts(model, SAMPLE_CHUNKS, SAMPLE_LENGTH, rows=1 + DRAWS)  # each read 1 + DRAWS times
    if layer is None or budget.whole(model, sum(map(len, texts))):
        return memo(model, ("edit-sample", source), lambda: model.trace(texts))
    names = budget.layer_names(model, layer, head=True)
    return memo(model, ("edit-sample", source, int(layer)), lambda: model.trace(texts, names=names))


def _setup(model, ids, layer, state, pick, unit, k, seed, span):
    from seqviz.introspect.interventions import random_units

    name = state_name(model, layer, state)
    width = state_width(model, name)
    units = chosen_units(model, ids, layer, pick, unit, k, seed, span[0], width, name)
    controls = random_units(width, len(units), int(seed), exclude=units, draws=DRAWS)
    return name, tuple(units), [tuple(c) for c in controls]


class EditFacts(TypedDict):
    name: str  # the trace name of the state edited (``layers.0.c``)
    units: str  # the units edited, "3, 17"
    n_units: int  # how many
    pick: str  # how they were chosen (one of PICKS)
    how: str  # the edit (one of HOW, or "patch")
    start: int  # the first position edited
    stop: int  # the position after the last
    draws: int  # random unit sets beside them
    unit: int  # the first unit edited
    note: NotRequired[str]  # a model of real size reads fewer tokens, and this says so


def _facts(model, name, units, pick, how, span, controls) -> EditFacts:
    return {"name": name, "units": ", ".join(map(str, units)), "n_units": len(units), "pick": pick, "how": how,
            "start": span[0], "stop": span[1], "draws": len(controls), "unit": units[0]}


# ------------------------------------------------------------------ switch units off
def _opening(model, peers=(), folder=None) -> list[dict]:
    """A ``ships`` declaration: what the Switch units off page opens on (layer 0, the first state, the first kind
    of edit, over the whole default text)."""
    from seqviz.introspect.language import prepare
    from seqviz.views.gates import DEFAULT_TEXT, MAX_TOKENS

    family = of(model)
    ids = tuple(prepare(model.tokenizer, DEFAULT_TEXT, MAX_TOKENS)[0])
    state = family.edit_states[0] if len(family.edit_states) > 1 else None
    pick = "most" if units_of(model, 0, state) <= MOST_UNITS else "top" if family.ranks(state) else "one"
    k = min(OPENING_K, max(1, units_of(model, 0, state) // 2)) if pick != "one" else 1
    return [{"ids": ids, "layer": 0, "state": state, "pick": pick, "unit": 0, "k": k, "seed": 0, "how": "zero",
             "span": (0, len(ids))}]


class SwitchOffTextFacts(EditFacts):
    tokens: int  # predictions of the text
    mean_delta: float  # mean Δ surprisal from the span's start, nats
    mean_delta_random: float  # ... of the random units
    worst_token: str  # the token whose surprisal rose most
    worst_step: int  # its position
    worst_delta: float  # its Δ
    worst_delta_random: float  # ... with the random units off


@declare(version=2, facts=SwitchOffTextFacts, ships=_opening)
def switch_off_text(model, ids: tuple, layer: int = 0, state: str | None = None, pick: str = "most", unit: int = 0,
                    k: int = 1, span: tuple | None = None, how: str = "zero", seed: int = 0,
                    mark: bool = False) -> View:
    """Δ surprisal of every token of the text when the chosen units are switched off over ``span``, the
    text coloured by it (red: harder); data and facts beside the same for k random units. ``mark``: the token hit
    hardest outlined."""
    import pandas as pd
    from seqviz.charts.gates import unit_text_chart
    from seqviz.introspect.gates import row_tokens
    from seqviz.introspect.interventions import delta_frame, deltas

    from seqviz import budget

    ids = _ids(model, ids)
    read = budget.tokens_for(model, len(ids), rows=1 + DRAWS)  # a model of real size: the text's first tokens
    ids, cut = ids[:read], len(ids) - read
    span = _span(span, len(ids))
    name, units, controls = _setup(model, ids, layer, state, pick, unit, k, seed, span)
    plain = traced(model, ids, layer, head=True)
    tokens = row_tokens(plain)
    edited, *others = _runs(model, ids, name, [units, *controls], span, how)
    frame = delta_frame(plain, edited, tokens)
    control = pd.DataFrame({i: deltas(plain, run) for i, run in enumerate(others)})
    frame["delta_random"] = control.mean(axis=1)
    after = frame[frame["step"] >= span[0]]  # nothing before the span can change
    worst = after.loc[after["delta"].idxmax()]
    reach = max(0.5, float(frame[["delta", "delta_random"]].abs().max().max()))
    marks = {frame.index.get_loc(worst.name) + 1: _("hit hardest")} if mark else None  # cell 0: the first token
    chart = unit_text_chart(tokens[:len(frame) + 1], frame["delta"], _("Δ surprisal (nats)"), None, line_width=30,
                            domain=(-reach, reach), marks=marks)  # the first token read, uncoloured: nothing predicts it
    facts = {**_facts(model, name, units, pick, how, span, controls), "tokens": len(frame),
             "mean_delta": float(after["delta"].mean()), "mean_delta_random": float(after["delta_random"].mean()),
             "worst_token": str(worst["token"]), "worst_step": int(worst["step"]) + 1,
             "worst_delta": float(worst["delta"]), "worst_delta_random": float(worst["delta_random"])}
    if cut:
        facts["note"] = _("This model is large: the text is read {runs} times here (the units switched off, and "
                          "{d} random draws), so its first {n:,} tokens are read ({cut:,} cut).").format(
            runs=1 + DRAWS, d=DRAWS, n=len(ids), cut=cut)
    return View(chart, frame, facts, "Switched off: Δ surprisal per token")


def _sample_deltas(model, name: str, units: tuple, how: str, controls: list):
    """(frame, control): the held-out sample's Δ per prediction with the units off at every step, and the
    Δ of each random set (one column per set); kept per model, for the two views that read them."""
    import pandas as pd
    from seqviz.introspect.interventions import deltas, sample_frame

    def compute():
        plain = sample_trace(model, int(name.split(".")[1]))
        edited, *others = _runs(model, "sample", name, [units, *controls], None, how)
        return sample_frame(plain, edited), pd.DataFrame({i: deltas(plain, run) for i, run in enumerate(others)})

    source = _sample_source()  # the sample changes when the corpus is fetched
    return memo(model, ("sample-deltas", source, name, units, tuple(controls), how), compute)


class SwitchOffTokensFacts(EditFacts):
    sample_tokens: int  # predictions of the held-out sample
    mean_delta: float  # mean Δ surprisal over them, nats
    mean_delta_random: float  # ... of the random units
    worst_token: str  # the character hurt most ("" when none)
    worst_delta: float  # its mean Δ
    worst_delta_random: float  # ... with the random units off
    worst_n: int  # its predictions in the sample


@declare(facts=SwitchOffTokensFacts)
def switch_off_tokens(model, ids: tuple, layer: int = 0, state: str | None = None, pick: str = "top",
                      unit: int = 0, k: int = 1, how: str = "zero", seed: int = 0, rows: int = 12) -> View:
    """The characters the chosen units' switch-off hurt most over the held-out sample (the units off at
    every step), each beside the mean Δ of k random units on the same predictions."""
    from seqviz.charts.interventions import long_pairs, paired_bars
    from seqviz.introspect.interventions import by_token

    ids = _ids(model, ids)
    name, units, controls = _setup(model, ids, layer, state, pick, unit, k, seed, (0, len(ids)))
    frame, control = _sample_deltas(model, name, units, how, controls)
    table = by_token(frame, control)
    shown = table.head(int(rows))
    chosen, chance = _("units {u}").format(u=", ".join(map(str, units))), random_units(len(units))
    chart = paired_bars(long_pairs(shown, "token", {"delta": chosen, "delta_random": chance}),
                        title=_("The characters it hurt most (held-out text)"), label_title=_("next character"))
    top = table.iloc[0] if len(table) else None
    facts = {**_facts(model, name, units, pick, how, (0, len(ids)), controls), "sample_tokens": len(frame),
             "mean_delta": float(frame["delta"].mean()), "mean_delta_random": float(control.to_numpy().mean()),
             "worst_token": "" if top is None else str(top["token"]),
             "worst_delta": 0.0 if top is None else float(top["delta"]),
             "worst_delta_random": 0.0 if top is None else float(top["delta_random"]),
             "worst_n": 0 if top is None else int(top["n"])}
    return View(chart, table, facts, "Switched off: characters hurt most")


SwitchOffClassesFacts = TypedDict("SwitchOffClassesFacts", {  # "class" is a keyword: the functional form
    **EditFacts.__annotations__,
    "sample_tokens": int,  # predictions of the held-out sample
    "class": str,  # the kind of character hurt most (of those predicted at least MIN_CLASS times)
    "class_label": str,  # its name in the installed language
    "class_n": int,  # its predictions
    "class_delta": float,  # its mean Δ surprisal
    "class_delta_random": float,  # ... with the random units off
    "class_random_high": float,  # the highest random set's mean Δ there
    "quotes": int,  # closing quotes predicted
    "quote_delta": float | None,  # their mean Δ (None: none)
    "quote_delta_random": float | None,  # ... with the random units off
})


@declare(facts=SwitchOffClassesFacts)
def switch_off_classes(model, ids: tuple, layer: int = 0, state: str | None = None, pick: str = "top",
                       unit: int = 0, k: int = 1, how: str = "zero", seed: int = 0) -> View:
    """Mean Δ surprisal per class of the predicted character (closing quotes, line breaks, spaces ...) over
    the held-out sample, the chosen units against k random ones; facts: the most affected class (of those
    predicted at least ``MIN_CLASS`` times) and the closing quotes."""
    from seqviz.charts.interventions import long_pairs, paired_bars
    from seqviz.introspect.interventions import by_class

    ids = _ids(model, ids)
    name, units, controls = _setup(model, ids, layer, state, pick, unit, k, seed, (0, len(ids)))
    frame, control = _sample_deltas(model, name, units, how, controls)
    table = by_class(frame, control)
    chosen, chance = _("units {u}").format(u=", ".join(map(str, units))), random_units(len(units))
    shown = table.assign(label=table["class"].map(class_label))
    chart = paired_bars(long_pairs(shown, "label", {"delta": chosen, "delta_random": chance}),
                        title=_("Mean Δ surprisal by the kind of character predicted"), label_title=_("next character"),
                        tokens=False)  # "closing bracket", a name: its space is a space
    counted = table[table["n"] >= MIN_CLASS]  # a class seen a handful of times says little
    most = (counted if len(counted) else table).sort_values("delta", ascending=False, kind="stable").iloc[0]
    quote = table.set_index("class").loc["closing quote"] if "closing quote" in set(table["class"]) else None
    facts = {**_facts(model, name, units, pick, how, (0, len(ids)), controls), "sample_tokens": len(frame),
             "class": str(most["class"]), "class_label": class_label(str(most["class"])), "class_n": int(most["n"]),
             "class_delta": float(most["delta"]), "class_delta_random": float(most["delta_random"]),
             "class_random_high": float(most["random_high"]), "quotes": 0 if quote is None else int(quote["n"]),
             "quote_delta": None if quote is None else float(quote["delta"]),
             "quote_delta_random": None if quote is None else float(quote["delta_random"])}
    return View(chart, table, facts, "Switched off: by kind of character")


# ------------------------------------------------------------------ patch a state from another text
class PatchNextFacts(EditFacts):
    position: int  # the first token read with the carried-in state
    source_position: int  # the other text's position the state comes from
    token: str  # the token at ``position``
    kl: float  # KL(after ‖ before) of the next-token distribution
    kl_random: float  # ... for the random units' patch
    kl_all: float  # ... for every unit's
    moved: float  # mean |Δ loss| from ``position`` on
    top_before: str  # the likeliest next token before
    top_after: str  # ... after
    p_before: float  # its probability before
    p_after: float  # ... after


@declare(facts=PatchNextFacts)
def patch_next(model, ids: tuple, source_ids: tuple, layer: int = 0, state: str | None = None, pick: str = "top",
               unit: int = 0, k: int = 1, position: int | None = None, source_position: int | None = None,
               seed: int = 0, top: int = 8) -> View:
    """Read the text from ``position`` on with the chosen units' state carried in from the other text (its
    state after the token before ``source_position``), and show the distribution of the character after the
    text's end before and after, beside the other text's own. None: the texts are aligned at their ends and
    patched where their common ending starts. Facts: KL(after ‖ before) against the same patch of k random
    units and of every unit (an LSTM's c may change no prediction until its output gate opens)."""
    import numpy as np
    from seqviz.charts.interventions import long_pairs, paired_bars
    from seqviz.introspect.gates import row_tokens
    from seqviz.introspect.interventions import next_token_shift

    ids, source_ids = _ids(model, ids), _ids(model, source_ids, "the other text")
    position, source_position = _aligned(ids, source_ids, position, source_position)
    # the longest memories from the token whose state is carried over
    name, units, controls = _setup(model, source_ids, layer, state, pick, unit, k, seed, (source_position - 1, 0))
    plain, source = traced(model, ids, layer, head=True), traced(model, source_ids, layer, head=True)

    every = tuple(range(state_width(model, name)))
    patched, *others, patched_all = _patched(model, ids, source_ids, name, [units, *controls, every], position,
                                             source_position)
    vocab = model.tokenizer.tokens if model.tokenizer is not None else [str(i) for i in range(model.config.vocab_size)]
    before = plain["logits"][0, -1]
    frame, kl = next_token_shift(before, patched["logits"][0, -1], vocab, int(top), other=source["logits"][0, -1])
    kl_random = float(np.mean([next_token_shift(before, run["logits"][0, -1], vocab)[1] for run in others]))
    kl_all = next_token_shift(before, patched_all["logits"][0, -1], vocab)[1]
    labels = {"before": _("as it was"), "after": _("patched"), "other": _("the other text")}
    tokens = row_tokens(plain)
    chart = paired_bars(long_pairs(frame, "token", labels), value_title=_("probability"),
                        label_title=_("next character"),
                        title=_("The character after «{t}»").format(t="".join(tokens[-12:]).replace("\n", "⏎")))
    moved = (patched["loss"][0, position:] - plain["loss"][0, position:]).abs()
    facts = {**_facts(model, name, units, pick, "patch", (position - 1, position), controls), "position": position,
             "source_position": source_position, "token": tokens[position], "kl": kl, "kl_random": kl_random,
             "kl_all": kl_all, "moved": float(moved.mean()) if len(moved) else 0.0,
             "top_before": str(frame.loc[frame["before"].idxmax(), "token"]),
             "top_after": str(frame.loc[frame["after"].idxmax(), "token"]),
             "p_before": float(frame["before"].max()), "p_after": float(frame["after"].max())}
    return View(chart, frame, facts, "Patched: the next-token distribution")


def _aligned(ids: tuple, source_ids: tuple, position, source_position) -> tuple[int, int]:
    """(position, source_position): where the common ending of the two texts starts, aligned from the end,
    unless given; each from 1 (the state carried into token p is the one after token p - 1)."""
    common = 0
    while common < min(len(ids), len(source_ids)) - 1 and ids[-1 - common] == source_ids[-1 - common]:
        common += 1
    position = len(ids) - max(common, 1) if position is None else int(position)
    if source_position is None:
        source_position = len(source_ids) - len(ids) + position
    for p, n, what in ((position, len(ids), "position"), (int(source_position), len(source_ids),
                                                          "the other text's position")):
        if not 1 <= p < n:
            raise ValueError(f"{what} must be 1..{n - 1} (the state after token p - 1 is carried in), got {p}")
    return position, int(source_position)


def _patched(model, ids, source_ids, name, unit_sets, position, source_position) -> list:
    """The text read with each of ``unit_sets`` of ``name`` carried in from the other text: one batch of edited
    runs from the text's unedited trace, recomputed from ``position`` - 1 on (``edited_traces``)."""
    from seqviz.models.edit_batch import edited_traces
    from seqviz.models.edits import patch

    layer = int(name.split(".")[1])

    def run():
        source = traced(model, source_ids, layer, head=True)
        edits = [[patch(name, source, list(u), span=(position - 1, position), offset=source_position - position)]
                 for u in unit_sets]  # the state after token p - 1 is what token p is read with
        return edited_traces(model, traced(model, ids, layer, head=True), edits, ("logits", "loss"))

    key = ("patch", ids, source_ids, name, tuple(map(tuple, unit_sets)), position, source_position)
    return memo(model, key, run)
