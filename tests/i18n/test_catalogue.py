"""The zh catalogue: it loads, covers every string the sources mark, and keeps placeholders intact."""

from __future__ import annotations

import re

from appkit.i18n import _, language, ngettext
from seqviz.text import LOCALE_DIR, catalogue, gettext_in
from tests.i18n.catalogue import entries, extracted, po
from tests.i18n.completeness import untranslated

PLACEHOLDER = re.compile(r"\{[^{}]*\}|%(?:\([^)]*\))?[sdfr]")


def test_catalogue_loads_and_translates():
    assert catalogue("zh").gettext("Could not load this checkpoint:") == "无法加载该检查点："
    assert gettext_in("zh", "forget gate unknown to the catalogue") == "forget gate unknown to the catalogue"
    assert catalogue("zh") is catalogue("zh"), "parsed once per process"
    assert gettext_in("en", "gate") == "gate"


def test_underscore_follows_the_language():
    assert _("gate") == "gate"  # outside a Streamlit run: English
    with language("zh"):
        assert _("gate") == "门"
        assert ngettext("{n} token", "{n} tokens", 3).format(n=3) in ("3 tokens", "3 词元")
    assert _("gate") == "gate"


def test_every_marked_string_has_a_chinese_translation():
    """Run `pybabel extract` + `pybabel update` (seqviz/locale/README.md) and fill in the msgstr."""
    have = entries("zh")
    missing = sorted(m for m in extracted() if not have.get(m))
    assert not missing, f"{len(missing)} message(s) without a zh translation: {missing[:20]}"
    fuzzy = sorted(m.id for m in po("zh") if m.id and m.fuzzy)
    assert not fuzzy, f"fuzzy (unchecked) translations: {fuzzy[:20]}"


def test_catalogue_holds_no_message_the_sources_dropped():
    stale = sorted(set(entries("zh")) - extracted())
    assert not stale, f"run pybabel update (seqviz/locale/README.md); no longer in the sources: {stale[:20]}"


def test_template_matches_the_sources():
    from babel.messages.pofile import read_po

    with (LOCALE_DIR / "seqviz.pot").open("rb") as f:
        template = {m.id[0] if isinstance(m.id, tuple) else m.id for m in read_po(f) if m.id}
    assert template == set(extracted()), "run pybabel extract (seqviz/locale/README.md)"


def test_translations_keep_placeholders_and_say_no_english():
    for msgid, msgstr in entries("zh").items():
        assert sorted(PLACEHOLDER.findall(msgid)) == sorted(PLACEHOLDER.findall(msgstr)), (msgid, msgstr)
    # A translation that still reads as English is a forgotten one (acronyms, formulas, units pass).
    left = untranslated(entries("zh").values())
    assert not left, left
