"""The sidebar checkpoint picker, shared by every page that needs a model; it returns a ``ModelRef``.

The choice is kept per kind of page (``model_type``) in ``st.session_state["seqviz.choice"]`` (surviving page
switches) and changes only when the visitor acts: picks a shipped checkpoint (also put in the URL,
``?recurrent_lm=<name>``), types a path (``ModelRef.chosen``; kept in the URL too, ``appkit.folder_link``), uploads
files or types a Hub repo id. A failure shows the CheckpointError message and falls back to a shipped checkpoint.
The stored choice is the only source of truth: the model is opened first (with its fallback), then every widget is
given its value from it *before* it is built, on every run, clamped into its options (a choice not offered shows the
placeholder, never another model), since on a direct switch between two pages drawing a widget with the same key
Streamlit (1.67) resets the widget while the key keeps the old value. Widget keys are per page (``widget_key``); the
source tab is kept per kind (``seqviz.source``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from appkit import cache, folder_link
from appkit.cache import list_checkpoints
from appkit.i18n import N_, _, error_lead, upload_hint
from seqviz.refs import SOURCE_LABELS, SOURCE_NAMES, Choice, ModelRef, offered_sources

STORE, ERRORS, UPLOADS, HUB = "seqviz.choice", "seqviz.errors", "seqviz.uploads", "seqviz.hub"
FAILED = "seqviz.failed"  # {(path, fingerprint): error} of models Picked.open() could not load in this session
VIEW = "seqviz.source"  # model_type -> the source tab shown (shared by the pages of that kind)
NO_SHIPPED = N_("Choose a shipped checkpoint")  # the box's placeholder while the model in use is not a shipped one


def _store() -> dict:
    return st.session_state.setdefault(STORE, {})


def _fail(model_type: str, error) -> None:
    st.session_state.setdefault(ERRORS, {})[model_type] = str(error)


def _default(model_type: str, prefer: str | None = None, needs: str | None = None) -> Choice | None:
    """The shipped checkpoint named in the URL, else the page's preferred one, else the first whose family
    ``applies(needs)`` (what the page's default tab needs), else the first."""
    shipped = list_checkpoints(model_type)
    named = {c.name: c for c in shipped}
    first = next((named[w] for w in (st.query_params.get(model_type), prefer) if w in named), None)
    first = first or next((c for c in shipped if needs is None or applies(c.ref(), needs)), shipped[0] if shipped else None)
    return Choice("Shipped", first.path, first.name) if first else None


def applies(ref: ModelRef, need: str) -> bool:
    """Whether the checkpoint's family (the family table's entry, read from its files) has ``need``."""
    from seqviz.families import of

    return of(cache.shape(ref)).applies(need)


def stand_in(ref: ModelRef, need: str, model_type: str = "recurrent_lm") -> ModelRef | None:
    """The model a view that needs ``need`` (a family-table capability) draws: the sidebar's ``ref`` when its family
    has it, else the first shipped one whose does (None: none); the page says which (families.stand_in_note)."""
    if applies(ref, need):
        return ref
    return next((c.ref() for c in list_checkpoints(model_type) if applies(c.ref(), need)), None)


def _on_shipped(model_type: str, key: str) -> None:
    name = st.session_state[key]
    for c in list_checkpoints(model_type):
        if c.name == name:
            _store()[model_type] = Choice("Shipped", c.path, c.name)


def _on_folder(model_type: str, key: str) -> None:
    text = (st.session_state[key] or "").strip()
    if text:
        _store()[model_type] = Choice("Local folder", str(Path(text).expanduser()), Path(text).name or text)


def _on_upload(model_type: str, key: str) -> None:
    from seqviz.files import CheckpointError
    from seqviz.uploads import extract_replacing

    files = st.session_state[key] or []
    if not files:
        return
    try:
        path, root = extract_replacing([(f.name, f.getvalue()) for f in files],
                                       st.session_state.setdefault(UPLOADS, {}).get(model_type))
    except CheckpointError as e:
        _fail(model_type, e)
        return
    st.session_state[UPLOADS][model_type] = str(root)
    _store()[model_type] = Choice("Upload", str(path), ", ".join(f.name for f in files))


def _on_hub(model_type: str, key: str) -> None:
    repo = (st.session_state[key] or "").strip()
    if repo:  # downloaded in the script run, where a progress bar can be drawn
        st.session_state.setdefault(HUB, {})[model_type] = repo


def _download(model_type: str, repo: str, bar) -> None:
    """Download ``repo`` within the server's budget, with a progress bar, and make it the choice."""
    from seqviz import hub
    from seqviz.files import CheckpointError

    if not hub.is_repo_id(repo):  # never a local path: those go through the allowed-folder rule
        _fail(model_type, _("{repo} is not a Hub repo id (user/model)").format(repo=repr(repo)))
        return
    shown = bar.progress(0.0, text=_("Asking the Hub about {repo}...").format(repo=repo))

    def progress(done: int, total: int) -> None:
        shown.progress(min(1.0, done / max(total, 1)),
                       text=_("Downloading {repo}: {done:,.1f} of {total:,.1f} MiB").format(
                           repo=repo, done=done / 2**20, total=total / 2**20))

    try:
        path = hub.download(repo, progress=progress)
    except CheckpointError as e:
        _fail(model_type, e)
        return
    finally:
        shown.empty()
    _store()[model_type] = Choice("Hub", str(path), repo)


def current_page() -> str:
    """The running page's file stem (``language_model``), or ``app`` outside ``st.navigation``."""
    try:
        from streamlit.runtime.scriptrunner import get_script_run_ctx

        ctx = get_script_run_ctx()
        info = ctx.pages_manager.get_pages().get(ctx.page_script_hash) if ctx else None
        return Path(info["script_path"]).stem if info and info.get("script_path") else "app"
    except Exception:  # a Streamlit without these internals: one key set for all pages, still clamped
        return "app"


def widget_key(model_type: str, field: str, page: str | None = None) -> str:
    """``picker.<page>.<model_type>.<field>``: the key of one picker widget on one page
    (``field``: source, shipped, folder, upload or hub)."""
    return f"picker.{page or current_page()}.{model_type}.{field}"


def _on_source(model_type: str, key: str) -> None:
    st.session_state.setdefault(VIEW, {})[model_type] = st.session_state[key]


def _open(choice: Choice, model_type: str, limit: int | None, load: bool = True) -> ModelRef:
    """The checked ref of a choice (``Choice.ref``), its model loaded (cached) unless ``load`` is False;
    CheckpointError when it cannot be used."""
    ref = choice.ref(model_type, limit)
    failed = st.session_state.get(FAILED, {}).get((ref.path, ref.key))
    if failed is not None:  # these very files failed to load on an earlier run (deferred_picker)
        raise failed
    if load:
        cache.model(ref)
    return ref


def found_text(ref: ModelRef) -> str:
    """One sentence on what the picker opened (``ModelRef.found``): described without loading it where it can be."""
    return ref.found(cache.info(ref), lambda: cache.model(ref))


def _widgets(model_type: str, choice: Choice | None, shipped: list, uploads: bool = True) -> None:
    """Draw the picker, each widget's value first set from the stored choice (clamped into its options); no Upload
    source where the page has an uploader of its own (``uploads=False``)."""
    bar, state = st.sidebar, st.session_state
    key = {f: widget_key(model_type, f) for f in ("source", "shipped", "folder", "upload", "hub")}
    sources = [s for s in offered_sources() if s != "Upload" or uploads]
    view = state.setdefault(VIEW, {})
    if view.get(model_type) not in sources:  # first visit, or switched off since it was picked
        start = choice.source if choice else ("Shipped" if shipped else sources[1])
        view[model_type] = start if start in sources else "Shipped"
    state[key["source"]] = view[model_type]
    source = bar.radio(_("Source"), sources, key=key["source"], horizontal=True, on_change=_on_source,
                       args=(model_type, key["source"]), format_func=lambda s: _(SOURCE_LABELS[s]),
                       help=_("Where the model comes from. The choice is kept when you switch pages."))
    if source == "Shipped":
        if shipped:
            names = [c.name for c in shipped]
            in_use = choice.label if choice and choice.source == "Shipped" else None
            state[key["shipped"]] = in_use if in_use in names else None  # None: the placeholder
            bar.selectbox(_("Shipped checkpoint"), names, key=key["shipped"], placeholder=_(NO_SHIPPED),
                          on_change=_on_shipped, args=(model_type, key["shipped"]))
        else:
            bar.caption(_("No shipped {model_type} checkpoint in this copy of seqviz.").format(model_type=model_type))
    elif source == "Local folder":
        if choice and choice.source == "Local folder":
            state[key["folder"]] = choice.path
        bar.text_input(_("Checkpoint folder or file (on the server)"), key=key["folder"],
                       placeholder=_("checkpoints/<folder>"), on_change=_on_folder, args=(model_type, key["folder"]),
                       help=_("A checkpoint folder, a plain PyTorch state dict (folder or file) or a word-vector "
                              "file, under the app's checkpoint folders or its working folder."))
    elif source == "Upload":  # a file uploader's value cannot be set; the caption names the upload in use
        bar.file_uploader(_("Zipped folder, or weights + spec JSON"), key=key["upload"],
                          type=["zip", "safetensors", "pt", "pth", "bin", "npz", "json"], accept_multiple_files=True,
                          on_change=_on_upload, args=(model_type, key["upload"]))
        upload_hint(bar)
    else:
        if choice and choice.source == "Hub":
            state[key["hub"]] = choice.label
        bar.text_input(_("Hub repo id"), key=key["hub"], placeholder=_("user/model"),
                       help=_("Downloaded only when you type one, within this server's size limit; needs a network "
                              "connection."), on_change=_on_hub, args=(model_type, key["hub"]))


def checkpoint_picker(model_type: str, limit: int | None = None, prefer: str | None = None,
                      needs: str | None = None, uploads: bool = True) -> ModelRef | None:
    """Draw the picker in the sidebar and return a ref to the chosen model (already loaded and cached), or None
    (after an ``st.info``) when there is none. ``limit``: word-vector files read only their N most frequent words.
    ``prefer``: the shipped checkpoint this page opens on when the visitor has chosen none (here or in the URL);
    ``needs``: else the first whose family has this family-table capability (what the default tab needs);
    ``uploads``: False where the page uploads through a box of its own (the word2vec pages' vector file)."""
    picked = _pick(model_type, limit, prefer, load=True, needs=needs, uploads=uploads)
    return None if picked is None else picked.ref


@dataclass
class Picked:
    """The picker's choice before its model is loaded (``deferred_picker``); ``open()`` loads it."""

    ref: ModelRef
    slot: object  # the sidebar placeholder for the "Found ..." caption, filled by open()

    def open(self):
        """The chosen model, loaded (cached); files that cannot be loaded rerun the page, which then falls back."""
        from seqviz.files import CheckpointError

        try:
            model = cache.model(self.ref)
        except (CheckpointError, OSError, ValueError) as e:  # CheckpointError is a ValueError
            # Run the page again: the picker then reports it and falls back, as it does for a model it loads.
            st.session_state.setdefault(FAILED, {})[(self.ref.path, self.ref.key)] = e
            st.rerun()
        self.slot.caption(found_text(self.ref))
        return model

    def finish(self) -> None:
        """After the page's charts: the sidebar says what was found. A checkpoint shipping the page's views is loaded
        on the background worker (``appkit.cache.complete``): the run ends with its charts, and the visitor's next
        move finds the model loaded or loading; any other is loaded now (a failure reruns the page, to fall back)."""
        if self.ref.ships_views:
            self.slot.caption(found_text(self.ref))
            cache.complete(cache.model, self.ref)
        else:
            self.open()

    def info(self):
        """The model's config, tokenizer and card (``appkit.cache.info``), without loading it when its checkpoint
        ships the page's first views; otherwise the model is opened now (a failure makes the picker fall back)."""
        if not self.ref.ships_views:
            self.open()
        return cache.info(self.ref)


def deferred_picker(model_type: str, prefer: str | None = None, needs: str | None = None) -> Picked | None:
    """``checkpoint_picker`` that checks the choice (it exists, is of this page's type) but does not load its model:
    a page can draw what it has without it (shipped results) before it calls ``Picked.open()``, and so before torch
    is imported (2-3 s on the 2-core server). A model that then fails to load makes ``open()`` run the page again,
    where the picker reports it and falls back to another checkpoint."""
    return _pick(model_type, None, prefer, load=False, needs=needs)


def _pick(model_type: str, limit: int | None, prefer: str | None, load: bool,
          needs: str | None = None, uploads: bool = True) -> Picked | None:
    from seqviz.files import CheckpointError

    shipped = list_checkpoints(model_type)
    st.sidebar.subheader(_("Checkpoint"))
    repo = st.session_state.get(HUB, {}).pop(model_type, None)
    if repo:
        _download(model_type, repo, st.sidebar)
    # set only by the visitor's actions (and a link's ?<model_type>= or ?<model_type>_folder=)
    chosen = _store().get(model_type) or folder_link.linked(model_type)
    choice = chosen or _default(model_type, prefer, needs)
    explicit = chosen is not None or st.query_params.get(model_type) == getattr(choice, "label", None)
    error = st.session_state.get(ERRORS, {}).pop(model_type, None)
    if error:
        st.error(_("Could not use that checkpoint: {error}").format(error=error))
    if choice is None:
        _widgets(model_type, None, shipped, uploads)
        st.info(_("No {model_type} checkpoint is available. Load one from the sidebar "
                  "(a local folder, an upload or a Hub repo id).").format(model_type=model_type))
        return None
    # Open first (falling back if need be), then draw the widgets from what is really in use.
    tried = set()
    while True:
        try:
            ref = _open(choice, model_type, limit, load)
            break
        except (CheckpointError, OSError, ValueError) as e:  # CheckpointError is a ValueError
            st.error(error_lead(e, _("Could not load {label}:").format(label=choice.label)))
            tried.add(choice.path)
            _store().pop(model_type, None)
            # Fall back to the first shipped checkpoint that has not failed yet.
            choice = next((Choice("Shipped", c.path, c.name) for c in shipped if c.path not in tried), None)
            if choice is None:
                _widgets(model_type, None, shipped, uploads)
                st.info(_("No usable {model_type} checkpoint; load another one from the sidebar.").format(
                    model_type=model_type))
                return None
            st.info(_("Showing the shipped checkpoint {label} instead.").format(label=choice.label))
    # A visitor's choice (a link's included, or the fallback after a failure) follows them to the next page
    # of this kind and goes into the URL; a page's own default (``prefer``) does neither.
    explicit = explicit or bool(tried)
    if explicit:
        _store()[model_type] = choice
    _widgets(model_type, choice, shipped, uploads)
    if choice.source == "Shipped" and explicit:
        st.query_params[model_type] = choice.label
    else:
        st.query_params.pop(model_type, None)  # only when there (MutableMapping.pop)
    folder_link.keep(model_type, choice if explicit else None)
    st.sidebar.caption(_("Using **{label}** ({source}).").format(
        label=choice.label, source=_(SOURCE_NAMES[choice.source])))
    picked = Picked(ref, st.sidebar.empty())
    if load:
        picked.slot.caption(found_text(ref))
    return picked


# ------------------------------------------------------------------ word vectors (the word2vec pages)
VECTOR_FILE = "seqviz.vector_file"  # (name, bytes) of the vector file uploaded on a word2vec page


def _on_vector_file() -> None:
    upload = st.session_state["w2v_file"]
    if upload is None:  # cleared by the visitor (a page switch draws an empty box without calling this)
        st.session_state.pop(VECTOR_FILE, None)
    else:
        st.session_state[VECTOR_FILE] = (upload.name, upload.getvalue())


def word_vectors():
    """The word2vec pages' sidebar: how many words a vector file gives, the checkpoint picker, and a word2vec, GloVe
    or fastText file to open instead, kept for the session's word2vec pages until it is cleared or dropped. Returns
    (ref, vectors), or None (after an ``st.info``) when there are none."""
    import hashlib

    from seqviz.files import CheckpointError
    from seqviz.word2vec.formats import MAX_UPLOAD_BYTES, MAX_WORDS_READ

    ref = checkpoint_picker("word2vec", limit=int(st.session_state.get("w2v_limit", 100_000)), uploads=False)
    wv = cache.model(ref) if ref is not None else None
    st.sidebar.file_uploader(_("Upload a word2vec, GloVe or fastText vector file (.bin, .txt, .vec; ≤ {mb} MB)").format(
        mb=MAX_UPLOAD_BYTES >> 20), type=["bin", "txt", "vec"], key="w2v_file", on_change=_on_vector_file)
    upload_hint(st.sidebar, MAX_UPLOAD_BYTES >> 20)
    limit = int(st.sidebar.number_input(  # under the Checkpoint heading, beside the box it applies to
        _("Words to read from a vector file"), 1_000, MAX_WORDS_READ, 100_000, 10_000, key="w2v_limit",
        persist_state="session", help=_("Only the most frequent N words (the first N rows of a word2vec, GloVe or "
                                        "fastText file) are read; a large file is never read whole. Shipped "
                                        "checkpoints are read whole.")))
    if VECTOR_FILE not in st.session_state:
        return None if wv is None else (ref, wv)
    name, data = st.session_state[VECTOR_FILE]
    digest = hashlib.sha1(data).hexdigest()
    try:
        wv = cache.uploaded_vectors(digest, data, name, limit)
    except CheckpointError as e:
        st.session_state.pop(VECTOR_FILE)  # not in use: the other pages keep the checkpoint
        st.error(error_lead(e, _("Could not read that vector file:")))
        return None if wv is None else (ref, wv)
    ref = ModelRef(name, digest, "word2vec", limit=limit, family="word2vec", label=name, source="Upload")
    cache.hold(ref, wv)  # the views find the upload by this ref
    st.sidebar.caption(_("Using **{name}** ({n:,} words × {dim}).").format(name=name, n=len(wv), dim=wv.dim))
    if st.session_state.get("w2v_file") is None and st.sidebar.button(_("Back to the checkpoint"), key="w2v_drop"):
        st.session_state.pop(VECTOR_FILE)  # uploaded on another page: this page's box is empty
        st.rerun()
    return ref, wv
