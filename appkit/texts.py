"""What the pages do with typed text before a model reads it: split several texts, tokenize, cut, report.

No caching here (that is appkit/cache.py); these are cheap, pure helpers shared by pages.
"""

from __future__ import annotations

from appkit.i18n import _, ngettext

MAX_TOKENS = 1000  # tokens read per text on the trajectory and gate pages; longer texts are cut with a notice
MAX_TEXTS = 6  # texts overlaid on one trajectory plot; more are left out with a notice
SEPARATOR = "---"  # a line holding only this separates several texts in one text box
SAMPLE_CHUNKS, SAMPLE_LENGTH = 16, 500  # corpus sample for saturation and the unit finder


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


def first_text(model, raw: str, empty: str) -> tuple[int, ...]:
    """The ids of the first of ``raw``'s texts, its notices shown as warnings; the run stops with the info
    ``empty`` when no token of it is left."""
    import streamlit as st

    ids, notices = read_texts(model, "\n".join(split_texts(raw)[:1]))
    for notice in notices:
        st.warning(notice)
    if not ids:
        st.info(empty)
        st.stop()
    return ids[0]


def token_ids(model, text: str, max_tokens: int):
    """(ids [1, T] tensor of the first ``max_tokens`` tokens, their pieces); ValueError under two tokens."""
    import torch

    enc = model.tokenizer.encode(text)
    if len(enc.ids) < 2:
        raise ValueError(_("the text needs at least two known tokens"))
    ids = torch.tensor([enc.ids[:max_tokens]])
    return ids, enc.pieces[: ids.shape[1]]


def token_count(model, text: str) -> int:
    """How many tokens ``model``'s tokenizer makes of ``text`` (unknown pieces count, as <unk>)."""
    return len(model.tokenizer.encode(text or "").ids) if model.tokenizer is not None else 0
