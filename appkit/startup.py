"""What the server does before visitors come: import what its pages need, on start and on the background worker.

``streamlit run app.py`` finds the ``st.App`` that ``app.py`` defines when imported as a module and calls
``lifespan`` before it answers its first request, so a visitor opening a shared link waits for nothing but the
page: torch, pandas, Altair and the app's own modules are imported already (~1.5 s of the server's two cores).
"""

from __future__ import annotations

import importlib
from contextlib import asynccontextmanager
from pathlib import Path

from seqviz import background

ROOT = Path(__file__).resolve().parents[1]


def warm() -> None:
    """Import what app.py's run imports and what every page imports at its top level, then the heavy libraries
    (``seqviz.background.warm_up``, ``server_modules``); parse every language's catalogue; read every shipped
    checkpoint's results; leave Streamlit's pages/-folder mode (every run goes through app.py's navigation; see appkit/__init__.py)."""
    from appkit import leave_pages_folder_mode
    from appkit.cache import list_checkpoints
    from seqviz.text import LANGUAGES, catalogue

    scripts = [(ROOT / "app.py", True), *((page, False) for page in sorted((ROOT / "pages").glob("*.py")))]
    for name in dict.fromkeys(n for script, anywhere in scripts for n in background.imported_by(script, anywhere)):
        importlib.import_module(name)
    leave_pages_folder_mode()
    for lang in LANGUAGES:  # parsed here, not inside a first visitor's run
        catalogue(lang)
    background.warm_up().result()  # on the app's background worker, as a later warm-up would be; waited for here
    background.server_modules()
    from seqviz.results import ships

    for shipped in list_checkpoints():  # the zoo's listing, and each folder's results read once (1-2 MB of JSON)
        ships(shipped.path)


@asynccontextmanager
async def lifespan(_app):
    """``warm`` at the start; at the end (SIGTERM, Ctrl+C) the background task still running is finished first
    (uvicorn shuts down gracefully, then raises the signal again: the process ends by SIGTERM, status -15, or on
    Ctrl+C with click's "Aborted!", status 1, after this has run)."""
    warm()
    try:
        yield
    finally:
        background.shutdown()
