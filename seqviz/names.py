"""A checkpoint's name as a class reads it, in the installed language: its family, what it read, how it differs.

The folder name (``shakespeare-char-rnn``) stays what a link, a file and a command line use; a legend, a menu and
a sentence show ``shown_name``, built from the card and the config (the family's title from the family table),
so a new checkpoint gets one without a list of names to extend. A folder whose card says too little keeps its name.
"""

from __future__ import annotations

import json
from pathlib import Path

from seqviz.text import N_, _

CORPORA = {"shakespeare": N_("Shakespeare")}  # card["corpus"]'s first word -> the corpus as named
TASKS = {"zh-en": N_("Chinese→English"), "dates": N_("dates")}  # card["task"] -> what it translates
UNITS = {"char": N_("characters"), "word": N_("words"), "bpe": N_("subwords")}  # the tokenizer's units
ARCHS = {"skipgram": N_("skip-gram"), "cbow": N_("CBOW")}  # word2vec's two training objectives


def _family(config: dict) -> str | None:
    """The family table's title for a config (``family``, else ``cell``, else a transformers ``model_type``)."""
    from seqviz.families import get

    for key in ("family", "cell", "model_type"):
        try:
            return get(str(config[key])).title
        except KeyError:
            continue
    return None


def shown_name(name: str, card: dict | None, config: dict | None) -> str:
    """``name`` as a reader reads it: "LSTM (Shakespeare, characters)", "GRU Chinese→English, with attention",
    "word2vec skip-gram (Shakespeare)", in the installed language; ``name`` itself where the card or the config
    does not say enough."""
    card, config = card or {}, config or _from_card(card or {})
    kind = config.get("model_type")
    corpus = CORPORA.get(str(card.get("corpus", "")).split(" ")[0])
    if kind == "word2vec" and corpus:
        arch = ARCHS.get(str(config.get("arch", "")))
        return _("word2vec {arch} ({corpus})").format(arch=_(arch) if arch else "", corpus=_(corpus))
    family = _family(config)
    if kind == "seq2seq" and family and card.get("task") in TASKS:
        attention = _("with attention") if config.get("attention") else _("without attention")
        return _("{family} {task}, {attention}").format(family=family, task=_(TASKS[card["task"]]), attention=attention)
    units = UNITS.get(str(config.get("tokenizer") or card.get("tokenizer", "")).split(",")[0])
    if family and corpus and units:
        return _("{family} ({corpus}, {units})").format(family=family, corpus=_(corpus), units=_(units))
    return name


def _from_card(card: dict) -> dict:
    """What a seq2seq card's architecture line says of its config ("..., GRU decoder 128, Bahdanau attention 32"):
    the decoder's cell and whether it attends, for a caller that holds the card alone."""
    words = str(card.get("architecture", "")).replace(",", " ").split()
    if "task" not in card or "decoder" not in words[1:]:
        return {}
    arch = " ".join(words)
    return {"model_type": "seq2seq", "cell": words[words.index("decoder") - 1].lower(),
            "attention": "attention" in arch and "no attention" not in arch}


def shown_name_of(name: str, model=None, folder: Path | str | None = None) -> str:
    """``shown_name`` of a loaded ``model`` (its ``card`` and config) or of a checkpoint ``folder`` (its files)."""
    if folder is not None:
        read = {}
        for file in ("card.json", "config.json"):
            try:
                read[file] = json.loads((Path(folder) / file).read_text(encoding="utf-8"))
            except (OSError, ValueError):
                read[file] = {}
        return shown_name(name, read["card.json"], read["config.json"])
    config = getattr(model, "config", None)
    raw = {k: getattr(config, k) for k in ("cell", "family", "tokenizer", "attention", "arch")
           if isinstance(getattr(config, k, None), (str, bool))}
    return shown_name(name, getattr(model, "card", None), {**raw, "model_type": getattr(model, "model_type", None)})
