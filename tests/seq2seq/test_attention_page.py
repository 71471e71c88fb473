"""The attention page through AppTest, on tiny random-weight seq2seq checkpoints: numbers, input, URL."""

from __future__ import annotations

import pytest

from appkit.registry import PAGES
from seqviz.introspect.attention import alignment_hit_rate, bleu_by_length, resoftmax
from seqviz.seq2seq.checkpoints import load_seq2seq, save_heldout, save_seq2seq
from seqviz.seq2seq.data import make_splits
from tests.app.test_pages import open_clean
from tests.seq2seq.conftest import make_model

PAGE = next(p for p in PAGES if p.path == "attention.py")


@pytest.fixture(scope="module")
def tiny_seq2seq_dir(tmp_path_factory):
    """zh-en-attention-gru and zh-en-noattention-gru with random weights, real (computed) cards."""
    root = tmp_path_factory.mktemp("s2s-checkpoints")
    splits = make_splits("zh-en", 300, 10, 24, seed=0, max_clauses=3)
    for name, attention in (("zh-en-attention-gru", True), ("zh-en-noattention-gru", False)):
        model = make_model(attention=attention, pairs=splits.train + splits.test)
        card = {"name": name, "task": "zh-en", "architecture": model.config.describe(),
                "bleu_by_length": bleu_by_length(model, splits.test).to_dict(orient="records")}
        if attention:
            card["alignment"] = alignment_hit_rate(model, splits.test)
        save_seq2seq(model, root / name, card)
        save_heldout(splits.test, root / name, "zh-en")
    return root


@pytest.fixture
def tiny_s2s(tiny_seq2seq_dir, monkeypatch):
    monkeypatch.setenv("SEQVIZ_CHECKPOINTS", str(tiny_seq2seq_dir))
    return tiny_seq2seq_dir


def page(query=None):
    return open_clean(PAGE, query)


def test_translation_and_strongest_source_match_the_model(tiny_s2s):
    at = page({"sentence": "我 昨天 在 公园 吃 了", "att_temp": "0.5"})
    model = load_seq2seq(tiny_s2s / "zh-en-attention-gru")
    ids, trace = model.translate(["我 昨天 在 公园 吃 了"])
    text = " ".join(m.value for m in at.markdown)
    assert f"**Greedy translation:** {model.tgt_vocab.decode(ids[0]) or '(empty)'}" in text
    assert at.slider[0].value == 0.5
    t = int(at.selectbox(key="target_word").value.split(":")[0])
    weights = resoftmax(trace["decoder.attn.scores"][0, t, :6], 0.5)
    strongest = next(m for m in at.metric if m.label.startswith("Strongest source"))
    assert strongest.value == ["我", "昨天", "在", "公园", "吃", "了"][int(weights.argmax())]
    assert strongest.delta == f"weight {float(weights.max()):.3f}"
    assert len(at.get("vega_lite_chart")) >= 3  # heatmap, bar chart, bottleneck curves


def test_unknown_words_are_shown_and_empty_input_gets_a_message(tiny_s2s):
    at = page({"sentence": "我在月球吃了"})
    assert any("'月球'" in w.value for w in at.warning)
    assert any("`月球`" in m.value for m in at.markdown)
    at.text_input(key="sentence").input("   ").run()
    assert not at.exception and any("no tokens" in i.value for i in at.info)


def test_held_out_example_sets_the_sentence_and_shows_its_reference(tiny_s2s):
    at = page()
    box = at.selectbox(key="example")
    at = box.select(box.options[0]).run()
    assert not at.exception
    assert at.text_input(key="sentence").value.replace(" ", "") in box.options[0].replace(" ", "").split(":")[1] \
        or "…" in box.options[0]
    assert any(c.value.startswith("Reference:") for c in at.caption)


def test_no_attention_model_says_so_and_the_bottleneck_shows_both(tiny_s2s):
    at = page({"seq2seq": "zh-en-noattention-gru"})
    assert any("no attention" in i.value for i in at.info)
    frame = at.dataframe[0].value
    assert set(frame.index) == {"zh-en-attention-gru", "zh-en-noattention-gru"}
    model = load_seq2seq(tiny_s2s / "zh-en-noattention-gru")
    stored = {r["bucket"]: r["bleu"] for r in model.card["bleu_by_length"]}
    assert all(frame.loc["zh-en-noattention-gru", b] == stored[b] for b in frame.columns)
