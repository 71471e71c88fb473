"""The server's background work: one owned executor, its queued tasks cancelled by each new run, joined at exit;
the warm-up that runs on it, and handing freed memory back to the system after each run.

A daemon thread still inside torch when the interpreter shuts down aborts the process
("terminate called without an active exception", exit 134; CPython issue 87135). The workers of a
``concurrent.futures`` executor are joined before the interpreter finalises, so a task that is
running then finishes first, and ``shutdown`` drops the ones not yet started.

Work for a visitor's next move (``when_idle``) waits until the server has nothing to serve: a page's run ends
before the browser has asked for the code of the elements it sent, and a computation holding the interpreter
then slowed that code's arrival, and the page's first chart with it.

glibc's malloc keeps memory that torch and numpy free in its heaps, and after the first large frees it raises its
own mmap threshold, so later large temporaries land there too: a server's resident memory then tracks its peak, not
what it holds (``benchmarks/robustness.py`` measures it); ``release_freed_memory`` (``malloc_trim``) gives it back.
"""

from __future__ import annotations

import ast
import atexit
import ctypes
import ctypes.util
import functools
import gc
import importlib
import os
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

_lock = threading.Lock()
_executor: ThreadPoolExecutor | None = None
_pending: set[Future] = set()

QUIET_S = 0.3  # no request answered for this long: the browser has what it asked for
PATIENCE_S = 5.0  # a server never quiet (many visitors) still gets its next moves ready
_quiet = threading.Condition()
_serving = {"in_flight": 0, "last": 0.0, "run": 0}  # HTTP requests being answered, when the last ended; run count


class Serving:
    """ASGI middleware (``app.py``'s ``st.App``): counts the HTTP requests being answered (pages, scripts, media;
    not the websocket), so ``when_idle`` work waits for them."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        with _quiet:
            _serving["in_flight"] += 1
        try:
            return await self.app(scope, receive, send)
        finally:
            with _quiet:
                _serving["in_flight"] -= 1
                _serving["last"] = time.monotonic()
                _quiet.notify_all()


def _quiet_since(run: int) -> bool:
    """Wait until no request has been answered for ``QUIET_S`` (at most ``PATIENCE_S``); False if a run began
    meanwhile (what it asked for is superseded, as ``cancel_pending`` drops a task not started) or at shutdown."""
    deadline = time.monotonic() + PATIENCE_S
    with _quiet:
        while True:
            if _serving["run"] != run:
                return False
            now = time.monotonic()
            if now >= deadline or (not _serving["in_flight"] and now - _serving["last"] >= QUIET_S):
                return True
            _quiet.wait((deadline if _serving["in_flight"] else min(deadline, _serving["last"] + QUIET_S)) - now)


def _when_quiet(run: int, fn, args):
    return fn(*args) if _quiet_since(run) else None


def when_idle(fn, *args) -> Future:
    """``submit(fn, *args)`` once the server has nothing to serve (see the module's docstring); its result is
    None if the next run or the shutdown came first."""
    return submit(_when_quiet, _serving["run"], fn, args)


def submit(fn, *args, **kwargs) -> Future:
    """Run ``fn(*args, **kwargs)`` on the app's one background worker; a failure stays in the Future."""
    global _executor
    with _lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="seqviz-background")
        future = _executor.submit(fn, *args, **kwargs)
        _pending.add(future)
    future.add_done_callback(_forget)
    return future


def _forget(future: Future) -> None:
    with _lock:
        _pending.discard(future)


def cancel_pending() -> int:
    """Cancel every task not yet started (a new run supersedes what earlier runs asked for); how many."""
    _supersede()
    with _lock:
        waiting = list(_pending)
    return sum(f.cancel() for f in waiting)


@atexit.register
def shutdown() -> None:
    """Drop the tasks not started and wait for the running one (also called by the atexit hook)."""
    global _executor
    _supersede()  # a task waiting for quiet ends now
    with _lock:
        executor, _executor = _executor, None
    if executor is not None:
        executor.shutdown(wait=True, cancel_futures=True)


def _supersede() -> None:
    with _quiet:
        _serving["run"] += 1
        _quiet.notify_all()


# ------------------------------------------------------------------ the warm-up
# Heavy libraries every model page needs, in import order: torch alone is ~2-3 s of CPU on the 2-core server.
WARM_MODULES = ("torch", "safetensors.torch", "pandas", "altair")
TORCH_THREADS = int(os.environ.get("SEQVIZ_TORCH_THREADS", "1"))  # the app's tensors are small: one thread each
_warm_lock = threading.Lock()
_warm_future: Future | None = None


def _import_heavy() -> None:
    for name in WARM_MODULES:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a warm-up must never fail: the page imports it again and reports
            return
        if name == "torch":
            import torch

            torch.set_num_threads(TORCH_THREADS)  # as a model's loading does, before any model runs
            # Loading builds the network on the meta device and allocates it with to_empty
            # (seqviz.checkpoints.materialize); the first such call imports torch's symbolic-shape
            # machinery and sympy: do it here, on a throwaway cell.
            with torch.device("meta"):
                cell = torch.nn.GRU(2, 2)
            cell.to_empty(device="cpu")
    # The objects the imports made live as long as the process: out of the cyclic collector's sight,
    # a full collection walks only what the app made since.
    gc.freeze()


# What the server imports before its first request, besides: transformers' model machinery (every transformers
# checkpoint's class imports it: the shipped Mamba's, a Hub encoder-decoder's), 3 s of CPU a visitor's first
# transformers model would otherwise wait for. Not on the background worker: a library call outside a run (a test
# beside AppTest's worker) importing transformers meanwhile finds its lazy module half made.
SERVER_MODULES = ("transformers.modeling_utils",)


def server_modules() -> None:
    """Import ``SERVER_MODULES`` in the calling thread (the server's, before its first request)."""
    for name in SERVER_MODULES:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a page that needs it imports it again and reports
            pass


def warm_up() -> Future:
    """Import the heavy libraries on the background worker, once per process (a later call returns its Future).

    The app calls it after the first run, and each later run waits for it first (``warmed``). Only third-party
    modules are imported there (never seqviz or app ones), so the worker and a page importing our modules never
    wait on each other's module locks.
    """
    global _warm_future
    with _warm_lock:
        if _warm_future is None:
            _warm_future = submit(_import_heavy)
        return _warm_future


def imported_by(script: Path, anywhere: bool = False) -> list[str]:
    """The modules a script imports (``import a.b``, ``from a.b import c``) at its top level, or ``anywhere``: what
    a server imports before its first visitor runs it."""
    names: dict[str, None] = {}
    tree = ast.parse(Path(script).read_text(encoding="utf-8"))
    for node in ast.walk(tree) if anywhere else tree.body:
        if isinstance(node, ast.Import):
            names.update(dict.fromkeys(alias.name for alias in node.names))
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names[node.module] = None
    return list(names)


def warmed() -> None:
    """Wait for the warm-up, if it was started and is still importing (a no-op once it is done)."""
    future = _warm_future
    if future is not None and not future.cancelled():
        future.exception()  # waits; a failed warm-up is the page's to report when it imports the module


# ------------------------------------------------------------------ memory
@functools.cache
def _libc():
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    return libc if libc is not None and hasattr(libc, "malloc_trim") else None


def release_freed_memory() -> bool:
    """``malloc_trim(0)``: return the free parts of every malloc arena (glibc only); True if glibc did it."""
    libc = _libc()
    return bool(libc.malloc_trim(0)) if libc is not None else False
