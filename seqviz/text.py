"""The library's one hook for translation: views write English msgids through ``_``; an app installs its own.

``install(fn)`` makes ``_`` call ``fn`` in this process (the app installs its gettext, which follows each
visitor's language); ``with translator(fn): ...`` overrides it in this thread or context (a CLI, a
test). Without either, ``_`` returns the English. ``N_`` marks a msgid defined at import time,
translated later with ``_``. babel.cfg extracts both from ``seqviz/views``.
"""

from __future__ import annotations

import contextvars
from contextlib import contextmanager

_translate: contextvars.ContextVar = contextvars.ContextVar("seqviz_translate", default=None)
_installed = None


def _(message: str) -> str:
    """``message`` (an English msgid) in the installed translator's language, else as it is."""
    fn = _translate.get() or _installed
    return message if fn is None else fn(message)


def install(fn) -> None:
    """Translate ``_`` through ``fn`` (``str -> str``) in this process; None: English again."""
    global _installed
    _installed = fn


def N_(message: str) -> str:
    """Mark ``message`` for extraction without translating it (a constant defined at import time)."""
    return message


@contextmanager
def translator(fn):
    """Translate ``_`` through ``fn`` (``str -> str``) inside the block."""
    token = _translate.set(fn)
    try:
        yield
    finally:
        _translate.reset(token)
