"""Views of a translator's attention: one sentence's alignment, a target word's weights, the bottleneck.

``vocabulary``, ``translation``, ``alignment``, ``target_weights``, ``entropy`` and ``heads`` are ``fn(model, **choices) ->
View`` (``seqviz.views``) for one of seqviz's own encoder-decoders (``Seq2Seq``, also the plain state-dict
family) or a transformers one (``HFSeq2Seq``: pick a decoder ``layer`` and a ``head``, -1 the mean of the
layer's heads); the Attention page, the attention lesson's steps and ``seqviz figure attention`` draw them.
All read one greedy translation and its trace (``memo``): a temperature, target word or head reads it again.
``examples`` reads a checkpoint's held-out pairs (a view of files), ``pair_examples`` a pairs file's;
``bottleneck`` and ``bleu_table`` the BLEU-by-length tables of the cards of several checkpoints;
``measured_bleu`` translates the held-out pairs (the model's, or a pairs file's: ``seqviz.views.pairs``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import NotRequired, TypedDict

from seqviz.tables import PERCENT
from seqviz.text import N_, _
from seqviz.views import View, memo
from seqviz.views.registry import Figure, declare

BAR_TITLE = N_("α from “{word}”")  # the weights bar chart's title
MEAN_OF_HEADS = -1  # ``head`` value meaning the mean over the layer's heads
DEFAULT_SENTENCE = "我昨天在公园吃了一个苹果"  # the page's sentence for a model of the lesson's zh-en task


def _is_hf(model) -> bool:
    from seqviz.hf_seq2seq import HFSeq2Seq

    return isinstance(model, HFSeq2Seq)


def run(model, text: str) -> dict:
    """The greedy translation of ``text`` with its trace (``translate_text`` of ``seqviz.introspect.attention``
    or of ``seqviz.hf_seq2seq``), once per model and text; ValueError for an empty or too long sentence."""
    def compute():
        if _is_hf(model):
            from seqviz.hf_seq2seq import translate_text

            return translate_text(model, text)
        from seqviz.introspect.attention import translate_text

        return translate_text(model, text)

    return memo(model, ("translated", text), compute)


def _trace(model, text: str, layer: int | None, head: int):
    """The trace whose ``decoder.attn`` is the chosen layer's head (or head mean) of a transformers model."""
    trace = run(model, text)["trace"]
    if not _is_hf(model):
        return trace
    from seqviz.hf_seq2seq import HEAD_MEAN, attention_shape, select_heads

    layer = attention_shape(trace)[0] - 1 if layer is None else int(layer)
    return memo(model, ("heads", text, layer, int(head)),
                lambda: select_heads(trace, layer, HEAD_MEAN if int(head) < 0 else int(head)))


def _frame(model, text: str, temperature: float, layer: int | None, head: int):
    from seqviz.introspect.attention import alignment_frame

    if not has_attention(model):
        raise ValueError("this model has no attention: its decoder sees one fixed vector, there is no alignment")
    key = ("alignment", text, float(temperature), layer, int(head))
    return memo(model, key, lambda: alignment_frame(_trace(model, text, layer, head), 0, float(temperature),
                                                    source=run(model, text)["pieces"]))


def has_attention(model) -> bool:
    """Whether the model's decoder attends over the source (a transformers model always does)."""
    return _is_hf(model) or getattr(model, "attn", None) is not None


def _opening_text(model, folder) -> str:
    """The sentence the Attention page opens on (``default_sentence`` from the folder's held-out examples)."""
    held = None if folder is None else examples(str(folder))
    return default_sentence(getattr(model, "card", None) or {}, {} if held is None else
                            {key: (src, ref) for key, src, ref in held.facts["examples"]}, vocabulary(model).facts["known"])


def _opening(targeted: bool | None):
    """A ``ships`` declaration: what the Attention page draws at its defaults on a seqviz encoder-decoder (T = 1;
    ``targeted``: the sharpest content word's row chosen too, True: only it, None: the translation alone)."""
    def ships(model, peers=(), folder=None) -> list[dict]:
        if _is_hf(model):
            return []
        chosen = {"text": _opening_text(model, folder)}
        if targeted is None:
            return [chosen]
        if not has_attention(model):
            return []
        chosen["temperature"] = 1.0
        target = {**chosen, "target": alignment(model, **chosen).facts["target"]}
        return [target] if targeted else [chosen, target]
    return ships


class VocabularyFacts(TypedDict):
    hf: bool  # a transformers model
    attention: bool  # its decoder attends
    known: tuple[str, ...]  # the source words seqviz's own vocabularies know (none for a transformers model)


@declare(model="seq2seq", facts=VocabularyFacts, ships=lambda model, peers=(), folder=None: [{}])
def vocabulary(model) -> View:
    """No chart. Facts: whether it is a transformers model (``hf``), whether its decoder has ``attention``,
    and the source words it ``known`` (seqviz's own vocabularies, without the special tokens)."""
    from seqviz.introspect.attention import known_source_words

    hf = _is_hf(model)
    return View(None, None, {"hf": hf, "attention": has_attention(model),
                             "known": () if hf else tuple(known_source_words(model))}, "Source vocabulary")


class TranslationFacts(TypedDict):
    pieces: tuple[str, ...]  # the source units as read (a space as ␣)
    unknown: tuple[str, ...]  # the ones the vocabulary lacks
    translation: str  # the greedy translation
    target: tuple[str, ...]  # its tokens
    layers: NotRequired[int]  # a transformers model's decoder layers
    heads: NotRequired[int]  # ... and heads per layer


@declare(model="seq2seq", facts=TranslationFacts, ships=_opening(None))
def translation(model, text: str) -> View:
    """No chart: the greedy translation of ``text``. Facts: the source units as read (``pieces``, a space as ␣),
    the ``unknown`` ones, the ``translation`` and its ``target`` tokens; for a transformers model its decoder's
    ``layers`` and ``heads`` per layer."""
    from seqviz.introspect.attention import display

    done = run(model, text)
    facts = {"pieces": tuple(display(done["pieces"])), "unknown": tuple(done["unknown"]),
             "translation": done["translation"], "target": tuple(done["target"])}
    if _is_hf(model):
        from seqviz.hf_seq2seq import attention_shape

        facts["layers"], facts["heads"] = attention_shape(done["trace"])
    return View(None, None, facts, "Translation")


def _target(stats, target: int | None) -> int:
    from seqviz.introspect.attention import default_target

    if target is None:
        return default_target(stats)
    if not 0 <= int(target) < len(stats):
        raise ValueError(f"target must be in 0..{len(stats) - 1}, got {target}")
    return int(target)


class AlignmentFacts(TypedDict):
    n: int  # the longest row's source length
    uniform: float  # 1/n
    limit: float  # 1.5/n: below it a row's maximum is near-uniform
    max_lo: float  # the smallest row maximum of α
    max_hi: float  # the largest
    mean_fraction: float  # the rows' mean entropy as a fraction of ln n
    verdict: str  # "uniform", "one-hot" or "spread"
    temperature: float  # T
    target: int  # the row outlined
    most_reordered: int  # the row whose strongest source is farthest from the diagonal
    translation: str  # the greedy translation


@declare(model="seq2seq", facts=AlignmentFacts, ships=_opening(False),
         figure=Figure("attention", default_text="我昨天在公园吃了一个苹果", options={"temperature": "temperature", "target": "target"},
                       quotes={"translation": "{translation}"}))
def alignment(model, text: str, temperature: float = 1.0, layer: int | None = None, head: int = MEAN_OF_HEADS,
              target: int | None = None) -> View:
    """The heat map of α = softmax(e / T) recomputed from the stored scores e (target rows, source columns), row
    ``target`` outlined (None: ``default_target`` at this T). Facts: the row maxima against 1/n (``n``,
    ``uniform``, ``limit``, ``max_lo``, ``max_hi``, ``mean_fraction``, ``verdict``), ``target`` and the
    ``most_reordered`` row."""
    from seqviz.charts.attention import alignment_heatmap
    from seqviz.introspect.attention import most_reordered, target_stats, temperature_summary

    frame = _frame(model, text, temperature, layer, head)
    stats = target_stats(frame)
    t = _target(stats, target)
    facts = {**temperature_summary(stats), "temperature": float(temperature), "target": t,
             "most_reordered": most_reordered(frame), "translation": run(model, text)["translation"]}
    return View(alignment_heatmap(frame, selected=t), frame, facts, "Alignment")


class TargetWeightsFacts(TypedDict):
    t: int  # the target row
    word: str  # its word
    source: str  # its strongest source unit
    j: int  # ... at source position j
    max_weight: float  # α there
    entropy: float  # −Σ α ln α, nats
    fraction: float  # entropy / ln n_source
    n_source: int  # source units
    diffuse: bool  # the row spreads its weight (introspect.attention.target_stats)
    temperature: float  # T


@declare(model="seq2seq", facts=TargetWeightsFacts, ships=_opening(True))
def target_weights(model, text: str, temperature: float = 1.0, layer: int | None = None, head: int = MEAN_OF_HEADS,
                   target: int | None = None, title: str | None = None) -> View:
    """The bar chart of one target word's α over the source at T (``title`` None: “α from word”). Facts: its
    ``word``, strongest ``source`` (at ``j``) and ``max_weight``, ``entropy`` −Σ α ln α in nats, ``fraction`` of
    ln ``n_source``, ``diffuse``."""
    from seqviz.charts.attention import target_weights_bar
    from seqviz.introspect.attention import target_stats

    frame = _frame(model, text, temperature, layer, head)
    stats = target_stats(frame)
    t = _target(stats, target)
    row = stats.iloc[t]
    facts = {"t": t, "word": str(row["target"]), "source": str(row["source"]), "j": int(row["j"]),
             "max_weight": float(row["max_weight"]), "entropy": float(row["entropy"]),
             "fraction": float(row["fraction"]), "n_source": int(row["n_source"]), "diffuse": bool(row["diffuse"]),
             "temperature": float(temperature)}
    chart = target_weights_bar(frame, t, title=_(BAR_TITLE).format(word=facts["word"]) if title is None else title)
    return View(chart, frame[frame["t"] == t], facts, "Weights of one target word")


class EntropyFacts(TypedDict):
    function_words: tuple[tuple[str, float, str], ...]  # (word, max α, strongest source) of each function word
    diffuse: tuple[str, ...]  # the function words whose α is diffuse
    temperature: float  # T


@declare(model="seq2seq", facts=EntropyFacts,
         ships=lambda model, peers=(), folder=None: _opening(False)(model, peers, folder)[:1])
def entropy(model, text: str, temperature: float = 1.0, layer: int | None = None, head: int = MEAN_OF_HEADS) -> View:
    """No chart: one row per target word (``target_stats``: strongest source, max α, entropy, its fraction of
    ln n, diffuse). Facts: the function words (a word, not a content word) as (word, max α, source) triples and
    those of them that are ``diffuse``."""
    from seqviz.introspect.attention import target_stats

    stats = target_stats(_frame(model, text, temperature, layer, head))
    function = stats[stats["word"] & ~stats["content"]]
    facts = {"function_words": tuple((r.target, float(r.max_weight), r.source) for r in function.itertuples()),
             "diffuse": tuple(function.loc[function["diffuse"], "target"]), "temperature": float(temperature)}
    return View(None, stats, facts, "Entropy of α per target word")


def temperature_verdict(facts: Mapping) -> str:
    """How α at the alignment's temperature reads (``alignment``'s facts): near-uniform, or sharper or flatter than
    the model's own."""
    if facts["verdict"] == "uniform":
        return _("near-uniform (every row's maximum ≤ 1.5/n = {limit:.2f})").format(limit=facts["limit"])
    T = facts["temperature"]
    return _("closer to uniform, not uniform") if T > 1 else _("sharper than the model's own") if T < 1 \
        else _("the model's own")


def alignment_caption(facts: Mapping) -> str:
    """The sentence under the heat map, from ``alignment``'s facts: the row maxima against 1/n, the mean entropy."""
    return _("At T = {T:g} α is {what}: row maxima {lo:.2f}–{hi:.2f}, against 1/n = {u:.2f}; entropy on average "
             "{f:.0%} of ln {n}.").format(T=facts["temperature"], what=temperature_verdict(facts), lo=facts["max_lo"],
                                          hi=facts["max_hi"], u=facts["uniform"], n=facts["n"],
                                          f=facts["mean_fraction"])


def target_sentence(facts: Mapping) -> str:
    """One target word's verdict, from ``target_weights``' facts: its strongest source, its entropy, diffuse or not."""
    return _("“{word}” puts {w:.2f} on {source}; the entropy of its α is {h:.2f} nats, {f:.0%} of ln {n}: "
             "**{verdict}** at T = {T:g}.").format(
        word=facts["word"], w=facts["max_weight"], source=facts["source"], h=facts["entropy"], f=facts["fraction"],
        n=facts["n_source"], T=facts["temperature"], verdict=_("diffuse") if facts["diffuse"] else _("not diffuse"))


def function_words_note(facts: Mapping) -> str | None:
    """What the function words attend to, from ``entropy``'s facts (None: the sentence has none)."""
    if not facts["function_words"]:
        return None
    T = facts["temperature"]
    listed = ", ".join(f"“{w}” {m:.2f} → {src}" for w, m, src in facts["function_words"])
    diffuse = ", ".join(f"“{w}”" for w in facts["diffuse"])
    return _("**Function words** (the lesson expects them to attend diffusely): {listed}. ").format(listed=listed) + (
        _("Diffuse on this model at T = {T:g}: {words}.").format(T=T, words=diffuse) if diffuse
        else _("None is diffuse on this model at T = {T:g}: each points at one source word.").format(T=T))


class HeadsFacts(TypedDict):
    layer: int  # the decoder layer drawn


@declare(version=2, model="seq2seq", facts=HeadsFacts)  # 2: every word labelled
def heads(model, text: str, layer: int = -1) -> View:
    """A transformers model's cross-attention: one small heat map per head of decoder ``layer``."""
    from seqviz.charts.cross_attention import head_grid
    from seqviz.hf_seq2seq import attention_shape, heads_frame

    if not _is_hf(model):
        raise ValueError("only a transformers model has several heads per layer")
    trace = run(model, text)["trace"]
    layer = int(layer) % attention_shape(trace)[0]
    frame = heads_frame(trace, layer)
    return View(head_grid(frame), frame, {"layer": layer}, f"Every head of layer {layer}")


# ------------------------------------------------------------------ held-out pairs and the bottleneck
def _pairs(folder) -> list:
    from seqviz.seq2seq.checkpoints import load_heldout

    return load_heldout(folder) if Path(folder).is_dir() else []


class ExamplesFacts(TypedDict):
    examples: tuple[tuple[str, str, str], ...]  # (menu key '9 units: 我...', source, reference) of each pair


def _examples_view(chosen: dict) -> View:
    return View(None, None, {"examples": tuple((k, s, r) for k, (s, r) in chosen.items())}, "Held-out sentences")


@declare(model=None, facts=ExamplesFacts)
def examples(folder: str, snapshot: int | None = None, per_bucket: int = 2) -> View | None:
    """A view of files: a few held-out pairs of every length bucket, as ``examples`` ((menu key, source,
    reference) triples, the key '9 units: 我...'); None when the folder keeps no heldout.json."""
    from seqviz.introspect.attention import example_sentences

    pairs = _pairs(folder)
    return _examples_view(example_sentences(pairs, int(per_bucket))) if pairs else None


@declare(model="seq2seq", facts=ExamplesFacts)
def pair_examples(model, pairs: tuple, per_bucket: int = 2) -> View:
    """``examples`` from a pairs file's ``pairs`` ((source, target) texts, ``views.pairs.pairs_file``): a few of
    every length bucket by the model's source units, shown as written in the file."""
    from seqviz.introspect.attention import BUCKETS
    from seqviz.views.pairs import tokenized

    tok = tokenized(model, tuple(pairs))
    chosen = {}
    for lo, hi in BUCKETS:
        for p, i in [(p, i) for p, i in zip(tok.pairs, tok.kept) if lo <= len(p.src) <= hi][: int(per_bucket)]:
            src, ref = pairs[i]
            chosen[f"{len(p.src)} units: {src[:40]}{'…' if len(src) > 40 else ''}"] = (src, ref)
    return _examples_view(chosen)


def _curves(cards: Mapping[str, dict]):
    from seqviz.introspect.attention import bleu_curves

    return bleu_curves(dict(cards))


class BottleneckFacts(TypedDict):
    models: tuple[str, ...]  # the checkpoints whose cards hold a BLEU-by-length table


@declare(model=None, facts=BottleneckFacts)
def bottleneck(cards: Mapping[str, dict]) -> View:
    """BLEU against source length of each checkpoint (name -> card.json: the ``bleu_by_length`` measured when it
    was made), one line per model; no chart when no card holds one. Facts: the ``models`` drawn."""
    from seqviz.charts.attention import bleu_vs_length

    curves = _curves(cards)
    chart = None if curves.empty else bleu_vs_length(curves)
    return View(chart, curves, {"models": tuple(dict.fromkeys(curves["model"]))}, "BLEU against sentence length")


@declare(model=None, facts=BottleneckFacts)
def bleu_table(cards: Mapping[str, dict]) -> View:
    """No chart: the ``bottleneck`` curves as a table, one row per model, one column per bucket by length."""
    from seqviz.introspect.attention import bleu_table as table

    curves = _curves(cards)
    return View(None, None if curves.empty else table(curves), {"models": tuple(dict.fromkeys(curves["model"]))},
                "BLEU by source length")


def attention_twin(config, card: Mapping, others) -> str | None:
    """The name of the checkpoint among ``others`` ((name, config, card) triples) that is this one with attention
    switched (on <-> off) and nothing else: same task, cell and encoder directions (Bahdanau et al. 2015, fig. 2
    compares such a pair); None where there is none. Plain state dicts and transformers models have none."""
    if not hasattr(config, "attention") or not hasattr(config, "cell"):
        return None
    same = ("cell", "bidirectional")
    return next((name for name, other, other_card in others
                 if getattr(other, "attention", config.attention) != config.attention
                 and all(getattr(other, k, None) == getattr(config, k) for k in same)
                 and other_card.get("task") == card.get("task")), None)


@declare(model=None, facts=BottleneckFacts)
def measured_together(tables: Mapping) -> View:
    """``measured_bleu`` tables (``.data``, by model name) on one chart, one line per model, and in one table with a
    model column. Facts: the ``models``."""
    import pandas as pd
    from seqviz.charts.attention import bleu_vs_length

    table = pd.concat([t.assign(model=name) for name, t in tables.items()], ignore_index=True)
    curve = table[table["bucket"] != "all"]
    return View(bleu_vs_length(curve) if len(curve) else None, table, {"models": tuple(tables)},
                "BLEU by source length, measured")


def bucket_label(bucket: str) -> str:
    """A length bucket ("1-5", "all") as read."""
    return _("all") if bucket == "all" else bucket


# The measured table as a reader reads it (``seqviz.tables.readable``'s arguments): the view keeps its keys.
MEASURED_TABLE = {"columns": {"model": N_("model"), "bucket": N_("source length (units)"), "n": N_("sentences"),
                              "bleu": N_("BLEU"), "exact": N_("exact match")},
                  "digits": {"bleu": 1, "exact": PERCENT}, "values": {"bucket": bucket_label}}


def stored_bleu_text(table):
    """``bleu_table``'s data as read: the model, then each length bucket's BLEU to one decimal, "—" where a
    model's card has no sentence of that length."""
    from seqviz.tables import readable

    rows = table.reset_index()
    return readable(rows, {"model": N_("model"), **{b: b for b in table.columns}}, digits=1)


class MeasuredBleuFacts(TypedDict):
    pairs: int  # the held-out pairs translated


@declare(model="seq2seq", facts=MeasuredBleuFacts)
def measured_bleu(model, n: int = 250, pairs: tuple = ()) -> View:
    """BLEU and exact match per source-length bucket of greedy translations of the first ``n`` held-out pairs
    (``pairs``: a pairs file's, else the model folder's; ``bleu_by_length``), measured now: the table (with an
    "all" row) and its curve against length, one line named after the model. Facts: the ``pairs`` used."""
    from seqviz.charts.attention import bleu_vs_length
    from seqviz.introspect.attention import bleu_by_length
    from seqviz.views.pairs import held_pairs

    held = held_pairs(model, tuple(pairs), int(n))
    table = bleu_by_length(model, held)
    curve = table[table["bucket"] != "all"].assign(model=(model.card or {}).get("name", "this model"))
    return View(bleu_vs_length(curve) if len(curve) else None, table, {"pairs": len(held)},
                "BLEU by source length, measured")


# ------------------------------------------------------------------ what the page opens on
def default_sentence(card: dict, examples: Mapping[str, tuple], known, own_pairs: bool = False) -> str:
    """The sentence the Attention page opens on: the first held-out example (``examples``: menu key -> (source,
    reference)) of a pairs file or of a task other than the lesson's zh-en, a plain state dict's first known
    words, else ``DEFAULT_SENTENCE``."""
    if examples and (own_pairs or card.get("task", "zh-en") != "zh-en"):
        return next(iter(examples.values()))[0]
    return " ".join(known[:5]) if "layout" in card else DEFAULT_SENTENCE
