"""The sidebar checkpoint picker, shared by every page that needs a model.

The choice is kept per model_type in ``st.session_state["seqviz.choice"]`` (not a widget
key, so it survives page switches) and changes only when the user acts: picks a shipped
checkpoint, enters a folder path, uploads files or types a Hub repo id. A shipped choice
also goes into the URL (``?recurrent_lm=<name>``) so a copied link reopens it. Any
failure shows the CheckpointError message and falls back to a shipped checkpoint.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from appkit.cache import checkpoint_roots, list_checkpoints, load_model

SOURCES = ("Shipped", "Local folder", "Upload", "Hub")
STORE, ERRORS, UPLOADS = "seqviz.choice", "seqviz.errors", "seqviz.uploads"


@dataclass(frozen=True)
class Choice:
    source: str  # one of SOURCES
    path: str  # what load_model opens
    label: str  # shown to the user


def _store() -> dict:
    return st.session_state.setdefault(STORE, {})


def _fail(model_type: str, error: Exception) -> None:
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
    from seqviz.checkpoints import CheckpointError, resolve
    from seqviz.hf_seq2seq import resolve_hf

    repo = (st.session_state[key] or "").strip()
    if not repo:
        return
    try:
        with st.spinner(f"Downloading {repo} from the Hub..."):
            # seq2seq: transformers encoder-decoders also need their tokenizer files
            path = resolve_hf(repo) if model_type == "seq2seq" else resolve(repo)
    except CheckpointError as e:
        _fail(model_type, f"{e}. Downloading from the Hub needs a network connection; without one, "
                          "use a local folder or an upload.")
        return
    _store()[model_type] = Choice("Hub", str(path), repo)


def _load_checked(path: str, model_type: str):
    """load_model, refusing a checkpoint of another model_type (a word2vec folder on an LM page)."""
    from seqviz.checkpoints import CheckpointError

    p = Path(path).expanduser()
    config = p / "config.json"
    if config.is_file():
        found = _config_type(config)
        if found != model_type:
            raise CheckpointError(path, f"this is a {found} checkpoint; this page needs a {model_type} one")
    elif p.is_file() and model_type != "recurrent_lm":
        raise CheckpointError(path, f"a bare weight file loads as a recurrent_lm; this page needs a {model_type}")
    return load_model(path)


def _config_type(config: Path) -> str:
    import json

    from seqviz.hf_seq2seq import model_family

    try:
        data = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return "recurrent_lm"  # unreadable: let the loader give the exact error
    return model_family(data) if isinstance(data, dict) else "recurrent_lm"  # transformers enc-dec: seq2seq


def _restore(key: str, value) -> None:
    """Put a widget's value back after a page switch (Streamlit drops unrendered widget state)."""
    if key not in st.session_state:
        st.session_state[key] = value


def current_choice(model_type: str) -> Choice | None:
    """What the picker for ``model_type`` currently points at (None: nothing available)."""
    return _store().get(model_type) or _default(model_type)


def checkpoint_picker(model_type: str):
    """Draw the picker in the sidebar and return the chosen model (cached, shared, read-only).

    Returns None (after an ``st.info``) when no checkpoint of this type is available.
    """
    from seqviz.checkpoints import CheckpointError, check_allowed

    shipped = list_checkpoints(model_type)
    choice = current_choice(model_type)
    prefix = f"picker.{model_type}"
    bar = st.sidebar
    bar.subheader("Checkpoint")
    _restore(f"{prefix}.source", choice.source if choice else ("Shipped" if shipped else "Local folder"))
    source = bar.radio("Source", SOURCES, key=f"{prefix}.source", horizontal=True,
                       help="Where the model comes from. The choice is kept when you switch pages.")
    if source == "Shipped":
        if shipped:
            names = [c.name for c in shipped]
            _restore(f"{prefix}.shipped", choice.label if choice and choice.source == "Shipped" else names[0])
            if st.session_state[f"{prefix}.shipped"] not in names:
                st.session_state[f"{prefix}.shipped"] = names[0]
            bar.selectbox("Shipped checkpoint", names, key=f"{prefix}.shipped",
                          on_change=_on_shipped, args=(model_type, f"{prefix}.shipped"))
        else:
            bar.caption(f"No shipped {model_type} checkpoint in this copy of seqviz.")
    elif source == "Local folder":
        bar.text_input("Checkpoint folder (on the server)", key=f"{prefix}.folder",
                       placeholder="checkpoints/<folder>", on_change=_on_folder, args=(model_type, f"{prefix}.folder"))
    elif source == "Upload":
        bar.file_uploader("Zipped folder, or weights + spec JSON", key=f"{prefix}.upload",
                          type=["zip", "safetensors", "pt", "pth", "bin", "json"], accept_multiple_files=True,
                          on_change=_on_upload, args=(model_type, f"{prefix}.upload"))
    else:
        bar.text_input("Hub repo id", key=f"{prefix}.hub", placeholder="user/model",
                       help="Downloaded only when you type one; needs a network connection.",
                       on_change=_on_hub, args=(model_type, f"{prefix}.hub"))

    error = st.session_state.get(ERRORS, {}).pop(model_type, None)
    if error:
        st.error(f"Could not use that checkpoint: {error}")
    if choice is None:
        st.info(f"No {model_type} checkpoint is available. Load one from the sidebar "
                "(a local folder, an upload or a Hub repo id).")
        return None
    tried = set()
    while True:
        try:
            if choice.source == "Local folder":  # a typed server path: only under the allowed folders
                check_allowed(choice.path, checkpoint_roots())
            model = _load_checked(choice.path, model_type)
            break
        except (CheckpointError, OSError, ValueError) as e:
            st.error(f"Could not load {choice.label}: {e}")
            tried.add(choice.path)
            _store().pop(model_type, None)
            # Fall back to the first shipped checkpoint that has not failed yet.
            fallback = next((Choice("Shipped", c.path, c.name) for c in shipped if c.path not in tried), None)
            if fallback is None:
                st.info(f"No usable {model_type} checkpoint; load another one from the sidebar.")
                return None
            st.info(f"Showing the shipped checkpoint {fallback.label} instead.")
            choice = fallback
    if choice.source == "Shipped":
        st.query_params[model_type] = choice.label
    elif model_type in st.query_params:
        del st.query_params[model_type]
    bar.caption(f"Using **{choice.label}** ({choice.source.lower()}).")
    return model
