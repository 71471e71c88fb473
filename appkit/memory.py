"""Hand freed memory back to the operating system after each script run (glibc only; a no-op elsewhere).

glibc's malloc keeps memory that torch and numpy free in its heaps, and after the first large
frees it raises its own mmap threshold, so later large temporaries land there too: a server's
resident memory then tracks its peak, not what it holds (``benchmarks/robustness.py`` measures it).
``malloc_trim`` is cheap when there is nothing to free.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools


@functools.cache
def _libc():
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    return libc if libc is not None and hasattr(libc, "malloc_trim") else None


def release_freed_memory() -> bool:
    """``malloc_trim(0)``: return the free parts of every malloc arena; True if glibc did it."""
    libc = _libc()
    return bool(libc.malloc_trim(0)) if libc is not None else False
