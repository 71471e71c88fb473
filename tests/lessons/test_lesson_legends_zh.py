"""In Chinese, a lesson chart's legend shows no English: every series a step's chart colours, dashes or
shapes by is translated (tokens, words, model names and numbers excepted), as the lesson page draws it."""

from __future__ import annotations

import re

import pytest

from appkit import lessons as app_lessons
from appkit.i18n import language
from seqviz.lessons.load import lessons

LEGENDS = ("color", "fill", "stroke", "strokeDash", "shape")
STEPS = [(lid, i, step) for lid, lesson in lessons().items() for i, step in enumerate(lesson.steps)]


def legend_fields(node, found=None):
    """{field: its legend's labelExpr or ""} of the fields a spec's legends list (encoding channels in LEGENDS,
    in any layer)."""
    found = {} if found is None else found
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "encoding":
                for channel in LEGENDS:
                    enc = value.get(channel)
                    if isinstance(enc, dict) and enc.get("field") and enc.get("legend", {}) is not None:
                        found[enc["field"]] = found.get(enc["field"]) or (enc.get("legend") or {}).get("labelExpr", "")
            elif key != "datasets":
                legend_fields(value, found)
    elif isinstance(node, list):
        for value in node:
            legend_fields(value, found)
    return found


@pytest.mark.parametrize("lid, i, step", STEPS, ids=lambda x: x if isinstance(x, (str, int)) else "")
def test_a_lesson_charts_legend_reads_in_chinese(lid, i, step):
    with language("zh"):
        spec, numbers, _table = app_lessons.live_view(step, step.control.default)
        shown = app_lessons.shown_spec(spec, present=True)
    models = set(step.models) | set(step.cards)
    english = set()
    for field, relabel in legend_fields(shown).items():
        for rows in shown.get("datasets", {}).values():
            for row in rows:
                value = row.get(field)
                if (isinstance(value, str) and re.search(r"[A-Za-z]{2,}", value)
                        and not re.search(r"[\u4e00-\u9fff]", value) and not any(m in value for m in models)
                        and not re.search(rf'"{re.escape(value)}": "[^"]*[\u4e00-\u9fff]', relabel)):  # shown as that
                    english.add((field, value))
    assert not english, (lid, i + 1, sorted(english)[:8])
