"""The exposure-bias page through AppTest on tiny random-weight seq2seq checkpoints: numbers, input, URL."""

from __future__ import annotations

import pytest

from seqviz.text import gettext_in
from appkit.registry import PAGES
from seqviz.decoding import beam_search
from seqviz.introspect import exposure as ex
from seqviz.seq2seq.checkpoints import save_heldout
from seqviz.seq2seq.model import Seq2Seq
from seqviz.seq2seq.data import make_splits
from seqviz.checkpoints import save_weights
from tests.app.test_pages import open_clean
from tests.seq2seq.conftest import make_model

PAGE = next(p for p in PAGES if p.path == "exposure_bias.py")
LM_PAGE = next(p for p in PAGES if p.path == "exposure_bias_lm.py")
DECODING = next(p for p in PAGES if p.path == "decoding.py")
SRC, REF = "我 昨天 在 公园 吃 了", "i ate in the park yesterday"


@pytest.fixture(scope="module")
def tiny_pair_dir(tmp_path_factory):
    """A teacher-forcing and a scheduled-sampling stand-in (random weights) with a snapshot each."""
    root = tmp_path_factory.mktemp("exposure-checkpoints")
    splits = make_splits("zh-en", 300, 10, 30, seed=0, max_clauses=3)
    for name, seed in (("zh-en-small-teacher-forcing", 1), ("zh-en-small-scheduled-sampling", 2)):
        model = make_model(seed=seed, scale=0.8, pairs=splits.train + splits.test)
        model.save_pretrained(root / name, {"name": name, "task": "zh-en", "training": f"seed {seed}",
                                            "training_steps": 10})
        save_heldout(splits.test, root / name, "zh-en")
        (root / name / "snapshots").mkdir()
        save_weights(make_model(seed=seed + 10, pairs=splits.train + splits.test),
                     root / name / "snapshots" / "step-5.safetensors")
    return root


@pytest.fixture
def tiny_pair(tiny_pair_dir, monkeypatch):
    monkeypatch.setenv("SEQVIZ_CHECKPOINTS", str(tiny_pair_dir))
    return tiny_pair_dir


def page(query=None):
    return open_clean(PAGE, query)


def metric(at, label):
    return next(m for m in at.metric if m.label.startswith(label)).value


def test_numbers_on_the_page_are_the_library_s(tiny_pair):
    at = page({"eb_src": SRC, "eb_ref": REF, "eb_k": "3", "eb_beam": "3"})
    model = Seq2Seq.from_pretrained(tiny_pair / "zh-en-small-teacher-forcing")
    run = ex.compare_translation(model, SRC, REF.split())
    div = run["first_divergence"]
    assert metric(at, "First divergence") == ("none" if div is None else f"position {div} ({run['table'].gold[div]!r})")
    tab = run["table"]
    assert metric(at, "Wrong tokens, TF / FR") == f"{int(tab.wrong_tf.sum())} / {int(tab.wrong_fr.sum())}"
    assert at.slider(key="eb_k").value == 3  # the first tab: the injection
    inj = ex.inject_error(model, SRC, REF.split(), 3, ex.second_choice(model, SRC, REF.split(), 3))
    assert metric(at, "Forced") == f"{inj['injected']!r} at 3"
    assert metric(at, "Wrong tokens after it") == str(inj["errors_after"])
    assert len(at.get("vega_lite_chart")) == 3  # the two runs and the injection; the other tabs are not drawn
    at = open_clean(DECODING, {"eb_src": SRC, "eb_ref": REF, "eb_beam": "3"})
    assert at.slider(key="eb_beam").value == 3
    best = " ".join(model.tgt_vocab.strings(beam_search(model, [SRC], k=3).best[0]))
    assert any(f"**Beam k=3:** {best}" in m.value for m in at.markdown)
    # the held-out view compares both checkpoints: one summary row each
    at = page({"eb_src": SRC, "eb_ref": REF, "eb_tab": "Over the held-out set"})
    summary = next(d.value for d in at.dataframe if "token error, free-running" in d.value.columns)
    assert sorted(summary["model"]) == ["zh-en-small-scheduled-sampling", "zh-en-small-teacher-forcing"]
    from seqviz.views import decoding as views  # each run spelled out, its rate as the library's, in percent

    own = views.held_out(model, "by_position").facts
    row = summary[summary["model"] == "zh-en-small-teacher-forcing"].iloc[0]
    assert row["token error, free-running"] == f"{100 * own['fr_token_error']:.1f}%"
    assert row["token error, teacher-forced"] == f"{100 * own['tf_token_error']:.1f}%"


def test_moving_the_controls_and_a_snapshot(tiny_pair):
    at = page({"eb_src": SRC, "eb_ref": REF})
    at.slider(key="eb_k").set_value(4).run()
    word = at.selectbox(key="eb_token").options[5]
    at.selectbox(key="eb_token").select(word).run()
    assert not at.exception
    assert metric(at, "Forced") == f"{word!r} at 4"
    at.sidebar.selectbox(key="eb_stage").select("5").run()
    assert not at.exception and "snapshot at step 5" in " ".join(c.value for c in at.caption)


@pytest.mark.parametrize("src,ref", [("", ""), ("   ", "x"), ("😀 \u202eabc\x00", "they"), ("我" * 2000, "i")])
def test_bad_input_gives_a_message_not_a_traceback(tiny_pair, src, ref):
    at = page({"eb_src": "我", "eb_ref": "i"})
    at.text_input(key="eb_src").set_value(src)
    at.text_input(key="eb_ref").set_value(ref)
    at.run()
    assert not at.exception, at.exception
    assert at.info or at.metric


def test_language_model_page(tiny_only):
    at = open_clean(LM_PAGE, {"ebl_prompt": "10", "ebl_n": "20"})
    assert metric(at, "First divergence")
    longest = at.slider(key="ebl_n").max  # the page bounds the continuation by the text's length
    at.slider(key="ebl_n").set_value(longest).run()
    assert not at.exception and (at.metric or any("need" in i.value for i in at.info))


def test_a_shorter_reference_after_a_longer_one_pulls_the_position_back(tiny_pair):
    at = page({"eb_src": SRC, "eb_ref": REF})
    at.slider(key="eb_k").set_value(len(REF.split())).run()  # the last position of the long reference
    at.text_input(key="eb_ref").set_value("i ate").run()
    assert not at.exception, at.exception
    assert at.slider(key="eb_k").value == 2 and at.slider(key="eb_k").max == 2
    assert metric(at, "Forced").endswith("at 2")


def test_the_held_out_view_is_read_from_the_shipped_study(tiny_pair, monkeypatch):
    """With exposure.json beside the weights the page decodes no held-out pair (first visit, stage switch)."""
    root = tiny_pair
    for name in ("zh-en-small-teacher-forcing", "zh-en-small-scheduled-sampling"):
        ex.write_study(root / name, n=1000, strategy_pairs=20)

    def no_decoding(*args, **kwargs):
        raise AssertionError("the held-out set was decoded although exposure.json holds it")

    monkeypatch.setattr(ex, "error_matrices", no_decoding)
    try:
        at = page({"eb_src": SRC, "eb_ref": REF, "eb_tab": "Over the held-out set"})
        summary = next(d.value for d in at.dataframe if "FR token error" in d.value.columns)
        stored = ex.read_study(root / "zh-en-small-teacher-forcing", None, 1000)["summary"]
        row = summary[summary["model"] == "zh-en-small-teacher-forcing"].iloc[0]
        assert row["FR token error"] == stored["fr"]["token_error_rate"]
        at.sidebar.selectbox(key="eb_stage").select("5").run()
        assert not at.exception, at.exception
    finally:
        for name in ("zh-en-small-teacher-forcing", "zh-en-small-scheduled-sampling"):
            (root / name / "exposure.json").unlink()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_link_to_the_strategies_tab_opens_the_decoding_page(tiny_pair, lang):
    """The Exposure bias page's Decoding strategies tab is a page now: an old link (made in either language) opens
    it, with the link's sentence and beam size."""
    from tests.app.test_links import open_link

    other = {"en": "zh", "zh": "en"}[lang]
    at = open_link("exposure_bias.py", {"lang": lang, "eb_tab": gettext_in(other, "Decoding strategies"),
                                        "eb_src": SRC, "eb_ref": REF, "eb_beam": "3"})
    assert at.title[0].value == gettext_in(lang, "Decoding strategies")
    assert at.slider(key="eb_beam").value == 3 and at.text_input(key="eb_src").value == SRC
    assert any(m.value.startswith("**Beam k=3:**" if lang == "en" else "**束搜索 k=3：**") for m in at.markdown)


def test_the_strategies_over_the_held_out_set_are_the_librarys(tiny_pair):
    at = open_clean(DECODING, {"eb_src": SRC, "eb_ref": REF})
    at.toggle(key="eb_strat").set_value(True).run()
    assert not at.exception and not at.error, at.exception
    table = next(d.value for d in at.dataframe if "strategy" in d.value.columns)
    assert "greedy" in set(table["strategy"]) and len(at.get("vega_lite_chart")) == 2  # the beam tree, the strategies
    # issue 51: human column names, rounded numbers, "—" for a sampler's k, never "None"
    assert list(table.columns) == ["strategy", "beam size k", "BLEU", "exact match", "ms per sentence"]
    from seqviz.views import decoding as views

    model = Seq2Seq.from_pretrained(tiny_pair / "zh-en-small-teacher-forcing")
    lib = views.strategies(model, n=200, ks=(1, 2, 4, 8)).data
    assert list(table["BLEU"]) == [f"{b:.1f}" for b in lib["bleu"]]
    assert list(table["exact match"]) == [f"{100 * e:.1f}%" for e in lib["exact"]]
    assert list(table["beam size k"]) == ["1", "1", "2", "4", "8", "—", "—"]
    assert list(table["strategy"])[-2:] == ["sampling T=0.5", "sampling T=1"]
    at.query_params["lang"] = "zh"
    at.run()
    zh = next(d.value for d in at.dataframe if "策略" in d.value.columns)
    assert list(zh.columns) == ["策略", "束宽 k", "BLEU", "完全一致", "每句耗时（ms）"] and "贪心" in set(zh["策略"])
