"""The textbook's terms: seqviz/locale/glossary.csv (English -> the seeds' Chinese) against the catalogue."""

from __future__ import annotations

import csv
import re

from seqviz.text import LOCALE_DIR
from tests.i18n.catalogue import entries

GLOSSARY = LOCALE_DIR / "glossary.csv"


def glossary() -> list[dict]:
    with GLOSSARY.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def term_pattern(term: str) -> re.Pattern:
    """The term as a phrase: any case, spaces or hyphens between its words, an optional plural."""
    words = [re.escape(w) for w in re.split(r"[\s-]+", term.strip())]
    return re.compile(r"(?<![\w])" + r"[\s-]+".join(words) + r"(?:s|es)?(?![\w])", re.IGNORECASE)


def test_glossary_is_well_formed():
    rows = glossary()
    assert len(rows) >= 40
    terms = [r["en"].strip().lower() for r in rows]
    assert len(terms) == len(set(terms)), "a term is listed twice"
    assert all(r["zh"].strip() for r in rows)


def test_glossary_follows_the_seeds_on_the_terms_the_brief_names():
    zh = {r["en"]: r["zh"] for r in glossary()}
    assert zh["forget gate"] == "遗忘门" and zh["cell state"] == "细胞状态"
    assert zh["gradient clipping"] == "梯度裁剪" and zh["teacher forcing"] == "教师强制"
    assert zh["exposure bias"] == "曝光偏差"  # the seeds' word, not 暴露偏差
    assert zh["beam search"] == "束搜索" and zh["perplexity"] == "困惑度"


def test_catalogue_uses_the_glossary_terms():
    """Wherever a msgid says a glossary term, its translation says the glossary's Chinese."""
    problems = []
    for row in glossary():
        pattern = term_pattern(row["en"])
        for msgid, msgstr in entries("zh").items():
            # a placeholder's name ({token}) is not a word shown, nor a key in a code span (`gate`)
            said = re.sub(r"\{[^{}]*\}|`[^`]*`", " ", msgid)
            if pattern.search(said) and row["zh"].lower() not in msgstr.lower():
                problems.append(f"{row['en']!r} -> {row['zh']!r}: {msgid!r} is translated {msgstr!r}")
    assert not problems, "\n".join(problems)


def test_term_pattern_matches_phrases_and_plurals():
    assert term_pattern("forget gate").search("Forget-gate product")
    assert term_pattern("gate").search("two gates")
    assert not term_pattern("gate").search("aggregate")
    assert not term_pattern("loss").search("glossary")
