"""The decoding strategies' bar charts label every bar: each band holds its label and Vega drops none."""

from __future__ import annotations

import json

import altair as alt
import pandas as pd

from seqviz.charts import exposure as CE

STRATEGIES = ["greedy", "beam k=1", "beam k=2", "beam k=4", "beam k=8", "sample T=0.5", "sample T=1"]


def test_every_strategy_is_a_labelled_bar_in_both_charts():
    frame = pd.DataFrame({"strategy": STRATEGIES, "k": [1, 1, 2, 4, 8, None, None], "bleu": range(7),
                          "exact": [0.1] * 7, "ms_per_sentence": [1.5] * 7})
    with alt.data_transformers.disable_max_rows():
        spec = json.loads(json.dumps(CE.strategy_chart(frame).to_dict()))
    rows = next(iter(spec["datasets"].values()))
    shown = [r["strategy"] for r in rows]
    assert shown == [CE.strategy_label(s) for s in STRATEGIES] and len(set(shown)) == 7
    for part in spec["hconcat"]:
        axis = part["encoding"]["y"]["axis"]
        assert part["encoding"]["y"]["sort"] == shown  # every category on the axis, in the table's order
        # Vega hides a label that overlaps its neighbour unless labelOverlap is off; the band is taller than
        # the label's font, so no two labels touch either
        assert axis["labelOverlap"] is False and axis["labelLimit"] == 0
        assert part["height"]["step"] >= axis["labelFontSize"] + 6
