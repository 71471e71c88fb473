"""The Google analogies' sections chart in 中文 (issue 51): legend, measures and section names translated, no
label cut, every section labelled."""

from __future__ import annotations

import json
import re

import altair as alt
import pandas as pd

from seqviz.charts import word2vec as CW
from seqviz.text import gettext_in, in_language

NAMES = ["capital-common-countries", "capital-world", "family", "gram1-adjective-to-adverb",
         "gram6-nationality-adjective", "gram9-plural-verbs"]


def test_the_sections_chart_speaks_chinese_and_cuts_no_label():
    sections = pd.DataFrame({"section": NAMES, "questions": [10] * 6, "covered": [5] * 6, "correct": [1] * 6,
                             "accuracy": [0.2] * 6, "coverage": [0.5] * 6})
    with in_language("zh"), alt.data_transformers.disable_max_rows():
        spec = json.loads(json.dumps(CW.sections_chart(sections).to_dict()))
    rows = pd.DataFrame(next(iter(spec["datasets"].values())))
    assert set(rows["section"]) == {gettext_in("zh", n) for n in NAMES}
    assert not any(re.search(r"[a-z]{3,}", s) for s in rows["section"])  # no English word left in a name
    assert set(rows["measure"]) == {"准确率", "覆盖率"} and spec["encoding"]["color"]["title"] == "指标"
    assert set(rows["kind"]) == {"语义类", "句法类"}
    y = spec["encoding"]["y"]
    assert y["axis"]["labelLimit"] == 0 and y["axis"]["labelOverlap"] is False  # "gram6-nationalit…" was cut
    assert y["sort"] == [gettext_in("zh", n) for n in NAMES]  # every section on the axis, in the file's order
    # a value is the section's own: accuracy and coverage bars of one section carry its two numbers
    assert sorted(rows[rows["section"] == "家庭称谓"]["value"]) == [0.2, 0.5]
