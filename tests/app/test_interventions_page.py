"""The Switch units off page's two tabs through AppTest: the numbers they quote are the library views'."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import ROOT


@pytest.fixture
def small_corpus(monkeypatch):
    """No corpus folder: the held-out sample comes from the shipped passage (fast)."""
    from seqviz.introspect import projection

    monkeypatch.setattr(projection, "SHAKESPEARE", ROOT / "no-such-folder")


def run(query: dict) -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / "interventions.py"), default_timeout=60)
    at.query_params.update(query)
    at.run()
    assert not at.exception, at.exception
    return at


def captions(at) -> str:
    return " ".join(c.value for c in at.caption)


def test_switching_units_off_quotes_the_view_s_numbers_against_random_units(tiny_only, small_corpus):
    import seqviz
    from seqviz.views import interventions as iv

    at = run({"recurrent_lm": "tiny-lstm", "iv_tab": "Switch units off"})
    assert len(at.get("vega_lite_chart")) == 1  # the text; the held-out sample only when asked
    at.toggle(key="units_off_heldout").set_value(True).run()
    assert len(at.get("vega_lite_chart")) == 3  # the text, the kinds of character, the characters hurt most
    model = seqviz.load(tiny_only / "tiny-lstm")
    text = tuple(model.tokenizer.encode(at.text_area(key="units_text").value).ids)
    k = min(iv.OPENING_K, model.config.d_hidden // 2)  # issue 51: it opens on the units whose removal hurts most
    assert at.radio(key="units_off_pick").value == "most" and at.slider(key="units_off_k").value == k
    view = iv.switch_off_text(model, text, pick="most", k=k, span=(0, len(text)))
    assert view.facts["units"] == ", ".join(map(str, sorted(iv.harm_ranking(model, text, "layers.0.c")["unit"][:k])))
    assert f"Units {view.facts['units']} of the cell state c in layer 0, whose removal alone hurts this text most, " \
           "set to 0 over tokens" in captions(at)
    assert f"{view.facts['mean_delta']:+.3f} nats per token" in captions(at)
    assert f"against {view.facts['mean_delta_random']:+.3f} for {k} random units" in captions(at)
    at.radio(key="units_off_pick").set_value("one").run()
    at.number_input(key="units_off_unit").set_value(5).run()
    at.radio(key="units_off_how").set_value("mean").run()
    at.slider(key="units_off_span").set_value((3, 20)).run()
    assert not at.exception and \
        "Unit 5 of the cell state c in layer 0, set to its mean over held-out text over tokens 3–20" in captions(at)
    at.segmented_control(key="units_off_state").set_value("h").run()
    assert not at.exception and "Unit 5 of the hidden state h in layer 0, set to" in captions(at)


def test_switching_off_a_plain_rnn_offers_no_memory_ranking_and_bad_spans_say_why(tiny_only, small_corpus):
    at = run({"recurrent_lm": "tiny-rnn", "iv_tab": "Switch units off"})
    assert at.radio(key="units_off_pick").options == ["those whose removal hurts most here (top k)", "one unit",
                                                      "k random units"]
    at.slider(key="units_off_span").set_value((4, 4)).run()
    assert not at.exception and any("span of at least one token" in i.value for i in at.info)


def test_patching_quotes_the_kl_of_the_view(tiny_only, small_corpus):
    import seqviz
    from seqviz.views import interventions as iv

    at = run({"recurrent_lm": "tiny-gru", "iv_tab": "Patch a state"})
    assert len(at.get("vega_lite_chart")) == 1
    model = seqviz.load(tiny_only / "tiny-gru")
    a, b = (tuple(model.tokenizer.encode(t).ids) for t in (iv.PATCH_TARGET, iv.PATCH_SOURCE))
    view = iv.patch_next(model, a, b, pick="top", k=1)
    assert f"KL(after ‖ before) of the next character {view.facts['kl']:.4f} nats" in captions(at)
    at.text_area(key="units_patch_target").input("").run()
    assert not at.exception and any("Type both texts" in i.value for i in at.info)
    at.text_area(key="units_patch_target").input("H").run()
    assert not at.exception and any("at least two tokens" in i.value for i in at.info)


def test_both_tabs_speak_chinese_and_an_old_link_to_them_on_single_units_opens_them(tiny_only, small_corpus):
    from tests.app.test_links import open_link

    at = open_link("units.py", {"lang": "zh", "recurrent_lm": "tiny-lstm", "units_tab": "Switch units off",
                                "units_off_heldout": "true"})
    assert "个随机单元为" in captions(at) and "Units" not in captions(at)
    at = open_link("units.py", {"lang": "zh", "recurrent_lm": "tiny-lstm", "units_tab": "Patch a state"})
    assert "下一个字符分布的 KL" in captions(at)


def test_the_language_model_page_switches_its_longest_memories_off(tiny_only, small_corpus):
    import seqviz
    from seqviz.views import interventions as iv

    at = AppTest.from_file(str(ROOT / "pages" / "language_model.py"), default_timeout=60)
    at.query_params.update({"recurrent_lm": "tiny-lstm"})
    at.run()
    assert not at.exception and not any("random unit" in c for c in captions(at).split("."))  # off at first
    at.toggle(key="lm_off").set_value(True).run()
    at.slider(key="lm_off_k").set_value(2).run()
    assert not at.exception, at.exception
    model = seqviz.load(tiny_only / "tiny-lstm")
    ids = tuple(model.tokenizer.encode(at.text_area(key="lm_text").value).ids)
    view = iv.switch_off_text(model, ids, pick="top", k=2)
    assert f"Units {view.facts['units']} of the cell state c in layer 0, whose memory lasts longest here, set to 0" \
        in captions(at)
    assert f"{view.facts['mean_delta']:+.3f} nats per token, against {view.facts['mean_delta_random']:+.3f}" in captions(at)
    at = AppTest.from_file(str(ROOT / "pages" / "language_model.py"), default_timeout=60)
    at.query_params.update({"recurrent_lm": "tiny-rnn"})
    at.run()
    assert not at.exception and any("no gate that keeps its state" in i.value for i in at.info)


def test_the_language_model_section_speaks_chinese(tiny_only, small_corpus):
    from tests.app.test_links import open_link

    at = open_link("language_model.py", {"lang": "zh", "recurrent_lm": "tiny-lstm", "lm_off": "true"})
    assert "记忆在此保持最久" in captions(at) and "layers.0" not in captions(at)
