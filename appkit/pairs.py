"""The seq2seq pages' own pairs: a TSV file of (source, target) pairs uploaded on a page, kept for the session.

A visitor who gives a pairs file (``source<TAB>target``, one pair a line; ``seqviz.seq2seq.pairs_file``) has
every view over pairs measured on it instead of the model's held-out pairs (``heldout.json``), which a plain
PyTorch encoder-decoder never ships: BLEU by length, the exposure-bias curves, the decoding strategies, the
sentences to pick from. The file is read for the model in use (``seqviz.views.pairs.pairs_file``: in its own
tokens, with what it does not know) and kept in ``st.session_state`` like an uploaded vector file, so every
seq2seq page uses it until it is cleared; a malformed file is reported by line and dropped.
"""

from __future__ import annotations

import streamlit as st

from appkit import cache
from appkit.i18n import _, error_lead
from seqviz.refs import snapshots

PAIRS_FILE = "seqviz.pairs_file"  # (name, bytes) of the pairs file uploaded on a seq2seq page


def _on_upload(key: str) -> None:
    upload = st.session_state[key]
    if upload is None:  # cleared by the visitor (a page switch draws an empty box without calling this)
        st.session_state.pop(PAIRS_FILE, None)
    else:
        st.session_state[PAIRS_FILE] = (upload.name, upload.getvalue())


def _path_box(key: str) -> None:
    """"...or a path on this server": a pairs file the server may open (typed paths on, inside its allowed folders:
    ``seqviz.seq2seq.pairs_file.typed_file``), read once when typed; a refusal is one sentence."""
    from seqviz.files import local_paths_enabled
    from seqviz.seq2seq.pairs_file import typed_file

    if not local_paths_enabled():
        return
    typed = st.text_input(_("…or the path of a pairs file on this server"), key=f"{key}_path",
                          placeholder="data/my_pairs.tsv")
    if typed.strip() and st.session_state.get(f"{key}_path_read") != typed:
        st.session_state[f"{key}_path_read"] = typed  # read once per path typed, not on every rerun
        try:
            st.session_state[PAIRS_FILE] = typed_file(typed)
        except ValueError as e:  # outside the allowed folders, missing, too big: a typing slip
            st.warning(error_lead(e, _("Could not read that pairs file:")))


def in_use() -> str | None:
    """The name of the pairs file in use, or None (the model's own pairs)."""
    return st.session_state[PAIRS_FILE][0] if PAIRS_FILE in st.session_state else None


def own_pairs(ref, key: str) -> tuple:
    """Draw the page's pairs-file box (widget ``key``) and return the pairs the views measure on: the (source,
    target) texts of the uploaded file that the model can read, or () for its own held-out pairs. Says what was
    read (``seqviz.views.pairs.reading``); a file that cannot be read shows why (its line) and is dropped."""
    from seqviz.views import pairs as views

    st.file_uploader(_("Your own pairs (TSV: source<TAB>target, one pair a line)"), type=["tsv", "txt"], key=key,
                     on_change=_on_upload, args=(key,),
                     help=_("Measured instead of the model's held-out pairs on every seq2seq page, until you "
                            "clear it. Each side is read as a typed sentence: in the model's own tokens."))
    _path_box(key)
    if PAIRS_FILE not in st.session_state:
        return ()
    name, data = st.session_state[PAIRS_FILE]
    try:
        read = cache.view(views.pairs_file, ref, data=data, name=name).facts
    except ValueError as e:  # CheckpointError (a malformed line) is a ValueError
        st.session_state.pop(PAIRS_FILE)
        st.error(error_lead(e, _("Could not read that pairs file:")))
        return ()
    st.caption(views.reading(read))
    if st.session_state.get(key) is None and st.button(_("Back to the model's own pairs"), key=f"{key}_drop"):
        st.session_state.pop(PAIRS_FILE)  # uploaded on another page: this page's box is empty
        st.rerun()
    return read["pairs"]


def seed_sentence(origin, first) -> None:
    """Open the shared sentence (``eb_src``/``eb_ref``) on a held-out pair, ``first()`` -> (source, reference) or
    None: on the first visit, and when ``origin`` (the task and pairs file) changed, since another task's
    sentence would be all <unk>."""
    if st.session_state.get("eb_task", origin) != origin or "eb_src" not in st.session_state and \
            "eb_src" not in st.query_params:
        pair = first()
        if pair is not None:
            st.session_state["eb_src"], st.session_state["eb_ref"] = pair
    st.session_state["eb_task"] = origin


def sentence_inputs() -> dict:
    """The shared source sentence and reference boxes: {"src", "reference"}."""
    src = st.text_input(_("Source sentence"), key="eb_src", bind="query-params") or ""
    reference = st.text_input(_("Reference translation (tokens separated by spaces)"), key="eb_ref",
                              bind="query-params")
    return {"src": src, "reference": reference or ""}


def exposure_opening():
    """The Exposure bias and Decoding strategies pages' common start: the seq2seq picker (seqviz's own encoder-decoders
    only, else the page stops with why), the pairs box and the training-stage menu; returns (picked, model, pairs,
    step): ``model`` is the checkpoint's ``seqviz.refs.Info`` while its first views come shipped, and the page calls
    ``picked.finish()`` after them. The pages share ``eb_stage``, ``eb_src`` and ``eb_ref``: they follow the visitor."""
    from appkit.sidebar import deferred_picker
    from appkit.state import carry_over, keep_option

    picked = deferred_picker("seq2seq", prefer="zh-en-small-teacher-forcing")  # unless one was chosen
    if picked is None:
        st.stop()
    ref = picked.ref
    torch_free = bool(ref.row.info)  # seqviz's own folder, read without torch until the shipped views are drawn
    base = picked.info() if torch_free else picked.open()
    if not torch_free:
        from seqviz.seq2seq.model import Seq2Seq  # torch: only for a model already loaded

        if not isinstance(base, Seq2Seq):
            st.info(_("These views need one of seqviz's own RNN encoder-decoders (teacher forcing, snapshots, beam "
                      "search over its steps); a transformers model opens on the Attention page."))
            st.stop()
    pairs = own_pairs(ref, "eb_pairs")  # a pairs file's, else the checkpoint's own held-out pairs
    stages = ["final"] + [str(s) for s in snapshots(ref)]
    carry_over("eb_stage", "eb_src", "eb_ref")  # as the visitor left them on the other page
    keep_option("eb_stage", stages, "final")
    stage = st.sidebar.selectbox(_("Training stage (snapshot step)"), stages, key="eb_stage",
                                 format_func=lambda s: _("final") if s == "final" else s,
                                 help=_("Snowballing is clearest before a model converges."))
    return picked, base, pairs, None if stage == "final" else int(stage)


def framing_note(ref, pairs: tuple, src: str = "", reference: str = "") -> None:
    """A plain state dict's source framing checked on the pairs in use (else the typed sentence and reference,
    ``seqviz.views.pairs.framing``): each framing's cost, and a warning when the model's is the worse one."""
    from seqviz.views import pairs as views

    if not getattr(ref.row, "guesses_framing", False):  # seqviz's own and transformers' folders say their framing
        return
    f = cache.view(views.framing, ref, pairs=pairs, src=src, reference=reference).facts
    if not f["applies"]:
        return
    said, warning = views.verdict(f)
    st.caption(said)
    if warning:
        st.warning(warning)
