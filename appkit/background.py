"""The app's background work: one owned executor, its queued tasks cancelled by each new run, joined at exit.

A daemon thread still inside torch when the interpreter shuts down aborts the process
("terminate called without an active exception", exit 134; CPython issue 87135). The workers of a
``concurrent.futures`` executor are joined before the interpreter finalises, so a task that is
running then finishes first, and ``shutdown`` drops the ones not yet started.
"""

from __future__ import annotations

import atexit
import threading
from concurrent.futures import Future, ThreadPoolExecutor

_lock = threading.Lock()
_executor: ThreadPoolExecutor | None = None
_pending: set[Future] = set()


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
    with _lock:
        waiting = list(_pending)
    return sum(f.cancel() for f in waiting)


@atexit.register
def shutdown() -> None:
    """Drop the tasks not started and wait for the running one (also called by the atexit hook)."""
    global _executor
    with _lock:
        executor, _executor = _executor, None
    if executor is not None:
        executor.shutdown(wait=True, cancel_futures=True)
