"""Views of memory as attention: what every earlier token still adds to a unit's memory (``introspect.implicit``).

Drawn in the shape of Bahdanau's alignment (``charts.attention``: step t in rows, token j in columns, a row's
weights summing to 1), so an LSTM's ∏f, a Mamba's hidden attention and a translation model's learned alignment
read alike. A map shows the ``window`` steps up to the chosen one, the tokens before them summed in one "…"
column (rows still sum to 1); the chosen step's bars put beside each share what removing that token's write does
to the loss there (an exact knockout, computed a window of tokens per batch). ``ids`` is one text's token ids.
The Memory as attention page, the lesson, the HTML export and ``seqviz figure`` call these; captions read the
typed facts. Importing this module costs neither torch nor Altair (the page's first charts come shipped).
"""

from __future__ import annotations

from typing import TypedDict

from seqviz.families import of
from seqviz.text import N_, _
from seqviz.views import View, memo
from seqviz.views.registry import declare

LINEAR = ("linear_form",)  # what every view here needs of a family: s_t = a_t ⊙ s_(t−1) + b_t
FAR = 5  # "far back": a token at least this many steps before the step that reads it
SCALES = {"row": N_("each step's shares (rows sum to 1)"), "max": N_("magnitude (÷ the largest)")}
TOP_UNITS = 3  # the units named as carrying each token
UNITS_LISTED = 32  # the units a page offers, the longest reach first
WINDOW = 32  # steps a map shows and earlier tokens a step's bars show, at first: read on a phone
BLOCK = 32  # tokens knocked out in one batch (a step's bars read at most two blocks)
# T² · U · N float64 products one layer's unrolling may take (``seqviz.introspect.implicit.contributions``): about 3 s
# here; every token of the shipped models' texts (a Mamba of 256 channels x 16 states: 178), 72 of mamba-130m's
UNROLL_WORK = 1.3e8
MAX_TOKENS = 1000  # tokens read of a text
AXES = (N_("step t"), N_("token j"))  # a map's rows and columns
DEFAULT_TEXT = ("HAMLET.\nThe player cried \"To be, or not to be, that is the question:\nWhether 'tis nobler in the "
                "mind to suffer\nThe slings and arrows of outrageous fortune,\" and was still.\n")  # the lessons' too


def unrolled(model, ids: tuple, layer: int = 0):
    """``implicit.contributions`` of one text and layer (``memo``'d: every view of it slices one result)."""
    from seqviz.introspect.implicit import contributions

    key = tuple(int(i) for i in ids)
    return memo(model, ("implicit", key, int(layer)), lambda: contributions(model, list(key), layer))


def last_step(n_tokens: int) -> int:
    """The last step whose next token is scored (a knockout's effect is read on that loss): where a page opens."""
    return max(int(n_tokens) - 2, 0)


def _position(n_tokens: int, position: int | None) -> int:
    return last_step(n_tokens) if position is None else max(0, min(int(position), last_step(n_tokens)))


def _steps(window: int) -> int:
    if not 2 <= int(window) <= 256:
        raise ValueError(f"window must lie in 2..256 steps, got {window}")
    return int(window)


def _label(token: str) -> str:
    return token.replace("\n", "⏎").replace(" ", "␣")


def _opening_ids(model) -> tuple:
    from seqviz.introspect.language import prepare

    return tuple(prepare(model.tokenizer, DEFAULT_TEXT, MAX_TOKENS)[0])


def _opening(choices):
    """A ``ships`` declaration: ``choices(model, ids, layer, position) -> [choices]`` at every layer, on the page's
    text at its last step (what the Layer control switches to)."""
    def ships(model, peers=(), folder=None) -> list[dict]:
        ids = _opening_ids(model)
        return [c for layer in range(model.config.n_layers) for c in choices(model, ids, layer, last_step(len(ids)))]
    return ships


# ------------------------------------------------------------------ the map of a window of steps
class MapFacts(TypedDict):
    unit: int  # the unit drawn (-1: the whole layer, Σ_u |contribution|)
    units: int  # units in the layer
    reach: float  # the unit's (the layer's) share of its memory at the text's last step from tokens ≥ far back
    position: int  # the step marked (the window's last row)
    token: str  # its token
    first: int  # the window's first step; tokens before it are the "…" column
    tokens: int  # tokens in the text
    far: int  # "far back": at least this many steps before
    far_share: float  # share of the memory at ``position`` held by tokens ≥ far back
    far_mean: float  # the same averaged over the window's rows (the whole chart)
    beyond: float  # share at ``position`` held by tokens before the window (the "…" column)
    own_share: float  # share at ``position`` of its own token
    top_source: int  # the token holding the most at ``position``
    top_token: str
    top_weight: float
    kept: float  # of what top_source wrote, the part still there at ``position``: |value[p, top]| / |value[top, top]|,
    #              for a one-state memory ∏ a since then (an LSTM unit's ∏ f: the attention weight in disguise)
    mostly_far: bool  # far_share > 0.5
    mostly_recent: bool  # far_share <= 0.5
    layer: int
    scale: str
    memory: str  # the family's memory (c, h, s) and its retention's letter
    symbol: str
    family: str


def _far_share(weights, t: int) -> float:
    return float(weights[t, : max(t - FAR + 1, 0)].sum())


def _window(mag, raw, tokens: list[str], first: int, position: int, scale: str):
    """The map's table: rows t = first..position, columns "…" (every token before ``first``, summed) and
    j = first..t; ``weight`` each row's share (scale "row") or |value| ÷ the largest shown ("max")."""
    import numpy as np
    import pandas as pd

    rows = []
    for t in range(first, position + 1):
        total = mag[t, : t + 1].sum()
        cells = [(first - 1, "…", f"<{first}:…", mag[t, :first].sum(), raw[t, :first].sum())] if first else []
        cells += [(j, _label(tokens[j]), f"{j}:{_label(tokens[j])}", mag[t, j], raw[t, j]) for j in range(first, t + 1)]
        rows += [{"t": t, "target": _label(tokens[t]), "target_label": f"{t}:{_label(tokens[t])}", "j": j,
                  "source": source, "source_label": label, "weight": float(m / total) if total > 0 else 0.0,
                  "magnitude": float(m), "contribution": float(r)} for j, source, label, m, r in cells]
    frame = pd.DataFrame(rows)
    if scale == "max":
        top = frame["magnitude"].max()
        frame["weight"] = np.where(top > 0, frame["magnitude"] / (top if top > 0 else 1), 0.0)
    return frame


def _map(model, ids: tuple, layer: int, unit: int | None, scale: str, position: int | None, window: int,
         title: str) -> View:
    import numpy as np

    from seqviz.charts import props
    from seqviz.charts.attention import alignment_heatmap

    if scale not in SCALES:
        raise ValueError(f"scale must be one of {', '.join(SCALES)}, got {scale!r}")
    r, family = unrolled(model, ids, layer), of(model)
    T, width = len(r.tokens), r.contributions.shape[2]
    if unit is not None and not 0 <= int(unit) < width:
        raise ValueError(f"unit must lie in 0..{width - 1}")
    raw = r.contributions.sum(-1) if unit is None else r.contributions[:, :, int(unit)]
    mag = np.abs(r.contributions).sum(-1) if unit is None else np.abs(raw)
    weights = mag / np.where(mag.sum(1, keepdims=True) > 0, mag.sum(1, keepdims=True), 1)
    p = _position(T, position)
    first = max(0, p - _steps(window) + 1)
    frame = _window(mag, raw, r.tokens, first, p, scale)
    top = int(np.argmax(weights[p, : p + 1]))
    shaded = frame.loc[frame["j"] >= first, "weight"].max()  # the darkest: the largest share of one shown token
    drawn = frame[["t", "target", "target_label", "j", "source", "source_label", "weight"]].round({"weight": 4})
    chart = props(alignment_heatmap(drawn, selected=p, axes=(_(AXES[0]), _(AXES[1])), clickable=False,
                                    top=float(min(max(shaded, 0.05), 1.0))), title=title)
    far_rows = [_far_share(weights, t) for t in range(first, p + 1)]
    facts = MapFacts(unit=-1 if unit is None else int(unit), units=int(width), reach=_far_share(weights, T - 1),
                     position=p, token=_label(r.tokens[p]), first=first, tokens=T, far=FAR,
                     far_share=_far_share(weights, p), far_mean=float(np.mean(far_rows)),
                     beyond=float(weights[p, :first].sum()), own_share=float(weights[p, p]), top_source=top,
                     top_token=_label(r.tokens[top]), top_weight=float(weights[p, top]),
                     kept=float(mag[p, top] / mag[top, top]) if mag[top, top] > 0 else 0.0,
                     mostly_far=_far_share(weights, p) > 0.5, mostly_recent=_far_share(weights, p) <= 0.5,
                     layer=r.layer, scale=scale, memory=family.memory, symbol=family.symbol, family=family.title)
    return View(chart, frame, dict(facts), f"Memory as attention {'layer' if unit is None else 'unit'} "
                f"{r.layer if unit is None else unit} at {p}")


def _longest_reach(model, ids: tuple, layer: int) -> int:
    return int(reach(model, ids, layer).data["unit"].iloc[0])


@declare(needs=LINEAR, facts=MapFacts)  # not shipped: the page opens on the layer's map, and a unit's is a slice
def unit_map(model, ids: tuple, layer: int = 0, unit: int | None = None, scale: str = "row",
             position: int | None = None, window: int = WINDOW) -> View:
    """One unit's (a Mamba's: one channel's) map over the ``window`` steps up to ``position`` (None: the last step
    with a next token): how much of its memory at step t token j's write still is. ``unit`` None: the one with the
    longest reach."""
    unit = _longest_reach(model, ids, layer) if unit is None else int(unit)
    family = of(model)
    title = _("{what} {u}: what each earlier token still adds to its memory {m}").format(
        what=_(family.unit).capitalize(), u=unit, m=family.memory)
    return _map(model, ids, layer, unit, scale, position, window, title)


@declare(needs=LINEAR, facts=MapFacts, ships=_opening(lambda model, ids, layer, p: [
    {"ids": ids, "layer": layer, "position": p}]))
def layer_map(model, ids: tuple, layer: int = 0, position: int | None = None, window: int = WINDOW) -> View:
    """The whole layer's map over the ``window`` steps up to ``position``: Σ_u |contribution| per (t, j), each row
    summing to 1."""
    family = of(model)
    title = _("Layer {l}: what each earlier token still adds to the memory, all {n} {what}s").format(
        l=unrolled(model, ids, layer).layer, n=unrolled(model, ids, layer).contributions.shape[2], what=_(family.unit))
    return _map(model, ids, layer, None, "row", position, window, title)


def caption(facts) -> str:
    """A map's sentence, from its facts: how much of the marked step's memory comes from far back."""
    whose = _("this unit's memory {m}").format(m=facts["memory"]) if facts["unit"] >= 0 else _("the layer's memory")
    return _("At step {p} («{tok}») {share:.0%} of {whose} comes from tokens {far} or more steps back ({mean:.0%} on "
             "average over the {n} steps shown); the most from «{top}» ({w:.0%}), {own:.0%} from the step's own "
             "token, {beyond:.0%} from before the window (…).").format(
        p=facts["position"], tok=facts["token"], share=facts["far_share"], whose=whose, far=facts["far"],
        mean=facts["far_mean"], n=facts["position"] - facts["first"] + 1, top=facts["top_token"],
        w=facts["top_weight"], own=facts["own_share"], beyond=facts["beyond"])


# ------------------------------------------------------------------ one step: shares beside exact knockouts
def knocked_block(model, ids: tuple, layer: int, block: int):
    """``implicit.knockouts`` of the tokens ``block``·BLOCK .. (block + 1)·BLOCK − 1 (one batch, ``memo``'d): Δ loss
    [P, T − 1] at every later step. A step's bars read at most two blocks; the page completes the others ahead."""
    from seqviz.introspect.implicit import knockouts

    key = tuple(int(i) for i in ids)
    j = range(block * BLOCK, min((block + 1) * BLOCK, len(key) - 1))
    return memo(model, ("knockouts", key, int(layer), int(block)),
                lambda: knockouts(model, list(key), list(j), layer)["delta"] if len(j) else None)


def _effects(model, ids: tuple, layer: int, first: int, position: int):
    """Δ loss at ``position`` when each token first..position − 1 has its write removed."""
    import numpy as np

    if position <= first:
        return np.zeros(0)
    blocks = range(first // BLOCK, (position - 1) // BLOCK + 1)
    every = np.concatenate([knocked_block(model, ids, layer, b)[:, position] for b in blocks])
    return every[first - blocks[0] * BLOCK: position - blocks[0] * BLOCK]


def sources(model, ids: tuple, layer: int = 0, position: int | None = None) -> None:
    """What the views at ``position`` and at the steps beside it slice (``memo``'d): the unrolling and the blocks of
    knockouts their bars read (at most two). The page computes it while the visitor reads: a step moved by one is
    then a slice."""
    unrolled(model, ids, layer)
    p = _position(len(ids), position)
    for block in reversed(range(max(p - WINDOW, 0) // BLOCK, p // BLOCK + 1)):
        knocked_block(model, ids, layer, block)


def tokens_for(config, n: int) -> int:
    """Tokens of a text of ``n`` the page unrolls: all while T² · U · N stays within ``UNROLL_WORK`` (U · N: the
    widest state a layer traces times a Mamba's states per channel), else fewer, never below the budget's fewest."""
    from seqviz import budget

    width = budget.widest(config) * int(getattr(config, "states", None) or 1)
    return min(int(n), max(budget.FEWEST_TOKENS, int((UNROLL_WORK / max(width, 1)) ** 0.5)))


def cut_note(n: int, kept: int) -> str:
    """The sentence a page shows when it unrolls ``kept`` of a text's ``n`` tokens (``tokens_for``)."""
    return _("This model is large: memory as attention unrolls the first {kept:,} of the text's {n:,} tokens (its "
             "cost grows with the square of their number and with every unit and state of a layer).").format(
        kept=kept, n=n)


def prepare(model, ids: tuple, layer: int = 0, position: int | None = None) -> None:
    """``sources`` of ``layer``, then of every other layer where one text's trace of every layer is small
    (``seqviz.budget.whole``): the page's background work while the visitor reads. A model of real size prepares the
    chosen layer only: each other layer is an unrolling of its own and knockouts through every block above it
    (mamba-130m's 24 layers held the server for minutes and 3 GB)."""
    from seqviz import budget

    layers = range(model.config.n_layers) if budget.whole(model, len(ids)) else [int(layer) % model.config.n_layers]
    for other in sorted(layers, key=lambda other: other != layer):
        sources(model, ids, other, position)


class TargetFacts(TypedDict):
    position: int  # the step whose memory and next-token loss are read
    token: str  # its token
    first: int  # the first earlier token shown (and knocked out); those before are the "…" bar
    knocked: int  # earlier tokens knocked out
    layer: int
    window: int
    top_source: int  # the earlier token holding the most of the memory at ``position``
    top_token: str
    top_weight: float
    top_delta: float  # Δ loss at ``position`` when its write is removed (nats)
    largest_source: int  # the earlier token whose knockout changes that loss most
    largest_token: str
    largest_delta: float  # its Δ loss (signed)
    top_is_largest: bool  # the largest share is also the largest effect
    rho: float  # Spearman's ρ between the shares and |Δ loss| over the knocked-out tokens (NaN under 3)
    ranks: bool  # ρ ≥ 0.5: a large share mostly means a large effect
    loosely: bool  # 0.2 ≤ ρ < 0.5
    unranked: bool  # ρ < 0.2, or too few tokens to say
    own_weight: float  # the step's own token's share
    beyond: float  # the share of the tokens before the window
    loss: float  # the loss at ``position`` as the model runs (nats)


def _rho(shares, effects) -> float:
    """Spearman's ρ (Pearson's r of average ranks, as scipy's ``spearmanr``); NaN under 3 points or a constant."""
    import pandas as pd

    if len(shares) < 3:
        return float("nan")
    return float(pd.Series(shares).rank().corr(pd.Series(effects).rank()))


@declare(needs=LINEAR, facts=TargetFacts, ships=_opening(lambda model, ids, layer, p: [
    {"ids": ids, "layer": layer, "position": p}]))
def target(model, ids: tuple, layer: int = 0, position: int | None = None, window: int = WINDOW) -> View:
    """For one step (``position``, None: the last with a next token), a bar per earlier token of the last ``window``:
    its share of the layer's memory there (Σ_u |contribution|, all tokens' shares summing to 1: those before the
    window in one "…" bar), the units that carry it most, and below, what removing its write does to the
    next-token loss there (``implicit.knockouts``, exact). The step's own token is not knocked out: its write
    reaches the loss through the layer's output at that very step, which an edit of the state after it misses."""
    import numpy as np

    from seqviz.charts.implicit import shares_and_knockouts

    r = unrolled(model, ids, layer)
    T = len(r.tokens)
    p = _position(T, position)
    first = max(0, p - _steps(window) + 1)
    mass = np.abs(r.contributions[p])  # [T, U]
    share = mass.sum(-1) / max(float(mass.sum()), 1e-300)
    effects = _effects(model, ids, r.layer, first, p)
    earlier = share[first:p]
    rho = _rho(earlier, np.abs(effects))
    top = first + int(np.argmax(earlier)) if p > first else p
    big = first + int(np.argmax(np.abs(effects))) if p > first else p
    frame = _bars(r.tokens, share, mass, effects, first, p, top)
    loss = memo(model, ("loss", tuple(int(i) for i in ids)), lambda: model.trace([list(ids)], names=["loss"])["loss"])
    facts = TargetFacts(position=p, token=_label(r.tokens[p]), first=first, knocked=p - first, layer=r.layer,
                        window=_steps(window), top_source=top, top_token=_label(r.tokens[top]), top_weight=float(share[top]),
                        top_delta=float(effects[top - first]) if p > first else 0.0, largest_source=big,
                        largest_token=_label(r.tokens[big]),
                        largest_delta=float(effects[big - first]) if p > first else 0.0, top_is_largest=top == big,
                        rho=rho, ranks=rho >= 0.5, loosely=0.2 <= rho < 0.5, unranked=not rho >= 0.2,
                        own_weight=float(share[p]), beyond=float(share[:first].sum()), loss=float(loss[0, p]))
    chart = shares_and_knockouts(frame, _("share of the memory"), _("Δ loss (nats)"),
                                 _("Step {p} («{w}»): each earlier token's share, and its knockout").format(
                                     p=p, w=_label(r.tokens[p])))
    return View(chart, frame, dict(facts), f"Memory as attention at {p}")


def _bars(tokens, share, mass, effects, first: int, p: int, top: int):
    """The bars' table: "…" (before the window), each earlier token, the step's own token; ``named``: those the
    caption names (the three, and the earlier token ``top`` holding the most)."""
    import numpy as np
    import pandas as pd

    rows = [{"j": first - 1, "source": "…", "source_label": f"<{first}:…", "weight": float(share[:first].sum()),
             "delta_loss": float("nan"), "own": False, "units": "", "named": True}] if first else []
    for j in range(first, p + 1):
        rows.append({"j": j, "source": _label(tokens[j]), "source_label": f"{j}:{_label(tokens[j])}",
                     "weight": float(share[j]), "delta_loss": float(effects[j - first]) if j < p else float("nan"),
                     "own": j == p, "units": ", ".join(map(str, np.argsort(-mass[j])[:TOP_UNITS])),
                     "named": j in (top, p)})
    return pd.DataFrame(rows)


def target_caption(facts) -> str:
    """The knockout's sentence: does a large share mean a large effect? (Spearman's ρ, computed)."""
    import math

    if math.isnan(facts["rho"]):
        return _("Too few earlier tokens to compare shares with effects.")
    verdict = _("yes, mostly") if facts["ranks"] else _("only loosely") if facts["loosely"] else _("no")
    return _("Does a large share mean a large effect? {v}: Spearman's ρ between each token's share and what removing "
             "its write changes in the loss here is {rho:.2f}. Of the earlier tokens «{tok}» holds the most "
             "({w:.0%}); removing its write changes the loss by {d:+.3f} nats; the largest change, {big:+.3f} nats, "
             "comes from «{btok}».").format(v=verdict, rho=facts["rho"], tok=facts["top_token"], w=facts["top_weight"],
                                           d=facts["top_delta"], big=facts["largest_delta"],
                                           btok=facts["largest_token"])


class ReachFacts(TypedDict):
    far: int  # "far back": at least this many steps before the last step
    units: int  # units in the layer


@declare(needs=LINEAR, facts=ReachFacts, ships=_opening(lambda model, ids, layer, p: [{"ids": ids, "layer": layer}]))
def reach(model, ids: tuple, layer: int = 0) -> View:
    """The layer's ``UNITS_LISTED`` units of longest reach, the longest first: the share of the last step's memory
    held by tokens ≥ FAR back (no chart: the page's unit choice reads it)."""
    import numpy as np
    import pandas as pd

    c = np.abs(unrolled(model, ids, layer).contributions[-1])  # [T, U]
    total = c.sum(0)
    values = np.divide(c[: max(len(c) - FAR, 0)].sum(0), total, out=np.zeros_like(total), where=total > 0)
    order = np.argsort(-values, kind="stable")[:UNITS_LISTED]
    return View(None, pd.DataFrame({"unit": order.astype(int), "reach": values[order].astype(float)}),
                {"far": FAR, "units": int(len(values))}, "Memory reach")
