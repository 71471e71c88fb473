"""Exposure-bias tables against the training loss, hand formulas and direct decoding."""

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F

from seqviz.introspect import exposure as ex
from seqviz.seq2seq.train import sequence_loss, tensorize
from seqviz.seq2seq.vocab import EOS_ID

torch.set_num_threads(1)


def test_teacher_forced_loss_is_the_training_loss(make_model, pairs):
    model = make_model(seed=1)
    for p in pairs[:5]:
        table = ex.compare_translation(model, list(p.src), list(p.tgt))["table"]
        src, smask, tin, tout, tmask = tensorize([p], model.src_vocab, model.tgt_vocab)
        with torch.no_grad():
            logits = model(src, smask, tin)  # the training forward pass, not the trace
        per_token = F.cross_entropy(logits[0], tout[0], reduction="none")
        np.testing.assert_allclose(-table["gold_logp_tf"].to_numpy(), per_token.detach().numpy(), rtol=1e-4,
                                   atol=1e-5)
        assert -table["gold_logp_tf"].mean() == pytest.approx(sequence_loss(logits, tout, tmask).item(), rel=1e-4)


def test_free_running_columns_match_greedy_decoding_and_hand_kl(make_model, pairs):
    model = make_model(seed=3, scale=0.8)
    checked_divergence = False
    for p in pairs[:12]:
        out = ex.compare_translation(model, list(p.src), list(p.tgt))
        table = out["table"]
        greedy, _ = model.translate([list(p.src)])
        emitted = model.tgt_vocab.strings(greedy[0]) + ["<eos>"]
        gold = list(p.tgt) + ["<eos>"]
        first = next((t for t in range(len(gold)) if t >= len(emitted) or emitted[t] != gold[t]), None)
        assert out["first_divergence"] == first
        n = min(len(emitted), len(gold))
        assert table["fr_token"].tolist()[:n] == emitted[:n]
        if first is None:
            continue
        checked_divergence = True
        # before the first divergence both runs read the same prefix: same distribution, same state
        assert np.allclose(table["kl"][:first + 1], 0, atol=1e-9)
        assert np.allclose(table["h_dist"][:first + 1], 0, atol=1e-6)
        if first + 1 < n:
            assert table["h_dist"][first + 1] > 1e-4
            # KL by hand from the two runs' logits at that position
            gold_ids = model.tgt_vocab.encode(list(p.tgt)).ids
            tf = model.trace([list(p.src)], [gold_ids])
            fr = model.trace([list(p.src)])
            t = first + 1
            lp, lq = (torch.log_softmax(x["logits"][0, t].double(), -1) for x in (tf, fr))
            kl = float((lp.exp() * (lp - lq)).sum())
            assert table["kl"][t] == pytest.approx(kl, rel=1e-6, abs=1e-9)
            lq[[0, 2]] = -torch.inf  # <pad> and <bos> are never emitted, so never ranked
            rank = int((lq > lq[gold_ids[t] if t < len(gold_ids) else EOS_ID]).sum()) + 1
            assert table["gold_rank_fr"][t] == rank
    assert checked_divergence


def test_error_matrices_agree_with_direct_decoding(make_model, pairs):
    model = make_model(seed=3, scale=0.8)
    sample = pairs[:40]
    errors = ex.error_matrices(model, sample, batch_size=16)
    order = range(len(sample))  # rows come back in input order
    greedy, _ = model.translate([list(p.src) for p in sample])
    fr_wrong, tf_wrong = [], []
    for row, i in enumerate(order):
        gold = model.tgt_vocab.encode(list(sample[i].tgt)).ids + [EOS_ID]
        own = greedy[row] + [EOS_ID]
        fr_wrong.append(sum(t >= len(own) or own[t] != g for t, g in enumerate(gold)))
        src, smask, tin, tout, tmask = tensorize([sample[i]], model.src_vocab, model.tgt_vocab)
        logits = model(src, smask, tin)[0]
        logits[:, [0, 2]] = -torch.inf  # <pad>, <bos> are never chosen
        tf_wrong.append(int((logits.argmax(-1) != tout[0]).sum()))
    assert (errors["fr"] & errors["valid"]).sum(1).tolist() == fr_wrong
    assert (errors["tf"] & errors["valid"]).sum(1).tolist() == tf_wrong
    firsts = ex.first_errors(errors)
    assert [f is None for f in firsts] == [w == 0 for w in fr_wrong]
    s = ex.summary(errors)
    assert s["fr"]["token_error_rate"] == pytest.approx(sum(fr_wrong) / errors["valid"].sum())
    assert s["exposure_gap"] == pytest.approx(s["fr"]["token_error_rate"] - s["tf"]["token_error_rate"])


def test_position_and_conditional_curves_from_a_hand_made_matrix():
    valid = np.array([[1, 1, 1, 1], [1, 1, 1, 0], [1, 1, 1, 1]], dtype=bool)
    fr = np.array([[0, 1, 1, 1], [0, 0, 1, 0], [0, 1, 0, 1]], dtype=bool)
    tf = np.array([[0, 1, 0, 0], [0, 0, 0, 0], [0, 1, 0, 0]], dtype=bool)
    errors = {"fr": fr, "tf": tf, "valid": valid}
    by_pos = ex.error_by_position(errors, bucket=2)
    fr_rows = by_pos[by_pos.run == "free-running"]
    assert fr_rows.error_rate.tolist() == pytest.approx([2 / 6, 4 / 5])
    after = ex.after_first_error(errors, max_distance=2, min_count=1)
    fr_after = after[after.run == "free-running"].set_index("distance").p_error
    # first errors at 1, 2, 1: d=1 -> positions 2, (3 invalid), 2 -> 1 of 2; d=2 -> position 3 twice -> 2 of 2
    assert fr_after[1] == pytest.approx(1 / 2) and fr_after[2] == pytest.approx(1.0)
    tf_after = after[after.run == "teacher-forced"].set_index("distance").p_error
    assert tf_after[1] == 0 and tf_after[2] == 0
    matrix = ex.conditional_matrix(errors, bucket=2, min_count=1)
    assert set(matrix.first_error) == {0, 2}


def test_injected_error_is_forced_then_the_decoder_runs_on(make_model, pairs):
    model = make_model(seed=3)
    p = pairs[7]
    k = 2
    token = ex.second_choice(model, list(p.src), list(p.tgt), k)
    gold_ids = model.tgt_vocab.encode(list(p.tgt)).ids
    assert token != gold_ids[k]
    out = ex.inject_error(model, list(p.src), list(p.tgt), k, token)
    table = out["table"]
    assert table["emitted"][:k].tolist() == list(p.tgt)[:k]
    assert table["emitted"][k] == model.tgt_vocab.tokens[token] and table["wrong"][k]
    assert np.allclose(table["h_dist"][:k + 1], 0, atol=1e-6)  # the state that chose position k saw gold only
    continued, _ = model.translate([list(p.src)], prefix=[gold_ids[:k] + [token]])
    assert out["output"] == model.tgt_vocab.strings(continued[0])
    assert out["edit_distance"] == ex.edit_distance(out["output"], list(p.tgt))
    emitted = continued[0] + [ex.EOS_ID] if len(continued[0]) < model.config.max_target_len else continued[0]
    assert out["errors_after"] == ex.edit_distance(emitted[k + 1:], (gold_ids + [ex.EOS_ID])[k + 1:])
    with pytest.raises(ValueError, match="gold token"):
        ex.inject_error(model, list(p.src), list(p.tgt), k, gold_ids[k])
    with pytest.raises(ValueError, match="position k"):
        ex.inject_error(model, list(p.src), list(p.tgt), 999, token)


def _levenshtein(a: list, b: list) -> int:
    """Edit distance by the textbook's full table (independent of ``ex.edit_distance``)."""
    table = [[i + j if i * j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            table[i][j] = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
    return table[-1][-1]


def test_recovery_is_judged_against_the_models_own_unforced_output(make_model, pairs):
    """The page's 'back on its own track?': the forced run's continuation against what the model says with the
    gold prefix and nothing injected, so an error the model makes anyway is not the injection's (issue 51)."""
    model = make_model(seed=3)
    seen_own_error = False
    for p in pairs[:12]:
        gold_ids = model.tgt_vocab.encode(list(p.tgt)).ids
        for k in range(1, min(4, len(gold_ids))):
            out = ex.inject_error(model, list(p.src), list(p.tgt), k)
            own, _ = model.translate([list(p.src)], prefix=[gold_ids[:k]])
            assert out["own"] == model.tgt_vocab.strings(own[0])
            forced, _ = model.translate([list(p.src)], prefix=[gold_ids[:k] + [model.tgt_vocab.index[out["injected"]]]])
            assert out["edits_vs_own"] == _levenshtein(forced[0][k + 1:], own[0][k + 1:])
            assert out["rejoins"] == (out["edits_vs_own"] <= 1)
            seen_own_error |= out["rejoins"] and not out["recovered"]
    assert seen_own_error, "no case where the model's own error, not the injection, kept it from the reference"


def test_edit_distance_by_hand():
    assert ex.edit_distance(list("kitten"), list("sitting")) == 3
    assert ex.edit_distance([], ["a"]) == 1 and ex.edit_distance(["a"], ["a"]) == 0


def test_language_model_continuation(tiny_lm_dir):
    import seqviz
    from seqviz.models.recurrent import generate

    model = seqviz.load(tiny_lm_dir / "tiny-lstm")
    text = "to be or not to be, that is the question"
    ids = model.tokenizer.encode(text).ids
    out = ex.compare_continuation(model, text, prompt_chars=8, n=12)
    table = out["table"]
    assert out["free_running"] == [model.tokenizer.tokens[i] for i in generate(model, ids[:8], 12, temperature=0)]
    assert table["gold"].tolist() == list(text[8:20])
    trace = model.trace([ids[:20]])
    lp = torch.log_softmax(trace["logits"][0, 7:19].double(), -1)
    np.testing.assert_allclose(table["gold_logp_tf"], lp[torch.arange(12), torch.tensor(ids[8:20])], atol=1e-6)
    # a "gold" continuation equal to the model's own: no divergence anywhere
    own_text = text[:8] + "".join(out["free_running"])
    same = ex.compare_continuation(model, own_text, prompt_chars=8, n=12)
    assert same["first_divergence"] is None
    assert np.allclose(same["table"]["kl"], 0, atol=1e-9)
    with pytest.raises(ValueError, match="need"):
        ex.compare_continuation(model, "short", prompt_chars=4, n=10)


def test_page_helpers_reference_choices_menu_and_combined_views(make_model, pairs):
    model = make_model(seed=3, scale=0.8)
    assert ex.reference_tokens(model, "i ate  it") == ["i", "ate", "it"]
    gold = list(pairs[0].tgt)
    choices = ex.injection_choices(model, gold, 1)
    assert gold[1] not in choices and "<pad>" not in choices and "<bos>" not in choices
    assert len(choices) == model.config.tgt_vocab_size - 3  # all but <pad>, <bos> and the gold token
    assert "<eos>" not in ex.injection_choices(model, gold, len(gold))  # at the end the gold token is <eos>
    sample = pairs[:30]
    errors = ex.error_matrices(model, sample)
    first = ex.first_errors(errors)
    menu = ex.heldout_menu(sample, first, n=10)
    order = list(menu.values())
    erring = [i for i in order if first[i] is not None]
    assert order[: len(erring)] == erring  # the pairs free running gets wrong come first
    assert all(("(FR errs)" in label) == (first[i] is not None) for label, i in menu.items())
    view = {"by_position": ex.error_by_position(errors), "after": ex.after_first_error(errors),
            "summary": ex.summary(errors)}
    both = ex.combine_views({"a": view, "b": view})
    assert set(both["by_position"]["model"]) == {"a", "b"}
    assert both["summary"]["FR token error"].tolist() == [view["summary"]["fr"]["token_error_rate"]] * 2
    table = ex.compare_models({"a": model}, list(pairs[0].src), gold, 1)
    inj = ex.inject_error(model, list(pairs[0].src), gold, 1)  # token None: the second choice
    assert table["injected"][0] == inj["injected"] == model.tgt_vocab.tokens[
        ex.second_choice(model, list(pairs[0].src), gold, 1)]


def test_shipped_study_round_trips_and_goes_stale_with_new_weights(make_model, pairs, tmp_path):
    """exposure.json holds what dataset_view and strategy_table compute, per stage, until the weights change."""
    from seqviz.checkpoints import save_weights
    from seqviz.decoding import strategy_table
    from seqviz.seq2seq.checkpoints import save_heldout
    from seqviz.seq2seq.model import Seq2Seq

    folder = tmp_path / "ckpt"
    make_model(seed=4, scale=0.8).save_pretrained(folder, {"name": "ckpt", "task": "zh-en"})
    save_heldout(pairs[:30], folder, "zh-en")
    (folder / "snapshots").mkdir()
    save_weights(make_model(seed=5), folder / "snapshots" / "step-3.safetensors")
    seen = []
    ex.write_study(folder, n=25, strategy_pairs=10, ks=(1, 2), progress=lambda i, n, s: seen.append((i, n, s)))
    assert seen == [(1, 2, "final"), (2, 2, "3")]
    for snap in (None, 3):
        model = Seq2Seq.from_pretrained(folder, snap)
        direct = ex.dataset_view(model, pairs[:25])
        shipped = ex.read_study(folder, snap, 25)
        for name in ("by_position", "after", "matrix"):
            pd.testing.assert_frame_equal(shipped[name], direct[name], check_dtype=False)
        assert shipped["summary"] == direct["summary"] and shipped["first_errors"] == direct["first_errors"]
        table = ex.shipped_strategies(folder, snap, 10, (1, 2))
        fresh = strategy_table(model, pairs[:10], ks=(1, 2))
        assert table["strategy"].tolist() == fresh["strategy"].tolist()
        np.testing.assert_allclose(table["bleu"], fresh["bleu"])  # times differ, scores do not
    assert ex.read_study(folder, None, 1000) is None  # measured on 25 pairs, not 1000
    assert ex.shipped_strategies(folder, None, 10, (1, 2, 4)) is None  # another set of beams
    assert ex.read_study(folder, 7) is None  # no such stage
    save_weights(make_model(seed=6), folder / "snapshots" / "step-3.safetensors")  # retrained: stale
    assert ex.read_study(folder, 3) is None and ex.read_study(folder, None, 25) is not None
    (folder / "exposure.json").write_text("{not json")
    assert ex.read_study(folder, None) is None


def test_alignment_counts_a_shifted_correct_tail_as_correct():
    """An added word shifts the rest: by position every later token is wrong, aligned only the added one."""
    out = "xiaoming found in the park tomorrow".split()
    gold = "xiaoming in the park tomorrow".split()
    assert ex.aligned(out, gold) == [True, False, True, True, True, True]
    assert ex.aligned(gold, out) == [True] * 5  # a dropped word: everything left matches
    assert ex.aligned(["a", "b"], ["c", "d"]) == [False, False] and ex.aligned([], ["a"]) == []
    assert sum(not m for m in ex.aligned(out, gold)) <= ex.edit_distance(out, gold)
