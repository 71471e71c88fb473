"""What a plain encoder-decoder's code did that its weights cannot say: its conventions, each with its origin.

A state dict holds matrices; how the user's code framed a sentence, tokenised it and named its special
tokens is not in it. A recognised layout (``plain_shapes._layout``) brings its code's conventions; the
spec overrides any of them; what neither says is guessed from the vocabularies. Each ``Convention``
records where it came from (``"layout"``, ``"spec"`` or ``"guess"``), so ``seqviz inspect`` can say
why a sentence is framed the way it is::

    layout family       source framing        specials                    tokenizer
    bentrevett-1/2/3    <sos> x_1 .. x_n <eos> <unk> <pad> <sos> <eos>     words (split on spaces)
    pytorch-tutorial    x_1 .. x_n EOS         SOS = 0, EOS = 1 (Lang)     words (sentence.split(' '))

bentrevett/pytorch-seq2seq frames every source with ``init_token``/``eos_token`` (torchtext's specials
``<unk> <pad> <sos> <eos>``, in that order); the PyTorch tutorial's ``tensorFromSentence`` appends
``EOS_token`` to the source and its ``Lang`` numbers ``SOS`` 0 and ``EOS`` 1; both split on spaces
(a vocabulary of digits is still words: "3 1 4" is three tokens). Its ``DecoderRNN`` applies ``F.relu``
to the embedding; the ``AttnDecoderRNN`` and bentrevett's decoders do not.
"""

from __future__ import annotations

from dataclasses import dataclass

ORIGINS = ("layout", "spec", "guess")
USUAL = {"pad": ("<pad>", "<PAD>", "PAD", "<blank>"), "unk": ("<unk>", "<UNK>", "UNK"),
         "bos": ("<s>", "<sos>", "<bos>", "SOS", "<SOS>", "<start>", "<BOS>", "[CLS]"),
         "eos": ("</s>", "<eos>", "EOS", "<EOS>", "<end>", "[SEP]")}
FIELDS = ("bos", "eos", "source_bos", "source_eos", "source_tokenizer", "target_tokenizer", "decoder_input", "keys")

# What each recognised layout's own code does (see the module docstring for where each comes from).
BENTREVETT = {"bos": "<sos>", "eos": "<eos>", "source_bos": True, "source_eos": True, "source_tokenizer": "word",
              "target_tokenizer": "word", "decoder_input": "embedding"}
TUTORIAL = {"bos": "SOS", "eos": "EOS", "source_bos": False, "source_eos": True, "source_tokenizer": "word",
            "target_tokenizer": "word", "decoder_input": "embedding"}
LAYOUTS = {"bentrevett-1": BENTREVETT, "bentrevett-2": BENTREVETT, "bentrevett-3": BENTREVETT,
           "pytorch-tutorial": {**TUTORIAL, "decoder_input": "relu(embedding)"},
           "pytorch-tutorial-attention": TUTORIAL}
WHERE = {"bentrevett": "bentrevett/pytorch-seq2seq (torchtext Field init_token/eos_token)",
         "pytorch-tutorial": "the PyTorch translation tutorial (Lang, tensorFromSentence)"}


@dataclass(frozen=True)
class Convention:
    """One thing the user's code did, its value and where seqviz learned it."""

    field: str  # the spec field that sets it ("source_bos", "eos", ...)
    value: object  # True/False, a token, "word"/"char", "embedding"/"relu(embedding)", or the key map's summary
    origin: str  # "layout" (the recognised layout's code), "spec" (the user said so) or "guess" (from the files)

    def shown(self) -> str:
        """``"source_bos": true (from the layout)``-like text for ``inspect`` and messages."""
        value = "true" if self.value is True else "false" if self.value is False else self.value
        return f"{value} (from the {self.origin})" if self.origin != "guess" else f"{value} (a guess)"


def layout_family(layout: str) -> str | None:
    """ "bentrevett", "pytorch-tutorial" or None (a custom layout brings no conventions)."""
    if layout in LAYOUTS:
        return "bentrevett" if layout.startswith("bentrevett") else "pytorch-tutorial"
    return None


def _special(role: str, spec: dict, known: dict, tokens: tuple[list[str], ...]) -> Convention:
    """The start or end token's name: the spec's, the layout's where its vocabularies hold it, else the usual."""
    if spec.get(role) is not None:
        return Convention(role, spec[role], "spec")
    said = known.get(role)
    if said is not None and all(said in t for t in tokens if t is not None):
        return Convention(role, said, "layout")
    target = tokens[-1] or []
    return Convention(role, next((t for t in USUAL[role] if t in target), None), "guess")


def _kind(tokens: list[str] | None) -> str:
    """The guess without a layout: characters when every non-special token is one character, else words."""
    rest = [t for t in tokens or [] if not (t.startswith("<") or t in sum(USUAL.values(), ()))]
    return "char" if rest and all(len(t) == 1 for t in rest) else "word"


def conventions(layout: str, spec: dict, source: list[str] | None = None, target: list[str] | None = None,
                spec_keys: int = 0) -> dict[str, Convention]:
    """Each of ``FIELDS`` for a model of this ``layout`` (``plain_shapes._layout``), its ``spec`` and its two
    vocabularies (the file's tokens in id order); ``spec_keys``: how many tensors the spec's "keys" named."""
    known = LAYOUTS.get(layout, {})
    out = {role: _special(role, spec, known, (source, target)) for role in ("bos", "eos")}

    def pick(field: str, guess) -> Convention:
        if spec.get(field) is not None:
            return Convention(field, spec[field], "spec")
        if field in known:
            return Convention(field, known[field], "layout")
        return Convention(field, guess, "guess")

    source_has = {role: source is not None and (out[role].value in source if out[role].origin != "guess" else
                                                any(t in source for t in USUAL[role])) for role in ("bos", "eos")}
    out["source_bos"] = pick("source_bos", False)
    out["source_eos"] = pick("source_eos", source_has["eos"])
    for field in ("source_bos", "source_eos"):  # a layout's framing needs its token in the source vocabulary
        role = field[7:]
        if out[field].origin == "layout" and out[field].value and not source_has[role]:
            out[field] = Convention(field, False, "guess")
    out["source_tokenizer"] = pick("source_tokenizer", _kind(source))
    out["target_tokenizer"] = pick("target_tokenizer", _kind(target))
    out["decoder_input"] = pick("decoder_input", "embedding")
    family = layout_family(layout)
    keys = f"{spec_keys} named in the spec, the rest by their names" if spec_keys else \
        f"found by their names ({WHERE[family]})" if family else "found by their names"
    out["keys"] = Convention("keys", keys, "spec" if spec_keys else "layout" if family else "guess")
    return out


def summary(found: dict[str, Convention]) -> dict[str, str]:
    """field -> its ``shown()`` text: what ``inspect`` prints and the card keeps."""
    return {name: c.shown() for name, c in found.items()}


def tokenizer_hint(kind: str, side: str) -> str:
    """The spec field that reads a side the other way, for a refusal of a token it does not know."""
    other = "word" if kind == "char" else "char"
    how = "one character at a time" if kind == "char" else "as words split on spaces"
    return (f'; the {side} is read {how}: "{side}_tokenizer": "{other}" in the spec reads it '
            f"{'as words split on spaces' if other == 'word' else 'one character at a time'}")
