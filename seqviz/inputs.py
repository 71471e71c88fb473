"""What a visitor types, read for a model: several texts split, tokenized and cut, with notices for the reader.

Cheap and pure; the app's pages call these before a view (the views take the ids).
"""

from __future__ import annotations

from seqviz.text import N_, _, ngettext
from seqviz.introspect.language import SAMPLE_TEXTS

MAX_TOKENS = 1000  # tokens read per text on the trajectory and gate pages; longer texts are cut with a notice
MAX_TEXTS = 6  # texts overlaid on one trajectory plot; more are left out with a notice
SEPARATOR = "---"  # a line holding only this separates several texts in one text box
# The language-model pages' sample menu: seqviz.introspect.language.SAMPLE_TEXTS (whose scores ship with
# each checkpoint) under names marked N_: show them with _().
SAMPLES = {
    N_("Hamlet (held-out play)"): SAMPLE_TEXTS["hamlet"],
    N_("As You Like It"): SAMPLE_TEXTS["as_you_like_it"],
    N_("Speech headings"): SAMPLE_TEXTS["speech_headings"],
    N_("Modern prose"): SAMPLE_TEXTS["modern_prose"],
    N_("Gibberish"): SAMPLE_TEXTS["gibberish"],
    N_("Unknown characters"): SAMPLE_TEXTS["unknown_characters"],
}
DEFAULT_SAMPLE = next(iter(SAMPLES))


def split_texts(raw: str) -> list[str]:
    """Texts separated by a line holding only ``---`` (empty ones dropped)."""
    parts, current = [], []
    for line in (raw or "").split("\n"):
        if line.strip() == SEPARATOR:
            parts.append("\n".join(current))
            current = []
        else:
            current.append(line)
    parts.append("\n".join(current))
    return [p for p in parts if p.strip()]


def token_limit(model, most: int = MAX_TOKENS) -> int:
    """Tokens a page reads of a text on ``model`` (a loaded model, or a page's ``Info`` before it loads: its folder's
    weights are counted): ``most``, fewer for a model of real size (``seqviz.budget.tokens_for``)."""
    from seqviz import budget

    folder = (getattr(model, "card", None) or {}).get("path") if not hasattr(model, "num_parameters") else None
    return budget.tokens_for(folder or model, most)


def read_texts(model, raw: str, limit: int | None = None) -> tuple[list[tuple[int, ...]], list[str]]:
    """Token ids per text (unknown pieces left out, cut at ``limit``, by default ``token_limit``) and notices for
    the user."""
    from seqviz.introspect.language import prepare

    sized = limit is None and token_limit(model) < MAX_TOKENS  # a model of real size: fewer tokens, and it says why
    limit = token_limit(model) if limit is None else limit
    ids, notices, texts = [], [], split_texts(raw)
    if len(texts) > MAX_TEXTS:
        notices.append(_("Only the first {max} of {n} texts are read.").format(max=MAX_TEXTS, n=len(texts)))
    for n, text in enumerate(texts[:MAX_TEXTS], start=1):
        kept, _pieces, unknown, truncated = prepare(model.tokenizer, text, limit)
        if unknown:
            notices.append(ngettext("Text {n}: {k} piece not in the vocabulary was left out: {pieces}",
                                    "Text {n}: {k} pieces not in the vocabulary were left out: {pieces}",
                                    len(unknown)).format(n=n, k=len(unknown),
                                                         pieces=" ".join(repr(u) for u in unknown[:20])))
        if truncated and sized:
            notices.append(_("This model is large: a page reads up to {limit:,} tokens of its texts, so that each view "
                             "is computed in seconds. Text {n}: the last {cut:,} tokens were cut.").format(
                n=n, limit=limit, cut=truncated))
        elif truncated:
            notices.append(_("Text {n} is longer than {limit:,} tokens: the last {cut:,} were cut.").format(
                n=n, limit=limit, cut=truncated))
        if kept:
            ids.append(tuple(kept))
        else:
            notices.append(_("Text {n} has no token this model knows; it is left out.").format(n=n))
    return ids, notices


def token_count(model, text: str) -> int:
    """How many tokens ``model``'s tokenizer makes of ``text`` (unknown pieces count, as <unk>)."""
    return len(model.tokenizer.encode(text or "").ids) if model.tokenizer is not None else 0
