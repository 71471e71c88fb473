"""Beam search, sampling and greedy decoding against independent references."""

import itertools
import math

import pytest
import torch

from seqviz.decoding import beam_search, beam_search_loop, gold_fall_off, sample
from seqviz.seq2seq.config import Seq2SeqConfig
from seqviz.seq2seq.model import NEVER_EMITTED, Seq2Seq
from seqviz.seq2seq.vocab import EOS_ID, Vocab

torch.set_num_threads(1)


def tiny_vocab_model(seed: int, n_words: int = 2) -> Seq2Seq:
    """A model whose decoder can emit only <eos>, <unk> and n_words words: small enough to enumerate."""
    src = Vocab("unit", ["<pad>", "<unk>", "<bos>", "<eos>", "a", "b", "c"])
    tgt = Vocab("unit", ["<pad>", "<unk>", "<bos>", "<eos>"] + [f"w{i}" for i in range(n_words)])
    torch.manual_seed(seed)
    cfg = Seq2SeqConfig(cell="gru", attention=True, bidirectional=True, d_embed=5, d_encoder=4, d_decoder=6,
                        d_attention=3, src_vocab_size=len(src), tgt_vocab_size=len(tgt), max_target_len=10)
    model = Seq2Seq(cfg, src, tgt)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.8)
    return model.eval()


def sequence_logprob(model, src, tokens, finished=True) -> float:
    """Sum of log p over tokens (+ <eos>), from one teacher-forced trace (not the beam code)."""
    tr = model.trace([src], [tokens])
    logp = torch.log_softmax(tr["logits"][0].double(), dim=-1)
    ids = tokens + [EOS_ID]
    n = len(ids) if finished else len(tokens)
    return float(sum(logp[t, ids[t]] for t in range(n)))


@pytest.mark.parametrize("alpha", [0.0, 1.0])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_beam_finds_the_best_of_all_enumerated_outputs(alpha, seed):
    model, src, max_len = tiny_vocab_model(seed), ["a", "c", "b"], 4
    words = [i for i in range(model.config.tgt_vocab_size) if i not in NEVER_EMITTED and i != EOS_ID]
    best, best_seq = -math.inf, None
    for n in range(max_len + 1):
        for seq in itertools.product(words, repeat=n):
            finished = n < max_len  # max_len tokens without <eos>: cut, as the search does
            lp = sequence_logprob(model, src, list(seq), finished)
            score = lp / max(n + finished, 1) ** alpha
            if score > best:
                best, best_seq = score, list(seq)
    result = beam_search(model, [src], k=len(words) ** max_len, alpha=alpha, max_len=max_len, exact=True)
    top = result.hypotheses[0][0]
    assert top.tokens == best_seq
    assert top.score == pytest.approx(best, abs=1e-5)


def test_beam_one_is_greedy(make_model, pairs):
    model = make_model(seed=4)
    srcs = [list(p.src) for p in pairs[:25]]
    greedy, _ = model.translate(srcs)
    assert beam_search(model, srcs, k=1).best == greedy
    assert sample(model, srcs, temperature=0) == greedy


@pytest.mark.parametrize("cell,attention", [("gru", True), ("lstm", True), ("gru", False)])
def test_batched_beam_equals_the_per_hypothesis_loop(make_model, pairs, cell, attention):
    model = make_model(cell=cell, attention=attention, seed=2, scale=0.8)
    srcs = [list(p.src) for p in pairs[:6]]
    batched = beam_search(model, srcs, k=4)
    loop = beam_search_loop(model, srcs, k=4)
    for a, b in zip(batched.hypotheses, loop.hypotheses):
        assert [h.tokens for h in a] == [h.tokens for h in b]
        assert [h.score for h in a] == pytest.approx([h.score for h in b], abs=1e-5)
        assert [h.score for h in a] == sorted((h.score for h in a), reverse=True)


def test_hypothesis_scores_are_their_log_probabilities(make_model, pairs):
    model = make_model(seed=5)
    src = list(pairs[0].src)
    for alpha in (0.0, 1.0):
        for h in beam_search(model, [src], k=3, alpha=alpha).hypotheses[0]:
            lp = sequence_logprob(model, src, h.tokens, h.finished)
            assert h.logprob == pytest.approx(lp, abs=1e-4)
            assert h.score == pytest.approx(lp / (len(h.tokens) + h.finished) ** alpha, abs=1e-4)


def test_sampling_is_seeded_and_follows_the_temperature(make_model, pairs):
    model = make_model(seed=6)
    srcs = [list(p.src) for p in pairs[:10]]
    assert sample(model, srcs, 1.0, seed=3) == sample(model, srcs, 1.0, seed=3)
    hot = [sample(model, srcs[:1], 5.0, seed=s)[0] for s in range(8)]
    assert len({tuple(h) for h in hot}) > 1  # a flat distribution gives different outputs per seed


def test_gold_falls_off_the_beam_where_no_beam_holds_it(make_model, pairs):
    model = make_model(seed=7)
    src = list(pairs[1].src)
    result = beam_search(model, [src], k=2, record=True)
    history = result.history[0]
    assert gold_fall_off(history, result.hypotheses[0][0].tokens) is None  # the winner was on the beam
    first_tokens = set(history[0].tokens) | {EOS_ID}
    outsider = next(i for i in range(4, model.config.tgt_vocab_size) if i not in first_tokens)
    assert gold_fall_off(history, [outsider, 5, 6]) == 0
    # a gold that matches beam 0 for two steps and then leaves every beam falls off at step 2
    prefix = history[1].prefixes[0]
    later = set(history[2].tokens) if len(history) > 2 else set()
    if len(history) > 2:
        leave = next(i for i in range(4, model.config.tgt_vocab_size)
                     if not any(p == prefix + [i] for p in history[2].prefixes) and i not in later)
        assert gold_fall_off(history, prefix + [leave]) == 2


def test_bad_beam_size_is_refused(make_model):
    with pytest.raises(ValueError, match="at least 1"):
        beam_search(make_model(), ["我"], k=0)


def test_beam_view_cuts_the_tree_and_marks_the_fall_off(make_model, pairs):
    from seqviz.decoding import beam_view

    model = make_model(seed=7)
    src, gold = list(pairs[1].src), list(pairs[1].tgt)
    view = beam_view(model, src, gold, 2, min_steps=3)
    full = beam_search(model, [src], k=2, record=True)
    assert view["best"] == model.tgt_vocab.strings(full.best[0])
    assert view["fell_off"] == gold_fall_off(full.history[0], model.tgt_vocab.encode(gold).ids)
    assert view["steps"] == len(full.history[0])
    assert view["shown"] == min(view["steps"], max(3, (view["fell_off"] or 0) + 6))
    assert int(view["tree"]["step"].max()) == view["shown"] - 1
