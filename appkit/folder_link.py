"""A model opened from a local folder kept in the URL (``?recurrent_lm_folder=<path>``), so a copied link reopens it.

The sidebar's picker (``appkit.sidebar``) writes the folder of the model in use there, as the visitor typed it,
and reads it back on a visitor's first run of a page of that kind. The link is only a request: the folder goes
through the same rules as a typed one (``ModelRef.chosen``: typed paths switched on, under the allowed folders,
never a hidden one, a checkpoint of the page's kind), and one that fails them opens the page's default model
with a sentence in the visitor's language saying why (a link outlives the folder it names, or is sent to
another server).
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from appkit.i18n import N_, _
from seqviz.refs import Choice, checkpoint_roots

# What is wrong with a linked folder, one full sentence each (the picker then shows the page's default model).
NOT_ALLOWED = N_("The link's folder {path} is not one this server may open, so the page shows its default model.")
GONE = N_("The link's folder {path} no longer exists on this server, so the page shows its default model.")
UNUSABLE = N_("The link's folder {path} could not be opened here ({problem}), so the page shows its default model.")


def param(model_type: str) -> str:
    """The URL parameter holding a page kind's local folder: ``recurrent_lm_folder``."""
    return f"{model_type}_folder"


def linked(model_type: str) -> Choice | None:
    """The local folder the URL names for ``model_type``, checked as a typed one would be; None when there is none,
    or (after a warning saying why, the parameter dropped) when it cannot be used."""
    path = st.query_params.get(param(model_type))
    if not path:
        return None
    choice = Choice("Local folder", path, Path(path).name or path)
    problem = _problem(choice, model_type)
    if problem is None:
        return choice
    st.query_params.pop(param(model_type), None)
    st.warning(problem)
    return None


def _problem(choice: Choice, model_type: str) -> str | None:
    """Why ``choice`` cannot be opened on a page of ``model_type``, in the visitor's language (None: it can)."""
    from seqviz.files import CheckpointError, check_allowed, shown
    from seqviz.text import PHRASES

    path = "`" + shown(choice.path).replace("`", "'") + "`"  # the URL's text, never read as markdown
    try:
        check_allowed(choice.path, checkpoint_roots())
    except CheckpointError:
        return _(NOT_ALLOWED).format(path=path)
    if not Path(choice.path).expanduser().exists():
        return _(GONE).format(path=path)
    try:
        choice.ref(model_type)
    except (CheckpointError, OSError, ValueError) as e:  # CheckpointError is a ValueError
        problem = str(getattr(e, "problem", e))
        for phrase in PHRASES:  # the loaders' commonest problems in the visitor's language (appkit.i18n.error_lead)
            problem = problem.replace(phrase, _(phrase))
        return _(UNUSABLE).format(path=path, problem=problem.replace("`", "'"))
    return None


def keep(model_type: str, choice: Choice | None) -> None:
    """Write the folder of ``choice`` (the visitor's own choice in use, or None) into the URL, or drop it."""
    if choice is not None and choice.source == "Local folder":
        if st.query_params.get(param(model_type)) != choice.path:
            st.query_params[param(model_type)] = choice.path
    else:
        st.query_params.pop(param(model_type), None)  # only when there (MutableMapping.pop)
