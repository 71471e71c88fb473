"""The phrases seqviz's trainers write into a model card's lines, and such a line in the reader's language.

The trainers (seqviz.train.lm, seqviz.seq2seq, seqviz.word2vec.train) write architecture, split, device, corpus
and training lines; one pattern per comma-separated piece. A piece no pattern matches (a user's own card) is kept.
"""

from __future__ import annotations

import re

from seqviz.text import N_

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
