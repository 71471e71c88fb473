"""Attention studies: temperature re-softmax, BLEU by hand, alignment hit rate by hand, charts."""

import math
from collections import Counter

import altair as alt
import pytest
import torch

from seqviz.charts.attention import alignment_heatmap, bleu_vs_length, target_weights_bar
from seqviz.introspect.attention import (alignment_frame, alignment_hit_rate, alignment_matrix_csv, bleu,
                                         bleu_by_length, bleu_curves, resoftmax, tokenize_source, translate_text)


def test_resoftmax_is_softmax_of_scores_over_temperature():
    torch.manual_seed(0)
    e = torch.randn(2, 3, 5)
    e[1, :, 3:] = float("-inf")  # padding
    for T in (0.1, 0.5, 1.0, 2.0, 5.0):
        expected = torch.exp(e / T) / torch.exp(e / T).sum(-1, keepdim=True)
        assert torch.allclose(resoftmax(e, T), expected, atol=1e-6)
        assert (resoftmax(e, T)[1, :, 3:] == 0).all()


def test_temperature_limits_pointer_and_average():
    e = torch.tensor([[0.3, 2.0, -1.0, 1.9, float("-inf")]])
    cold, hot = resoftmax(e, 1e-3), resoftmax(e, 1e4)
    assert torch.allclose(cold, torch.tensor([[0.0, 1.0, 0.0, 0.0, 0.0]]), atol=1e-6)
    assert torch.allclose(hot[0, :4], torch.full((4,), 0.25), atol=1e-3) and hot[0, 4] == 0
    with pytest.raises(ValueError, match="positive"):
        resoftmax(e, 0)


def _hand_bleu(hyps, refs):
    """Papineni et al. 2002, corpus level, uniform weights up to 4-grams, brevity penalty."""
    logs = []
    for n in range(1, 5):
        match = total = 0
        for h, r in zip(hyps, refs):
            hc = Counter(tuple(h[i:i + n]) for i in range(len(h) - n + 1))
            rc = Counter(tuple(r[i:i + n]) for i in range(len(r) - n + 1))
            match += sum(min(c, rc[g]) for g, c in hc.items())
            total += max(len(h) - n + 1, 0)
        logs.append(math.log(match / total))
    c, r = sum(map(len, hyps)), sum(map(len, refs))
    bp = 1.0 if c > r else math.exp(1 - r / c)
    return 100 * bp * math.exp(sum(logs) / 4)


def test_bleu_matches_the_formula_on_a_hand_example():
    hyps = [["i", "ate", "an", "apple", "in", "the", "park", "yesterday"], ["he", "will", "sleep", "at", "home"]]
    refs = [["i", "ate", "an", "apple", "at", "the", "park", "yesterday"],
            ["he", "will", "sleep", "at", "home", "tomorrow"]]
    assert bleu(hyps, refs) == pytest.approx(_hand_bleu(hyps, refs), abs=1e-6)
    assert bleu(refs, refs) == pytest.approx(100.0)


def test_alignment_hit_rate_counts_argmax_by_hand(make_model, pairs):
    model = make_model()
    sample = pairs[:12]
    result = alignment_hit_rate(model, sample, batch_size=5)
    hits = n = 0
    for p in sample:
        w = model.trace([list(p.src)], tgt=[list(p.tgt)])["decoder.attn.weights"][0]
        for t, (a, content) in enumerate(zip(p.align, p.content())):
            if content:
                n += 1
                hits += int(w[t].argmax()) == a
    assert result["content_words"] == n and result["content_hit_rate"] == pytest.approx(round(hits / n, 4))


def test_bleu_by_length_has_one_row_per_filled_bucket_and_all(make_model, pairs):
    table = bleu_by_length(make_model(), pairs[:30])
    assert table["bucket"].iloc[-1] == "all" and table["n"].iloc[-1] == 30
    assert table["n"].iloc[:-1].sum() == 30
    assert ((0 <= table["bleu"]) & (table["bleu"] <= 100)).all()


def test_typed_sentence_keeps_unknown_words_and_aligns(make_model):
    model = make_model()
    tok = tokenize_source(model, "我昨天在月球吃了")
    assert "月球" in tok["unknown"] and "月球" in tok["pieces"]
    result = translate_text(model, "我昨天在月球吃了")
    frame = alignment_frame(result["trace"], 0, temperature=0.5, source=result["pieces"])
    assert set(frame["source"]) >= {"月球", "我"}
    sums = frame.groupby("t")["weight"].sum()
    assert torch.allclose(torch.tensor(sums.values), torch.ones(len(sums), dtype=torch.float64), atol=1e-5)
    csv = alignment_matrix_csv(frame)
    assert csv.splitlines()[0].split(",")[1] == "0:我"
    with pytest.raises(ValueError, match="no tokens"):
        translate_text(model, "  ")


def test_charts_are_built_from_frames(make_model, pairs):
    model = make_model()
    tr = model.trace([list(pairs[0].src)], tgt=[list(pairs[0].tgt)])
    frame = alignment_frame(tr, 0)
    assert isinstance(alignment_heatmap(frame, selected=1), alt.LayerChart)
    spec = target_weights_bar(frame, 1).to_dict()
    assert spec["layer"][0]["mark"]["type"] == "bar"
    with pytest.raises(ValueError, match="step 99"):
        target_weights_bar(frame, 99)
    curves = bleu_curves({"a": {"bleu_by_length": [{"bucket": "1-10", "min_len": 1, "n": 3, "bleu": 50.0, "exact": 0.3},
                                                   {"bucket": "all", "min_len": 1, "n": 3, "bleu": 50.0, "exact": 0.3}]}})
    assert list(curves["bucket"]) == ["1-10"]
    assert bleu_vs_length(curves).to_dict()["mark"]["type"] == "line"
    two = bleu_curves({name: {"bleu_by_length": [{"bucket": "1-10", "min_len": 1, "n": 3, "bleu": b, "exact": 0.3}]}
                       for name, b in (("with attention", 90.0), ("without", 40.0))})
    scale = bleu_vs_length(two).to_dict()["encoding"]["color"]["scale"]  # the lesson's pair: blue, vermillion
    assert (scale["domain"], scale["range"]) == (["with attention", "without"], ["#0072B2", "#D55E00"])


def _frame(weights: list[list[float]], targets: list[str], sources: list[str]):
    import pandas as pd

    return pd.DataFrame([{"t": t, "target": targets[t], "target_label": f"{t}:{targets[t]}", "j": j,
                          "source": sources[j], "source_label": f"{j}:{sources[j]}", "weight": w}
                         for t, row in enumerate(weights) for j, w in enumerate(row)])


def test_default_target_is_the_sharpest_content_word_farthest_from_the_diagonal():
    from seqviz.introspect.attention import default_target, target_stats

    src = ["昨天", "我", "吃", "苹果"]
    weights = [[0.01, 0.97, 0.01, 0.01],  # i -> 我: |1/3 - 0/5| = 0.33 off the diagonal
               [0.01, 0.01, 0.97, 0.01],  # ate -> 吃: |2/3 - 1/5| = 0.47
               [0.25, 0.25, 0.25, 0.25],  # the (uniform)
               [0.96, 0.01, 0.02, 0.01],  # yesterday -> 昨天: about as sharp, |0 - 3/5| = 0.6
               [0.00, 0.00, 0.00, 1.00],  # "." one-hot but punctuation
               [1.00, 0.00, 0.00, 0.00]]  # <eos> one-hot but special
    stats = target_stats(_frame(weights, ["i", "ate", "the", "yesterday", ".", "<eos>"], src))
    assert default_target(stats) == 3
    assert list(stats["word"]) == [True, True, True, True, False, False]
    assert list(stats["content"]) == [True, True, False, True, False, False]
    assert stats.loc[2, "entropy"] == pytest.approx(math.log(4)) and stats.loc[2, "fraction"] == pytest.approx(1.0)
    assert list(stats["diffuse"]) == [False, False, True, False, False, False]
    # no content word at all: still a word, never the special
    only = target_stats(_frame([[0.5, 0.5, 0, 0], [1, 0, 0, 0]], ["the", "<eos>"], src))
    assert default_target(only) == 0


def test_temperature_summary_calls_near_uniform_only_within_1_5_over_n():
    from seqviz.introspect.attention import temperature_summary, target_stats

    src = ["a", "b", "c", "d"]
    flat = target_stats(_frame([[0.30, 0.25, 0.25, 0.20], [0.26, 0.26, 0.24, 0.24]], ["x", "y"], src))
    s = temperature_summary(flat)
    assert s["n"] == 4 and s["uniform"] == 0.25 and s["limit"] == 0.375 and s["verdict"] == "uniform"
    assert (s["max_lo"], s["max_hi"]) == (0.26, 0.30)
    spread = target_stats(_frame([[0.40, 0.20, 0.20, 0.20], [0.26, 0.26, 0.24, 0.24]], ["x", "y"], src))
    assert temperature_summary(spread)["verdict"] == "spread"  # 0.40 > 1.5/4


def test_known_source_words_leave_out_the_specials(make_model):
    from seqviz.introspect.attention import known_source_words

    model = make_model(attention=True)
    assert known_source_words(model) == model.src_vocab.tokens[4:]
    assert not set(known_source_words(model)) & {"<pad>", "<unk>", "<bos>", "<eos>"}


def test_source_axis_angles_cjk_labels_only_when_a_column_is_narrower_than_the_widest_label():
    from seqviz.charts.attention import label_pixels, source_axis

    assert label_pixels("昨天") == 22 and label_pixels("ab") == pytest.approx(13.2)
    labels = ["0:我", "1:昨天", "2:火车站"]
    axis = source_axis(labels).to_dict()
    need = 3 * 11 + 6  # 火车站: three wide characters at 11 px, plus a margin
    assert axis["labelAngle"] == {"expr": f"width / 3 < {need} ? -45 : 0"}
    assert axis["labelAlign"] == {"expr": f"width / 3 < {need} ? 'right' : 'center'"}
    # the lesson's 9 source units on a 390 px phone (about 280 px of plot): 31 px a column < 22 + 6 px? no,
    # but 公园/昨天 need 28 px and 火车站 39: the angle switches on exactly where a label would overflow
    nine = source_axis([f"{j}:{w}" for j, w in enumerate("我 昨天 在 火车站 吃 了 一 个 苹果".split())]).to_dict()
    assert nine["labelAngle"]["expr"] == f"width / 9 < {need} ? -45 : 0" and 280 / 9 < need < 1000 / 9
