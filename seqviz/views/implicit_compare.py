"""Memory as attention compared: several recurrences' maps of one quotation side by side, and recurrent memories of
a translation's sentence beside Bahdanau's learned alignment, all in the alignment's shape (``charts.attention``).

A compared model is a ``models`` choice of (name, model) pairs, as the app passes a compared checkpoint (its
``ModelRef`` becomes the loaded model; shipped results key it by its files) and a lesson step its other models.
"""

from __future__ import annotations

import math
from typing import TypedDict

from seqviz.families import of
from seqviz.text import N_, _
from seqviz.views import View, memo
from seqviz.views import implicit as iv
from seqviz.views.registry import declare

COMPARED = ("shakespeare-char-lstm", "shakespeare-char-mamba")  # the shipped LMs the Attention page draws
WORD_AXES = (N_("word read"), N_("earlier word"))


PANEL_PX = 22  # a panel's column width: one under the other, each fits a phone (side by side, the third was cut)


def _panels(charts: list, columns: list[int]):
    """Maps one under the other, ``columns[i]`` columns wide each, each heat map's layer renamed (one chart's views
    need distinct names), one colour scale."""
    import altair as alt

    from seqviz.charts import props

    for i, chart in enumerate(charts):
        chart.layer[0] = props(chart.layer[0], name=f"alignment_cells_{i}")
    return alt.vconcat(*(props(c, width=PANEL_PX * n) for c, n in zip(charts, columns)), spacing=24).resolve_scale(
        color="shared")


class PairFacts(TypedDict):
    position: int  # the step marked in every map
    token: str  # its token
    far: int  # "far back": at least this many steps before
    title_0: str  # the first model's family (a name, the same in every language)
    title_1: str  # the second's
    far_0: float  # share of the first model's memory at ``position`` from tokens ≥ far back
    far_1: float
    own_0: float  # share of its own token
    own_1: float
    top_0: str  # the token holding the most
    top_1: str
    first_farther: bool  # far_0 > far_1
    second_farther: bool  # far_1 >= far_0


@declare(needs=iv.LINEAR, facts=PairFacts)
def memory_pair(model, text: str, layer: int = 0, position: int | None = None, models: tuple = (),
                window: int = iv.WINDOW) -> View:
    """The layer maps of ``model`` and the first of ``models`` (another recurrence, its own tokenizer reading the
    same text into as many tokens) over the same window of steps, the step ``position`` marked in both."""
    if not models:
        raise ValueError("memory_pair compares two models: give the second in models=((name, model),)")
    shown = []
    for m in (model, models[0][1]):
        if (why := of(m).why_not("linear_form")) is not None:
            raise ValueError(why)
        ids = tuple(m.tokenizer.encode(text).ids)
        shown.append((of(m), iv.layer_map(m, ids, layer, position, window)))
    (fa, a), (fb, b) = shown
    if a.facts["tokens"] != b.facts["tokens"]:
        raise ValueError(f"the two models read this text as {a.facts['tokens']} and {b.facts['tokens']} tokens: "
                         "their steps do not line up")
    charts = []
    for family, view in shown:
        view.chart.title = family.title
        charts.append(view.chart)
    columns = [int(view.data["j"].nunique()) for _family, view in shown]
    facts = PairFacts(position=a.facts["position"], token=a.facts["token"], far=iv.FAR, title_0=fa.title,
                      title_1=fb.title, far_0=a.facts["far_share"], far_1=b.facts["far_share"],
                      own_0=a.facts["own_share"], own_1=b.facts["own_share"], top_0=a.facts["top_token"],
                      top_1=b.facts["top_token"], first_farther=a.facts["far_share"] > b.facts["far_share"],
                      second_farther=b.facts["far_share"] >= a.facts["far_share"])
    import pandas as pd

    return View(_panels(charts, columns), pd.concat([a.data.assign(model=fa.title), b.data.assign(model=fb.title)]),
                dict(facts), "Memory as attention compared")


def pair_caption(facts) -> str:
    """The two maps' sentence, from ``memory_pair``'s facts."""
    return _("At step {p} («{tok}») the {a}'s memory holds {fa:.0%} from tokens {far} or more steps back, the {b}'s "
             "{fb:.0%}; each keeps {oa:.0%} and {ob:.0%} for the token just read.").format(
        p=facts["position"], tok=facts["token"], a=facts["title_0"], b=facts["title_1"], fa=facts["far_0"],
        fb=facts["far_1"], far=facts["far"], oa=facts["own_0"], ob=facts["own_1"])


# ------------------------------------------------------------------ a translation's sentence in recurrent memories
def _word_ids(lm, words: list[str]) -> tuple[tuple, list[int]]:
    """The LM's token ids of the words (a space before all but the first, as its tokenizer reads a sentence) and
    the word of each token."""
    from seqviz.introspect.language import prepare

    ids, owner = [], []
    for w, word in enumerate(words):
        kept = prepare(lm.tokenizer, word if w == 0 else " " + word)[0]
        if not kept:
            raise ValueError(f"the model knows no token of the word {word!r}")
        ids += kept
        owner += [w] * len(kept)
    return tuple(ids), owner


def word_weights(lm, words: list[str], layer: int = 0):
    """[W, W] row-normalised: how much of the LM's memory, once it has read word a (its last token), each word b ≤ a
    still is (Σ over b's tokens and the layer's units of |contribution|)."""
    import numpy as np

    ids, owner = _word_ids(lm, words)
    mass = np.abs(iv.unrolled(lm, ids, layer).contributions).sum(-1)  # [T, T]
    owner = np.asarray(owner)
    ends = [int(np.flatnonzero(owner == w)[-1]) for w in range(len(words))]
    out = np.zeros((len(words), len(words)))
    for a, end in enumerate(ends):
        out[a] = np.bincount(owner[: end + 1], weights=mass[end, : end + 1], minlength=len(words))
    return out / np.where(out.sum(1, keepdims=True) > 0, out.sum(1, keepdims=True), 1)


def _spread(rows) -> float:
    """Mean over ``rows`` (weights summing to 1) of a row's entropy as a fraction of ln(its length): 0 all on one,
    1 even; rows of one weight have nothing to spread and are left out."""
    import numpy as np

    fractions = [-(r[r > 0] * np.log(r[r > 0])).sum() / math.log(len(r)) for r in rows if len(r) > 1]
    return float(np.mean(fractions)) if fractions else 0.0


class WordFacts(TypedDict):
    translation: str  # the greedy translation whose words the maps read
    words: int  # its words
    titles: tuple  # the compared LMs' families, in order
    alignment_spread: float  # Bahdanau's α: mean entropy of a word's row as a fraction of ln(n source units)
    spreads: tuple  # each LM's map, the same over its rows with ≥ 2 words (0: one word each, 1: even)
    own: tuple  # each LM's mean share of the word just read
    sharpest: str  # the sharpest map's title ("Bahdanau" or an LM's)
    alignment_sharper: bool  # Bahdanau's α is sharper than every LM's memory
    memory_sharper: bool  # some LM's memory is as sharp or sharper


def _frame(weights, rows: list[str], columns: list[str], lower: bool):
    import pandas as pd

    return pd.DataFrame([{"t": a, "target": rows[a], "target_label": f"{a}:{rows[a]}", "j": b, "source": columns[b],
                          "source_label": f"{b}:{columns[b]}", "weight": float(weights[a, b])}
                         for a in range(len(rows)) for b in range(len(columns)) if not lower or b <= a])


def _ships_beside(model, peers=(), folder=None) -> list[dict]:
    """What the Attention page draws beside the alignment it opens on: the shipped LMs beside ``folder``."""
    from pathlib import Path

    from seqviz.results import Peer
    from seqviz.views import attention as att

    if folder is None or not att.has_attention(model) or att._is_hf(model):
        return []
    beside = [(name, Peer(Path(folder).parent / name)) for name in COMPARED
              if (Path(folder).parent / name / "config.json").is_file()]
    text = att._opening_text(model, folder)
    words = att.translation(model, text).facts["translation"].split()
    return [{"text": text, "models": tuple(beside)}] if beside and len(words) >= 2 else []


@declare(model="seq2seq", facts=WordFacts, ships=_ships_beside)
def word_maps(model, text: str, models: tuple = (), layer: int = 0) -> View:
    """Bahdanau's alignment of ``text``'s greedy translation (its word rows), and beside it, in the same shape, each of
    ``models`` (recurrent LMs with a gated linear form) reading that translation: for each word, how much of the
    memory each earlier word still is once the word is read (``word_weights``)."""
    import numpy as np
    import pandas as pd

    from seqviz.charts import props
    from seqviz.charts.attention import alignment_heatmap
    from seqviz.views import attention as att

    aligned = att.alignment(model, text)
    words = aligned.facts["translation"].split()
    if len(words) < 2:
        raise ValueError(f"the translation {aligned.facts['translation']!r} has fewer than two words: a memory of one "
                         "word weighs nothing against another")
    frame = aligned.data.loc[aligned.data["t"] < len(words), ["t", "target", "target_label", "j", "source",
                                                                "source_label", "weight"]]
    n_src = int(frame["j"].max()) + 1
    alpha = frame.pivot(index="t", columns="j", values="weight").to_numpy()
    spread = _spread(list(alpha))
    charts = [props(alignment_heatmap(frame.round({"weight": 4}), clickable=False), title=_("Bahdanau's alignment α"))]
    titles, spreads, own, tables = [], [], [], [frame.assign(model="Bahdanau")]
    for _name, lm in models:
        if (why := of(lm).why_not("linear_form")) is not None:
            raise ValueError(why)
        weights = memo(lm, ("word weights", tuple(words), int(layer)), lambda lm=lm: word_weights(lm, words, layer))
        shown = _frame(weights, words, words, lower=True)
        titles.append(of(lm).title)
        spreads.append(_spread([row[: a + 1] for a, row in enumerate(weights)]))
        own.append(float(np.mean(np.diag(weights))))
        tables.append(shown.assign(model=titles[-1]))
        charts.append(props(alignment_heatmap(shown.round({"weight": 4}), clickable=False,
                                              axes=(_(WORD_AXES[0]), _(WORD_AXES[1]))),
                            title=_("{family} memory").format(family=titles[-1])))

    everyone = {"Bahdanau": spread, **dict(zip(titles, spreads))}
    sharpest = min(everyone, key=everyone.get)
    facts = WordFacts(translation=aligned.facts["translation"], words=len(words), titles=tuple(titles),
                      alignment_spread=spread, spreads=tuple(spreads), own=tuple(own), sharpest=sharpest,
                      alignment_sharper=all(spread < s for s in spreads), memory_sharper=any(s <= spread for s in spreads))
    return View(_panels(charts, [n_src] + [len(words)] * len(titles)), pd.concat(tables, ignore_index=True), dict(facts),
                "Alignment and recurrent memories")


def word_caption(facts) -> str:
    """The panels' sentence, from ``word_maps``' facts: how sharply each map picks one word per row."""
    memories = "; ".join(_("the {family}'s memory {s:.0%}, {own:.0%} of it on the word just read").format(
        family=t, s=s, own=o) for t, s, o in zip(facts["titles"], facts["spreads"], facts["own"]))
    return _("How evenly each row spreads its weight (entropy as a share of its most even spread): Bahdanau's α "
             "{a:.0%}; {memories}. Bahdanau's decoder learned where to look for each word; a recurrent memory only "
             "keeps what its gates let through, and it can look only back.").format(
        a=facts["alignment_spread"], memories=memories)
