"""What the server does before visitors come: import what its pages need, on start and on the background worker.

``streamlit run app.py`` finds the ``st.App`` that ``app.py`` defines when imported as a module and calls
``lifespan`` before it answers its first request, so a visitor opening a shared link waits for nothing but the
page: torch, pandas, Altair and the app's own modules are imported already (~1.5 s of the server's two cores).
"""

from __future__ import annotations

import ast
import gc
import importlib
import os
import threading
from contextlib import asynccontextmanager
from pathlib import Path

from appkit import background

ROOT = Path(__file__).resolve().parents[1]
# Heavy libraries every model page needs, in import order: torch alone is ~2-3 s of CPU on the 2-core server.
WARM_MODULES = ("torch", "safetensors.torch", "pandas", "altair")
# What the server imports before its first request, besides: transformers' model machinery (every transformers
# checkpoint's class imports it: the shipped Mamba's, a Hub encoder-decoder's), 3 s of CPU a visitor's first
# transformers model would otherwise wait for. Not on the background worker: a library call outside a run (a test
# beside AppTest's worker) importing transformers meanwhile finds its lazy module half made.
SERVER_MODULES = ("transformers.modeling_utils",)
TORCH_THREADS = int(os.environ.get("SEQVIZ_TORCH_THREADS", "1"))  # the app's tensors are small: one thread each
_warm_lock = threading.Lock()
_warm_future = None


def _import_heavy() -> None:
    for name in WARM_MODULES:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a warm-up must never fail: the page imports it again and reports
            return
        if name == "torch":
            import torch

            torch.set_num_threads(TORCH_THREADS)  # as _load does, before any model runs
            # Loading builds the network on the meta device and allocates it with to_empty
            # (seqviz.checkpoints.materialize); the first such call imports torch's symbolic-shape
            # machinery and sympy: do it here, on a throwaway cell.
            with torch.device("meta"):
                cell = torch.nn.GRU(2, 2)
            cell.to_empty(device="cpu")
    # The objects the imports made live as long as the process: out of the cyclic collector's sight,
    # a full collection walks only what the app made since.
    gc.freeze()


def warm_up():
    """Import the heavy libraries on the background worker, once per process (a later call returns its Future).

    ``app.py`` calls it after the first run, and each later run waits for it first (``warmed``). Only
    third-party modules are imported there (never seqviz or appkit ones), so the worker and a page
    importing our modules never wait on each other's module locks.
    """
    global _warm_future
    with _warm_lock:
        if _warm_future is None:
            _warm_future = background.submit(_import_heavy)
        return _warm_future


def warmed() -> None:
    """Wait for the warm-up, if it was started and is still importing (a no-op once it is done)."""
    future = _warm_future
    if future is not None and not future.cancelled():
        future.exception()  # waits; a failed warm-up is the page's to report when it imports the module


def fast_altair() -> None:
    """Build this process's Altair charts without Altair's debug mode (call it before any chart is built).

    In debug mode (Altair's default) every schema object validates itself against the Vega-Lite
    schema when it is made, a third of the time a chart builder takes. Every builder's output is
    validated in tests/charts instead.
    """
    from altair.utils.schemapi import disable_debug_mode

    disable_debug_mode()


def imported_by(script: Path, anywhere: bool = False) -> list[str]:
    """The modules a script imports (``import a.b``, ``from a.b import c``) at its top level, or ``anywhere``."""
    names: dict[str, None] = {}
    tree = ast.parse(script.read_text(encoding="utf-8"))
    for node in ast.walk(tree) if anywhere else tree.body:
        if isinstance(node, ast.Import):
            names.update(dict.fromkeys(alias.name for alias in node.names))
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names[node.module] = None
    return list(names)


def warm() -> None:
    """Import what app.py's run imports and what every page imports at its top level, then the heavy libraries
    (and ``SERVER_MODULES``); parse every language's catalogue; read every shipped checkpoint's results; leave
    Streamlit's pages/-folder mode (every run goes through app.py's navigation; see appkit/__init__.py)."""
    from appkit import leave_pages_folder_mode
    from appkit.cache import list_checkpoints

    pages = sorted((ROOT / "pages").glob("*.py"))
    for name in dict.fromkeys([*imported_by(ROOT / "app.py", anywhere=True), *(n for p in pages for n in imported_by(p))]):
        importlib.import_module(name)
    leave_pages_folder_mode()
    from seqviz.text import LANGUAGES, catalogue

    for lang in LANGUAGES:  # parsed here, not inside a first visitor's run
        catalogue(lang)
    warm_up().result()  # on the app's background worker, as a later warm-up would be; waited for here
    for name in SERVER_MODULES:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a page that needs it imports it again and reports
            pass
    from seqviz.results import ships

    for shipped in list_checkpoints():  # the zoo's listing, and each folder's results read once (1-2 MB of JSON)
        ships(shipped.path)


@asynccontextmanager
async def lifespan(_app):
    """``warm`` at the start; at the end (SIGTERM, Ctrl+C) the background task still running is finished first.

    uvicorn shuts the server down gracefully, then raises the signal again for its default effect, so the process
    ends by SIGTERM (status -15) or, on Ctrl+C, with click's "Aborted!" (status 1), after this has run."""
    warm()
    try:
        yield
    finally:
        background.shutdown()
