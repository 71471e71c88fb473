"""The catalogue as tests see it: the zh .po parsed by Babel, and the msgids extracted from the sources now."""

from __future__ import annotations

from functools import lru_cache

from seqviz.text import po_path
from tests.i18n.completeness import ROOT


@lru_cache(maxsize=None)
def po(lang: str = "zh"):
    from babel.messages.pofile import read_po

    with po_path(lang).open("rb") as f:
        return read_po(f, locale=lang, domain="seqviz")


def entries(lang: str = "zh") -> dict[str, str]:
    """msgid -> msgstr of the catalogue's live (not obsolete) messages; plural ids keyed by the singular."""
    out = {}
    for m in po(lang):
        if not m.id:
            continue
        key = m.id[0] if isinstance(m.id, tuple) else m.id
        out[key] = m.string[0] if isinstance(m.string, tuple) else m.string
    return out


@lru_cache(maxsize=None)
def extracted() -> frozenset[str]:
    """The msgids ``pybabel extract -F babel.cfg .`` finds in the sources right now (in process)."""
    from babel.messages.extract import extract_from_dir
    from babel.messages.frontend import parse_mapping_cfg

    with (ROOT / "babel.cfg").open(encoding="utf-8") as f:
        method_map, options_map = parse_mapping_cfg(f)
    ids = set()
    for _file, _line, message, _comments, _context in extract_from_dir(str(ROOT), method_map, options_map):
        ids.add(message[0] if isinstance(message, tuple) else message)
    return frozenset(ids)
