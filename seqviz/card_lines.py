"""A model card in the reader's language: the phrases seqviz's trainers write into its lines, and its summary.

The trainers (seqviz.train.lm, seqviz.seq2seq, seqviz.word2vec.train) write architecture, split, device, corpus
and training lines; one pattern per comma-separated piece. A piece no pattern matches (a user's own card) is kept.
"""

from __future__ import annotations

import math
import re

from seqviz.text import N_, _

CARD_PHRASES = tuple((re.compile(rf"^{pattern}$"), template) for pattern, template in (
    (r"(?P<n>\d+)-layer (?P<cell>[\w-]+)", N_("{n}-layer {cell}")),
    (r"hidden (?P<n>\d+)", N_("hidden {n}")),
    (r"embedding (?P<n>\d+)", N_("embedding {n}")),
    (r"(?P<c>\d+) channels x (?P<n>\d+) states", N_("{c} channels x {n} states")),  # a Mamba's D x N
    (r"char-level", N_("char-level")),
    (r"word-level", N_("word-level")),
    (r"bidirectional (?P<cell>\w+) encoder (?P<n>\d+)", N_("bidirectional {cell} encoder {n}")),
    (r"unidirectional (?P<cell>\w+) encoder (?P<n>\d+)", N_("unidirectional {cell} encoder {n}")),
    (r"(?P<cell>\w+) decoder (?P<n>\d+)", N_("{cell} decoder {n}")),
    (r"Bahdanau attention (?P<n>\d+)", N_("Bahdanau attention {n}")),
    (r"no attention \(fixed context\)", N_("no attention (fixed context)")),
    (r"(?P<n>\d+) dims", N_("{n} dims")),
    (r"window (?P<n>\d+)", N_("window {n}")),
    (r"negative (?P<n>\d+)", N_("negative {n}")),
    (r"min_count (?P<n>\d+)", N_("min_count {n}")),
    (r"(?P<n>\d+) epochs", N_("{n} epochs")),
    (r"by file: (?P<n>\d+) files train", N_("by file: {n} files train")),
    (r"(?P<n>\d+) held out \((?P<names>[^()]*)\)", N_("{n} held out ({names})")),
    (r"(?P<device>cpu|cuda[\w:]*|mps) \((?P<n>\d+) threads?\)", N_("{device} ({n} threads)")),
    (r"(?P<device>cpu|cuda[\w:]*) \(gensim, (?P<n>\d+) workers?\)", N_("{device} (gensim, {n} workers)")),
    (r"(?P<name>[\w-]+) \((?P<files>[\d,]+) files, (?P<words>[\d,]+) words\)", N_("{name} ({files} files, {words} words)")),
    (r"teacher forcing", N_("teacher forcing")),
    (r"scheduled sampling", N_("scheduled sampling")),
    (r"inverse-sigmoid decay k=(?P<k>[\d.]+)", N_("inverse-sigmoid decay k={k}")),
))


def translated(line: str, gettext) -> str:
    """A card.json line through ``gettext``, piece by comma-separated piece (commas inside brackets stay in their
    piece); pieces seqviz's trainers did not write are kept as they are."""
    pieces, depth, start = [], 0, 0
    for i, ch in enumerate(line):
        depth += ch == "("
        depth -= ch == ")"
        if line.startswith(", ", i) and depth == 0:
            pieces.append(line[start:i])
            start = i + 2
    pieces.append(line[start:])
    out = []
    for piece in pieces:
        match = next(((m, t) for pattern, t in CARD_PHRASES if (m := pattern.match(piece))), None)
        out.append(gettext(match[1]).format(**match[0].groupdict()) if match else piece)
    return gettext(", ").join(out) if len(out) > 1 else out[0]


# Scores other model families write in card.json, named for the zoo's cards.
CARD_SCORES = {"accuracy_google_analogies": N_("Google analogies accuracy"),
               "spearman_wordsim353": N_("WordSim-353 Spearman ρ"), "spearman_simlex999": N_("SimLex-999 Spearman ρ")}


def score_name(key: str) -> str:
    """A card.json score's name in the reader's language ('spearman_wordsim353' -> 'WordSim-353 斯皮尔曼 ρ')."""
    return _(CARD_SCORES[key]) if key in CARD_SCORES else key.replace("_", " ")


def fmt_number(value, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer() and abs(value) >= 1000):
        return f"{int(value):,}"
    return f"{value:.{digits}g}"


def fmt_seconds(seconds) -> str:
    if not isinstance(seconds, (int, float)):
        return "-"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def scores(card: dict) -> list[str]:
    """A card's headline numbers (Markdown): size, validation loss and perplexity, or the scores another family
    reports (BLEU, accuracy ...), and an encoder-decoder's held-out BLEU; every number read from the card."""
    facts = [_("**{n}** parameters").format(n=fmt_number(card["parameters"]))] if "parameters" in card else []
    val = card.get("val_loss")
    if isinstance(val, (int, float)):
        facts += [_("validation loss **{loss:.3f}** nats/token").format(loss=val),
                  _("perplexity **{ppl:.2f}**").format(ppl=card.get("val_perplexity", math.exp(val)))]
    else:  # other model families report other scores (BLEU, accuracy, ...): show what is there
        facts += [f"{score_name(k)} **{fmt_number(v)}**" for k, v in card.items()
                  if isinstance(v, (int, float)) and k.startswith(("val", "bleu", "accuracy", "spearman"))][:2]
    if isinstance(card.get("test_bleu"), (int, float)):  # seq2seq: held-out translation quality
        facts.append(_("held-out BLEU **{bleu:.1f}**").format(bleu=card["test_bleu"]))
        if isinstance(card.get("test_exact_match"), (int, float)):
            facts.append(_("exact **{match:.1%}**").format(match=card["test_exact_match"]))
        if (note := synthetic_note(card)) is not None:
            facts.append(note)
    return facts


def synthetic_note(card: dict) -> str | None:
    """The sentence a score of pairs from seqviz's generated grammar needs (a BLEU near 100 there is what a small
    model reaches on a small grammar, not a translation benchmark), or None for pairs of a real corpus."""
    from seqviz.seq2seq.data import GENERATED, TASKS

    if card.get("task") not in TASKS or not str(card.get("data", "")).startswith(GENERATED):
        return None
    return _("Pairs generated from a small grammar ({task}), not a real corpus: a BLEU near 100 is expected "
             "there.").format(task=card["task"])


def provenance(card: dict, line=str) -> list[str]:
    """A card's task, corpus, held-out split and where and how long it trained (Markdown), its own lines through
    ``line`` (the app's: ``translated`` in the reader's language, as written in English)."""
    lines = []
    if card.get("task"):
        lines.append(_("**Task**: {task}").format(task=card["task"])
                     + (f" ({line(card['training'])})" if isinstance(card.get("training"), str) else ""))
    if card.get("corpus"):
        lines.append(_("**Corpus**: {corpus}").format(corpus=line(str(card["corpus"]))))
    if card.get("split"):
        lines.append(_("**Held out**: {split}").format(split=line(str(card["split"]))))
    trained = [line(str(card["device"])) if card.get("device") else None,
               fmt_seconds(card.get("wall_time_s")) if "wall_time_s" in card else None,
               _("{n:,} steps").format(n=card["training_steps"]) if isinstance(card.get("training_steps"), int) else None]
    if any(trained):
        lines.append(_("**Trained on**: {where}").format(where=", ".join(t for t in trained if t)))
    return lines
