"""The Exposure bias and Decoding pages' charts in Chinese: their series (teacher-forced / free-running, gold
prefix / forced / right / wrong, beam / finished, greedy / beam k) and their titles are translated where the
chart is drawn; in English the same charts show the English names (so the check can fail)."""

from __future__ import annotations

import pandas as pd
import pytest

from seqviz.charts import exposure as charts
from seqviz.text import in_language
from tests.i18n.completeness import chart_texts, untranslated
from tests.lessons.test_lesson_legends_zh import legend_fields

TOKENS = ["the", "cat", "sat", "on", "mat", "dog"]  # data: the tokens a chart is labelled with


def _charts():
    steps = pd.DataFrame({"t": range(5), "gold": TOKENS[:5], "gold_logp_tf": [-0.1, -0.5, -1.0, -0.2, -0.3],
                          "gold_logp_fr": [-0.1, -0.5, -3.0, -2.0, -2.5], "tf_token": TOKENS[:5],
                          "fr_token": ["the", "cat", "dog", "on", "mat"], "kl": [0.0, 0.1, 0.5, 0.3, 0.2],
                          "h_dist": [0.0, 0.1, 0.9, 1.1, 1.2], "emitted": ["the", "cat", "dog", "on", "cat"],
                          "wrong": [False, False, True, False, True]})
    curves = pd.DataFrame({"position": [0, 5, 0, 5], "distance": [1, 2, 1, 2], "error_rate": [0.1, 0.2, 0.1, 0.4],
                           "p_error": [0.2, 0.3, 0.2, 0.5], "run": ["teacher-forced"] * 2 + ["free-running"] * 2,
                           "tokens": [10, 10, 10, 10], "sentences": [4, 4, 4, 4], "model": ["m"] * 4})
    nodes = pd.DataFrame({"step": [0, 1, 1, 2], "rank": [0, 0, 1, 0], "token": ["the", "cat", "dog", "<eos>"],
                          "logprob": [-0.1, -0.3, -1.2, -0.4], "parent_rank": [None, 0, 0, 0],
                          "finished": [False, False, False, True], "gold": [True, True, False, False]})
    columns = pd.DataFrame({"order": range(6), "gold": ["the", "cat", "sat", "on", "mat", ""],  # aligned: a skip
                            "emitted": ["the", "dog", "", "on", "mat", "cat"],
                            "op": ["prefix", "forced", "skip", "match", "match", "ins"],
                            "h_dist": [0.0, 0.0, float("nan"), 1.1, 1.2, 0.9]})
    strategies = pd.DataFrame({"strategy": ["greedy", "beam k=4"], "k": [1, 4], "bleu": [20.0, 22.5],
                               "ms_per_sentence": [3.0, 9.0]})
    return {"log p": charts.gold_logprob_chart(steps, 2), "divergence": charts.divergence_chart(steps),
            "injection": charts.injection_chart(columns), "error rate": charts.error_rate_chart(curves),
            "after error": charts.after_error_chart(curves), "beam tree": charts.beam_tree_chart(nodes),
            "strategies": charts.strategy_chart(strategies)}


def shown_words(spec: dict) -> list[str]:
    """The chart's titles and the series names its legends list (the values of each legend's field)."""
    texts = chart_texts(spec)
    for field in legend_fields(spec):
        for rows in spec.get("datasets", {}).values():
            texts += [str(row[field]) for row in rows if isinstance(row.get(field), str)]
    return texts


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_exposure_charts_name_their_series_and_axes_in_the_language(lang):
    with in_language(lang):
        found = {name: untranslated(shown_words(chart.to_dict()), allow=TOKENS) for name, chart in _charts().items()}
        bars = [row["strategy"] for rows in _charts()["strategies"].to_dict()["datasets"].values() for row in rows]
    if lang == "zh":
        assert not any(found.values()), {k: v for k, v in found.items() if v}
        assert bars == ["贪心", "束搜索 k=4"]  # the strategies are the bars' axis labels
    else:  # the English names are there to be translated
        assert {"teacher-forced", "gold prefix", "finished"} <= {w for v in found.values() for w in v}
        assert bars == ["greedy", "beam k=4"]
