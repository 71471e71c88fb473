"""A model opened from a local folder kept in the URL (``?recurrent_lm_folder=<path>``), so a copied link reopens it.

The sidebar's picker (``appkit.sidebar``) writes the folder of the model in use there, as the visitor typed it,
and reads it back on a visitor's first run of a page of that kind. The link is only a request: the folder goes
through the same rules as a typed one (``Choice.problem``: typed paths switched on, under the allowed folders,
never a hidden one, a checkpoint of the page's kind), and one that fails them opens the page's default model
with a sentence in the visitor's language saying why (a link outlives the folder it names, or is sent to
another server).
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from seqviz.refs import Choice


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
    problem = choice.problem(model_type)
    if problem is None:
        return choice
    st.query_params.pop(param(model_type), None)
    st.warning(problem)
    return None


def keep(model_type: str, choice: Choice | None) -> None:
    """Write the folder of ``choice`` (the visitor's own choice in use, or None) into the URL, or drop it."""
    if choice is not None and choice.source == "Local folder":
        if st.query_params.get(param(model_type)) != choice.path:
            st.query_params[param(model_type)] = choice.path
    else:
        st.query_params.pop(param(model_type), None)  # only when there (MutableMapping.pop)
