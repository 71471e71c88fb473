"""seqviz's words in English and Simplified Chinese: the message catalogues, and the hook views translate through.

Views write English msgids through ``_``. ``install(fn)`` makes ``_`` call ``fn`` in this process (the
app installs its gettext, which follows each visitor's language); ``with translator(fn): ...``
overrides it in this thread or context (``in_language("zh")`` is one: ``seqviz precompute``, a CLI,
a test). Without either, ``_`` returns the English. ``N_`` marks a msgid defined at import time.

The catalogues are Babel ``.po`` files (``seqviz/locale/<lang>/LC_MESSAGES/seqviz.po``), compiled in
memory with ``read_po`` / ``write_mo`` the first time a process needs one, so a fresh clone needs no
build step and no ``.mo`` file can go stale (``seqviz/locale/README.md``: extraction and updates).
"""

from __future__ import annotations

import contextvars
import gettext
import io
import threading
from contextlib import contextmanager
from pathlib import Path

LANGUAGES = {"en": "English", "zh": "中文"}  # code -> the language's name in itself
SOURCE = "en"  # the msgids' language
DOMAIN = "seqviz"
LOCALE_DIR = Path(__file__).resolve().with_name("locale")
_lock = threading.Lock()
_catalogues: dict[str, gettext.NullTranslations] = {}


def po_path(lang: str) -> Path:
    return LOCALE_DIR / lang / "LC_MESSAGES" / f"{DOMAIN}.po"


def normalize(tag) -> str | None:
    """A language tag as one of ``LANGUAGES``: 'zh', 'zh-CN', 'zh_Hans_CN', 'EN-us' -> 'zh' / 'en'; else None."""
    if not isinstance(tag, str):
        return None
    code = tag.strip().replace("_", "-").split("-")[0].lower()
    return code if code in LANGUAGES else None


def catalogue(lang: str) -> gettext.NullTranslations:
    """The language's translations, parsed once per process (English: the identity)."""
    with _lock:
        if lang not in _catalogues:
            _catalogues[lang] = _compile(lang)
        return _catalogues[lang]


def _compile(lang: str) -> gettext.NullTranslations:
    if lang == SOURCE or not po_path(lang).is_file():
        return gettext.NullTranslations()
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po

    with po_path(lang).open("rb") as f:
        parsed = read_po(f, locale=lang, domain=DOMAIN)
    buffer = io.BytesIO()
    write_mo(buffer, parsed, use_fuzzy=False)  # fuzzy entries stay English until a person checks them
    buffer.seek(0)
    return gettext.GNUTranslations(buffer)

_translate: contextvars.ContextVar = contextvars.ContextVar("seqviz_translate", default=None)
_installed = None


def _(message: str) -> str:
    """``message`` (an English msgid) in the installed translator's language, else as it is."""
    fn = _translate.get() or _installed
    return message if fn is None else fn(message)


def ngettext(singular: str, plural: str, n: int) -> str:
    """The form for ``n`` (``.format(n=n)`` it afterwards) in the translator's language: through the translator's
    own ``ngettext`` (the app's ``_`` carries one, a catalogue's ``gettext`` has its catalogue's), else English's."""
    fn = _translate.get() or _installed
    plural_of = getattr(fn, "ngettext", None) or getattr(getattr(fn, "__self__", None), "ngettext", None)
    return plural_of(singular, plural, n) if plural_of is not None else singular if n == 1 else plural


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


def gettext_in(lang: str, message: str) -> str:
    """``message`` in ``lang`` whatever the reader's language (tests, exports)."""
    return catalogue(lang).gettext(message)


def in_language(lang: str):
    """``translator`` for one of ``LANGUAGES``: ``with in_language("zh"): view(...)``."""
    if lang not in LANGUAGES:
        raise ValueError(f"language must be one of {sorted(LANGUAGES)}, got {lang!r}")
    return translator(catalogue(lang).gettext)


# Lead sentences for the library's exceptions, by class name (no library import needed); the library's own message
# follows in English.
LEADS = {
    "CheckpointError": N_("Could not load this checkpoint:"),
    "ConfigError": N_("This configuration cannot describe a model:"),
    "TokenizerError": N_("This vocabulary file cannot be used:"),
    "VocabularyError": N_("Not in the vocabulary:"),
    "DataError": N_("The corpus is not available:"),
    "OSError": N_("Could not read the file:"),
}
DEFAULT_LEAD = N_("Something went wrong:")


def error_lead(error: BaseException, lead: str | None = None) -> str:
    """A translated lead sentence, then the library's English message: "无法加载该检查点：<message>".

    ``lead``: the caller's own (an English msgid marked with ``N_``, or already translated); otherwise one
    chosen by the error's class.
    """
    if lead is None:
        lead = next((LEADS[c.__name__] for c in type(error).__mro__ if c.__name__ in LEADS), DEFAULT_LEAD)
    text = _(lead)
    gap = "" if text.endswith(("：", "。", "，")) else " "
    return f"{text}{gap}{problem_text(str(error))}"


def problem_text(message: str) -> str:
    """A library message with the loaders' commonest problems (``PHRASES``) in the visitor's language; the rest
    stays English."""
    for phrase in PHRASES:
        message = message.replace(phrase, _(phrase))
    return message


# Problems the loaders state word for word (``CheckpointError(path, problem)``, ``seqviz.hub``), longest first
PHRASES = (N_("no such file or folder here"), N_("no such file or folder"))
