"""The sidebar checkpoint picker, shared by every page that needs a model; it returns a ``ModelRef``.

The choice is kept per model_type in ``st.session_state["seqviz.choice"]`` (not a widget
key, so it survives page switches) and changes only when the user acts: picks a shipped
checkpoint, types a folder or file path, uploads files or types a Hub repo id. A shipped
choice also goes into the URL (``?recurrent_lm=<name>``) so a copied link reopens it. Typed
paths open only where ``seqviz.checkpoints.check_allowed`` says (the operator can switch them
off with ``SEQVIZ_LOCAL_PATHS=0``, and the Hub with ``SEQVIZ_HUB=0``). Any failure shows the
CheckpointError message and falls back to a shipped checkpoint.

The box shows the truth. The stored choice is the only source of truth: the model is opened
first (with its fallback), then every picker widget is given its value from the stored choice
*before* it is built, on every run, clamped into the widget's options (a shipped name that is
not offered, or a choice that is not a shipped one, shows the box's placeholder, never another
model). Why: on a direct switch between two pages that both draw a widget with the same key,
Streamlit (1.67) resets the widget to its default while the key stays in st.session_state
holding the old value, so ``if key not in st.session_state: restore`` did not run and the box
showed the first option (shakespeare-char-gru, dates-attention-gru) while the page used the
stored choice; after a page without the picker the key was gone and the restore worked: the
"alternate visits" of the report. The widgets' keys are also per page
(``picker.<page>.<model_type>.<field>``, see ``widget_key``), so no widget identity or
browser-resent value is shared between pages. The source tab the user looks at (which may
differ from the choice's source while a path is being typed) is kept per model_type in
``st.session_state["seqviz.source"]``, so the next page of the same kind shows the same tab.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from appkit import models
from appkit.models import ModelRef, checkpoint_roots, list_checkpoints

SOURCES = ("Shipped", "Local folder", "Upload", "Hub")
STORE, ERRORS, UPLOADS, HUB = "seqviz.choice", "seqviz.errors", "seqviz.uploads", "seqviz.hub"
VIEW = "seqviz.source"  # model_type -> the source tab shown (shared by the pages of that kind)
NO_SHIPPED = "Choose a shipped checkpoint"  # the box's placeholder while the model in use is not a shipped one


@dataclass(frozen=True)
class Choice:
    """What the user picked, before it is checked and opened (a ``ModelRef`` then names the model)."""

    source: str  # one of SOURCES
    path: str  # what seqviz.load opens
    label: str  # shown to the user


def offered_sources() -> list[str]:
    """The sources this server allows: no typed paths with SEQVIZ_LOCAL_PATHS=0, no Hub with SEQVIZ_HUB=0."""
    from seqviz.checkpoints import local_paths_enabled
    from seqviz.hub import hub_enabled

    off = {"Local folder"} if not local_paths_enabled() else set()
    return [s for s in SOURCES if s not in off and (s != "Hub" or hub_enabled())]


def _store() -> dict:
    return st.session_state.setdefault(STORE, {})


def _fail(model_type: str, error) -> None:
    st.session_state.setdefault(ERRORS, {})[model_type] = str(error)


def _default(model_type: str) -> Choice | None:
    shipped = list_checkpoints(model_type)
    wanted = st.query_params.get(model_type)
    for c in shipped:
        if c.name == wanted:
            return Choice("Shipped", c.path, c.name)
    return Choice("Shipped", shipped[0].path, shipped[0].name) if shipped else None


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
    from seqviz.checkpoints import CheckpointError
    from seqviz.uploads import extract_upload

    files = st.session_state[key] or []
    if not files:
        return
    try:
        path = extract_upload([(f.name, f.getvalue()) for f in files])
    except CheckpointError as e:
        _fail(model_type, e)
        return
    old = st.session_state.setdefault(UPLOADS, {}).get(model_type)
    if old:
        shutil.rmtree(old, ignore_errors=True)  # one extracted upload per session and model type
    root = path if path.is_dir() else path.parent
    st.session_state[UPLOADS][model_type] = str(root)
    _store()[model_type] = Choice("Upload", str(path), ", ".join(f.name for f in files))


def _on_hub(model_type: str, key: str) -> None:
    repo = (st.session_state[key] or "").strip()
    if repo:  # downloaded in the script run, where a progress bar can be drawn
        st.session_state.setdefault(HUB, {})[model_type] = repo


def _download(model_type: str, repo: str, bar) -> None:
    """Download ``repo`` within the server's budget, with a progress bar, and make it the choice."""
    from seqviz import hub
    from seqviz.checkpoints import CheckpointError

    if not hub.is_repo_id(repo):  # never a local path: those go through the allowed-folder rule
        _fail(model_type, f"{repo!r} is not a Hub repo id (user/model)")
        return
    shown = bar.progress(0.0, text=f"Asking the Hub about {repo}...")

    def progress(done: int, total: int) -> None:
        shown.progress(min(1.0, done / max(total, 1)), text=f"Downloading {repo}: {done / 2**20:,.1f} of "
                                                            f"{total / 2**20:,.1f} MiB")

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


def _open(choice: Choice, model_type: str, limit: int | None) -> ModelRef:
    """The checked ref of a choice, its model loaded (cached); CheckpointError when it cannot be used."""
    from seqviz.checkpoints import CheckpointError, check_allowed
    from seqviz.registry import FAMILIES

    if choice.source == "Local folder":  # a typed server path: only under the allowed folders, never hidden
        check_allowed(choice.path, checkpoint_roots())
    ref = ModelRef.of(choice.path, choice.label, choice.source, limit)
    if ref.model_type != model_type:
        raise CheckpointError(choice.path, f"this is a {ref.model_type} checkpoint ({FAMILIES[ref.family].description}); "
                              f"this page needs a {model_type} one")
    models.model(ref)
    return ref


def found_text(ref: ModelRef) -> str:
    """One sentence on what the picker opened: its format and, from ``describe()``, its sizes."""
    from seqviz.registry import FAMILIES

    model = models.model(ref)
    what = FAMILIES[ref.family].description if ref.family in FAMILIES else ref.model_type
    card, info = getattr(model, "card", None) or {}, model.describe()
    if card.get("inferred"):
        return f"Found {what}: {card['inferred']}, inferred from the weight shapes."
    if ref.model_type == "recurrent_lm":
        detail = f"{info['layers']}-layer {info['cell'].upper()}, hidden {info['hidden']}, {info['vocab_size']:,} tokens"
    elif ref.model_type == "word2vec":
        detail = f"{info['words']:,} words × {info['dims']}" + (
            f" (the first {ref.limit:,} of the file)" if ref.limit and info["words"] >= ref.limit else "")
    else:
        detail = info.get("architecture") or info["model_type"]
    return f"Found {what}: {detail}."


def _widgets(model_type: str, choice: Choice | None, shipped: list) -> None:
    """Draw the picker, each widget's value first set from the stored choice (clamped into its options)."""
    bar, state = st.sidebar, st.session_state
    key = {f: widget_key(model_type, f) for f in ("source", "shipped", "folder", "upload", "hub")}
    sources = offered_sources()
    view = state.setdefault(VIEW, {})
    if view.get(model_type) not in sources:  # first visit, or switched off since it was picked
        start = choice.source if choice else ("Shipped" if shipped else sources[1])
        view[model_type] = start if start in sources else "Shipped"
    state[key["source"]] = view[model_type]
    source = bar.radio("Source", sources, key=key["source"], horizontal=True, on_change=_on_source,
                       args=(model_type, key["source"]),
                       help="Where the model comes from. The choice is kept when you switch pages.")
    if source == "Shipped":
        if shipped:
            names = [c.name for c in shipped]
            in_use = choice.label if choice and choice.source == "Shipped" else None
            state[key["shipped"]] = in_use if in_use in names else None  # None: the placeholder
            bar.selectbox("Shipped checkpoint", names, key=key["shipped"], placeholder=NO_SHIPPED,
                          on_change=_on_shipped, args=(model_type, key["shipped"]))
        else:
            bar.caption(f"No shipped {model_type} checkpoint in this copy of seqviz.")
    elif source == "Local folder":
        if choice and choice.source == "Local folder":
            state[key["folder"]] = choice.path
        bar.text_input("Checkpoint folder or file (on the server)", key=key["folder"],
                       placeholder="checkpoints/<folder>", on_change=_on_folder, args=(model_type, key["folder"]),
                       help="A checkpoint folder, a plain PyTorch state dict (folder or file) or a word-vector "
                            "file, under the app's checkpoint folders or its working folder.")
    elif source == "Upload":  # a file uploader's value cannot be set; the caption names the upload in use
        bar.file_uploader("Zipped folder, or weights + spec JSON", key=key["upload"],
                          type=["zip", "safetensors", "pt", "pth", "bin", "json"], accept_multiple_files=True,
                          on_change=_on_upload, args=(model_type, key["upload"]))
    else:
        if choice and choice.source == "Hub":
            state[key["hub"]] = choice.label
        bar.text_input("Hub repo id", key=key["hub"], placeholder="user/model",
                       help="Downloaded only when you type one, within this server's size limit; needs a network "
                            "connection.", on_change=_on_hub, args=(model_type, key["hub"]))


def checkpoint_picker(model_type: str, limit: int | None = None) -> ModelRef | None:
    """Draw the picker in the sidebar and return a ref to the chosen model (already loaded and cached).

    ``limit``: word-vector files read only their N most frequent words. Returns None (after an
    ``st.info``) when no checkpoint of this type is available.
    """
    from seqviz.checkpoints import CheckpointError

    shipped = list_checkpoints(model_type)
    st.sidebar.subheader("Checkpoint")
    repo = st.session_state.get(HUB, {}).pop(model_type, None)
    if repo:
        _download(model_type, repo, st.sidebar)
    choice = _store().get(model_type) or _default(model_type)
    error = st.session_state.get(ERRORS, {}).pop(model_type, None)
    if error:
        st.error(f"Could not use that checkpoint: {error}")
    if choice is None:
        _widgets(model_type, None, shipped)
        st.info(f"No {model_type} checkpoint is available. Load one from the sidebar "
                "(a local folder, an upload or a Hub repo id).")
        return None
    # Open first (falling back if need be), then draw the widgets from what is really in use.
    tried = set()
    while True:
        try:
            ref = _open(choice, model_type, limit)
            break
        except (CheckpointError, OSError, ValueError) as e:  # CheckpointError is a ValueError
            st.error(f"Could not load {choice.label}: {e}")
            tried.add(choice.path)
            _store().pop(model_type, None)
            # Fall back to the first shipped checkpoint that has not failed yet.
            choice = next((Choice("Shipped", c.path, c.name) for c in shipped if c.path not in tried), None)
            if choice is None:
                _widgets(model_type, None, shipped)
                st.info(f"No usable {model_type} checkpoint; load another one from the sidebar.")
                return None
            st.info(f"Showing the shipped checkpoint {choice.label} instead.")
    _store()[model_type] = choice  # what is shown is the choice: the next page of this kind opens it too
    _widgets(model_type, choice, shipped)
    if choice.source == "Shipped":
        st.query_params[model_type] = choice.label
    elif model_type in st.query_params:
        del st.query_params[model_type]
    st.sidebar.caption(f"Using **{choice.label}** ({choice.source.lower()}).")
    st.sidebar.caption(found_text(ref))
    return ref
