"""``seqviz.tables.readable``: the one way a page shows a table (human names in the visitor's language, rounded
numbers, "—" for nothing), and the decoding, exposure and BLEU tables through it."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from seqviz.charts.exposure import strategy_label
from seqviz.tables import MISSING, PERCENT, readable
from seqviz.text import gettext_in, in_language
from seqviz.views import attention as att_views
from seqviz.views import decoding as dec_views

RAW = pd.DataFrame([  # decoding.strategy_table's shape: k is None for sampling, so pandas holds it as floats
    {"strategy": "greedy", "k": 1, "bleu": 96.2012345, "exact": 0.8125, "ms_per_sentence": 3.14159},
    {"strategy": "beam k=4", "k": 4, "bleu": 97.25, "exact": 0.875, "ms_per_sentence": 12.0},
    {"strategy": "sample T=0.5", "k": None, "bleu": float("nan"), "exact": 0.5, "ms_per_sentence": 2.96}])


def test_numbers_are_rounded_fractions_are_percentages_and_nothing_is_a_dash():
    t = readable(RAW, **dec_views.STRATEGY_TABLE)
    assert list(t.columns) == ["strategy", "beam size k", "BLEU", "exact match", "ms per sentence"]
    assert list(t["BLEU"]) == [f"{RAW.bleu[0]:.1f}", "97.2", MISSING] == ["96.2", "97.2", "—"]
    assert list(t["beam size k"]) == ["1", "4", "—"]  # a whole column of floats reads as integers
    assert list(t["exact match"]) == [f"{100 * v:.1f}%" for v in RAW.exact] == ["81.2%", "87.5%", "50.0%"]
    assert list(t["strategy"]) == ["greedy", "beam k=4", "sampling T=0.5"]
    assert not t.isin(["None", "nan", "NaN"]).any().any()


def test_in_zh_every_column_name_and_strategy_is_the_catalogues():
    with in_language("zh"):
        t = readable(RAW, **dec_views.STRATEGY_TABLE)
    names = [gettext_in("zh", n) for n in dec_views.STRATEGY_TABLE["columns"].values()]
    assert list(t.columns) == names
    assert all(n != e for n, e in zip(names, dec_views.STRATEGY_TABLE["columns"].values()) if e != "BLEU")
    with in_language("zh"):
        assert list(t[names[0]]) == [strategy_label(s) for s in RAW.strategy]
    assert list(t[names[0]]) == ["贪心", "束搜索 k=4", "采样 T=0.5"]


def test_digits_per_column_and_a_named_column_the_table_lacks():
    t = readable(pd.DataFrame({"a": [1.23456, None], "b": [0.5, 0.25]}), {"a": "a", "b": "b"},
                 digits={"a": 3, "b": PERCENT})
    assert list(t["a"]) == ["1.235", "—"] and list(t["b"]) == ["50.0%", "25.0%"]
    with pytest.raises(KeyError, match="no column c"):
        readable(pd.DataFrame({"a": [1.0]}), {"c": "c"})


def test_the_exposure_summary_spells_each_run_out():
    facts = {"sentences": 200, "tf_token_error": 0.0412, "fr_token_error": 0.1234, "exposure_gap": 0.0822,
             "fr_exact": 0.5}
    t = readable(dec_views.held_out_summary({"m": facts}).data, **dec_views.SUMMARY_TABLE)
    assert list(t.iloc[0]) == ["m", "200", "4.1%", "12.3%", "8.2%", "50.0%"]
    assert not any("TF" in c or "FR" in c for c in t.columns)


def test_the_stored_bleu_table_reads_one_decimal_and_a_dash_where_a_card_has_no_bucket():
    stored = pd.DataFrame({"1-5": [99.123, 88.0], "6-10": [float("nan"), 70.55]}, index=["a", "b"])
    stored.index.name = "model"
    t = att_views.stored_bleu_text(stored)
    assert list(t.columns) == ["model", "1-5", "6-10"]
    assert t.values.tolist() == [["a", "99.1", "—"], ["b", "88.0", f"{70.55:.1f}"]]
    m = readable(pd.DataFrame([{"bucket": "all", "min_len": 0, "n": 12, "bleu": 55.555, "exact": 0.25}]),
                 **att_views.MEASURED_TABLE)
    assert m.values.tolist() == [["all", "12", "55.6", "25.0%"]] and not math.isnan(55.555)
