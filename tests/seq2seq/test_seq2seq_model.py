"""The encoder-decoder: attention formulas by hand, padding, parity with the plain decoder, decoding."""

import math

import pytest
import torch

from seqviz.config import ConfigError
from seqviz.seq2seq.config import Seq2SeqConfig
from seqviz.seq2seq.model import seq2seq_trace_names
from seqviz.seq2seq.reference import reference_decode
from seqviz.seq2seq.train import teacher_forcing_prob, tensorize, sequence_loss
from seqviz.seq2seq.vocab import BOS_ID, EOS_ID, PAD_ID
from tests.float32 import ATOL, RTOL

# The golden lists: pages and issue 8 read these names, so they are pinned here.
GOLDEN = {
    ("gru", True): ["source.tokens", "source.mask", "target.inputs", "target.tokens", "target.mask",
                    "encoder.h", "decoder.h", "decoder.context", "decoder.attn.scores",
                    "decoder.attn.weights", "logits", "loss"],
    ("lstm", False): ["source.tokens", "source.mask", "target.inputs", "target.tokens", "target.mask",
                      "encoder.h", "decoder.h", "decoder.c", "decoder.context", "logits", "loss"],
}


@pytest.mark.parametrize("cell,attention", list(GOLDEN))
def test_trace_names_and_shapes_are_golden(cell, attention, make_model, pairs):
    model = make_model(cell, attention)
    src = [list(pairs[0].src), list(pairs[1].src)]
    tgt = [list(pairs[0].tgt), list(pairs[1].tgt)]
    tr = model.trace(src, tgt=tgt)
    assert list(tr) == GOLDEN[(cell, attention)] == seq2seq_trace_names(cell, attention)
    B, S, T = 2, max(map(len, src)), max(map(len, tgt)) + 1  # + the <eos> step
    A, D, V = 10, 7, model.config.tgt_vocab_size
    expected = {"source.tokens": (B, S), "source.mask": (B, S), "target.inputs": (B, T),
                "target.tokens": (B, T), "target.mask": (B, T), "encoder.h": (B, S, A),
                "decoder.h": (B, T, D), "decoder.c": (B, T, D), "decoder.context": (B, T, A),
                "decoder.attn.scores": (B, T, S), "decoder.attn.weights": (B, T, S),
                "logits": (B, T, V), "loss": (B, T)}
    for name, value in tr.items():
        assert tuple(value.shape) == expected[name], name
        assert value.device.type == "cpu" and not value.requires_grad
    assert tr.source_strings[0] == list(pairs[0].src)
    assert tr.target_strings[1] == list(pairs[1].tgt) + ["<eos>"]
    assert tr["target.inputs"][0, 0] == BOS_ID and tr["target.inputs"][0, 1] == tr["target.tokens"][0, 0]


def test_attention_weights_sum_to_one_and_are_zero_on_padding(make_model, pairs):
    model = make_model()
    batch = sorted(pairs[:6], key=lambda p: len(p.src))
    tr = model.trace([list(p.src) for p in batch], tgt=[list(p.tgt) for p in batch])
    w, smask, tmask = tr["decoder.attn.weights"], tr["source.mask"], tr["target.mask"]
    assert not smask.all()  # the batch really has padding
    real = w[tmask]  # [steps, S]
    assert torch.allclose(real.sum(-1), torch.ones(real.shape[0]), atol=1e-6)
    pad = ~smask[:, None, :].expand_as(w) & tmask[..., None]
    assert (w[pad] == 0).all()
    assert torch.isinf(tr["decoder.attn.scores"][pad]).all()
    assert torch.isnan(w[~tmask]).all() and (tr["loss"][~tmask] == 0).all() and torch.isfinite(tr["loss"]).all()


def test_batched_attention_step_equals_the_formula_by_hand(make_model, pairs):
    model = make_model()
    p = pairs[4]
    tr = model.trace([list(pairs[0].src) + list(pairs[1].src), list(p.src)], tgt=[list(pairs[0].tgt), list(p.tgt)])
    att, h, s = model.attn, tr["encoder.h"][1], tr["decoder.h"][1]
    n = len(p.src)
    for t in (1, 2):  # alpha_t is read from s_{t-1}
        e = []
        for j in range(n):
            hidden = [math.tanh(sum(att.W_s.weight[a, d].item() * s[t - 1, d].item() for d in range(s.shape[1]))
                                + sum(att.W_h.weight[a, k].item() * h[j, k].item() for k in range(h.shape[1]))
                                + att.W_h.bias[a].item()) for a in range(att.W_s.weight.shape[0])]
            e.append(sum(att.v.weight[0, a].item() * hidden[a] for a in range(len(hidden))))
        alpha = [math.exp(x) / sum(math.exp(y) for y in e) for x in e]
        c = [sum(alpha[j] * h[j, k].item() for j in range(n)) for k in range(h.shape[1])]
        assert tr["decoder.attn.scores"][1, t, :n].tolist() == pytest.approx(e, abs=1e-5)
        assert tr["decoder.attn.weights"][1, t, :n].tolist() == pytest.approx(alpha, abs=1e-6)
        assert tr["decoder.context"][1, t].tolist() == pytest.approx(c, abs=1e-5)


@pytest.mark.parametrize("cell", ["gru", "lstm"])
@pytest.mark.parametrize("attention,bidirectional", [(True, True), (True, False), (False, True)])
def test_padded_batch_equals_the_plain_one_sentence_decoder(cell, attention, bidirectional, make_model, pairs):
    model = make_model(cell, attention, bidirectional)
    batch = pairs[10:15]
    tr = model.trace([list(p.src) for p in batch], tgt=[list(p.tgt) for p in batch])
    for b, p in enumerate(batch):
        ref = reference_decode(model, model.src_vocab.encode(list(p.src)).ids, model.tgt_vocab.encode(list(p.tgt)).ids)
        T, S = len(p.tgt) + 1, len(p.src)
        assert torch.allclose(tr["logits"][b, :T], ref["logits"], atol=1e-5)
        assert torch.allclose(tr["decoder.h"][b, :T], ref["h"], atol=1e-5)
        assert torch.equal(tr["target.tokens"][b, :T], ref["targets"])
        if attention:
            assert torch.allclose(tr["decoder.attn.weights"][b, :T, :S], ref["weights"], atol=1e-6)


def test_teacher_forced_trace_loss_equals_the_training_loss(make_model, pairs):
    model = make_model("lstm")
    batch = pairs[:8]
    src, smask, tin, tout, tmask = tensorize(batch, model.src_vocab, model.tgt_vocab)
    with torch.no_grad():
        train_loss = sequence_loss(model(src, smask, tin), tout, tmask)
    tr = model.trace([list(p.src) for p in batch], tgt=[list(p.tgt) for p in batch])
    assert tr["loss"][tr["target.mask"]].mean().item() == pytest.approx(train_loss.item(), rel=1e-5)
    assert torch.equal(tr["target.mask"], tmask)


@pytest.mark.parametrize("attention", [True, False])
def test_greedy_decoding_is_step_by_step_argmax(attention, make_model, pairs):
    model = make_model(attention=attention, scale=0.8)
    src = list(pairs[7].src)
    ids, tr = model.translate([src], max_len=12)
    chosen = []
    for _ in range(12):  # re-run teacher-forced on the growing prefix; take the argmax each time
        logits = model.trace([src], tgt=[model.tgt_vocab.strings(chosen)])["logits"][0, len(chosen)].clone()
        logits[[PAD_ID, BOS_ID]] = -float("inf")
        nxt = int(logits.argmax())
        if nxt == EOS_ID:
            break
        chosen.append(nxt)
    assert ids[0] == chosen
    assert tr["target.tokens"][0, : len(chosen)].tolist() == chosen
    assert not tr.teacher_forced


def test_prefix_forces_the_first_tokens_then_runs_free(make_model, pairs):
    model = make_model(scale=0.8)
    src, forced = list(pairs[2].src), list(pairs[2].tgt[:3])
    ids, tr = model.translate([src], prefix=[forced], max_len=10)
    assert model.tgt_vocab.strings(ids[0][:3]) == forced
    rest = model.trace([src], tgt=[forced])["logits"][0, 3].clone()
    rest[[PAD_ID, BOS_ID]] = -float("inf")
    assert tr["target.tokens"][0, 3] == rest.argmax()


def test_scheduled_sampling_decay_and_its_forward(make_model):
    k = 100.0
    assert teacher_forcing_prob(0, k) == pytest.approx(k / (k + 1))
    assert teacher_forcing_prob(500, k) == pytest.approx(k / (k + math.exp(5)))
    assert teacher_forcing_prob(10**9, k) == 0.0 and teacher_forcing_prob(5, 0) == 1.0
    model = make_model()
    src = torch.tensor([[5, 6, 7]])
    tin = torch.tensor([[BOS_ID, 4, 5, 6]])
    with torch.no_grad():
        tf = model(src, torch.ones_like(src, dtype=torch.bool), tin)
        g = torch.Generator().manual_seed(0)
        mixed = model(src, torch.ones_like(src, dtype=torch.bool), tin, sample_prob=1e-9, generator=g)
    assert torch.allclose(tf, mixed, atol=1e-6)  # with no token replaced, the same logits


def test_bad_input_gets_a_clear_message(make_model):
    model = make_model()
    with pytest.raises(ValueError, match="empty"):
        model.trace([])
    with pytest.raises(ValueError, match="no tokens"):
        model.trace("   ")
    with pytest.raises(ValueError, match="lie in"):
        model.trace(torch.tensor([[3, 9999]]))


@pytest.mark.parametrize("bad", [dict(cell="rnn"), dict(attention="yes"), dict(d_encoder=0),
                                 dict(dropout=1.0), dict(tgt_vocab_size=3), dict(d_attention=2.5)])
def test_config_validates_on_construction(bad):
    with pytest.raises(ConfigError):
        Seq2SeqConfig(**{"src_vocab_size": 10, "tgt_vocab_size": 10, **bad})


def test_one_step_api_with_repeated_rows_matches_the_trace(make_model, pairs):
    """encode / initial_state / step / select: the building blocks a beam search repeats rows with."""
    model = make_model("lstm")
    from seqviz.data.tokenizers import pad_batch

    ids, mask = pad_batch([model.src_vocab.encode(list(p.src)).ids for p in pairs[:2]])
    tr = model.trace(ids, src_mask=mask, tgt=[list(pairs[0].tgt[:1]), list(pairs[1].tgt[:1])])
    with torch.no_grad():
        enc = model.encode(ids, mask).select(torch.tensor([1, 1, 0]))
        state = model.initial_state(enc)
        st = model.step(enc, state, torch.full((3,), BOS_ID))
        logits = model.logits(st.s, st.context, st.embed)
    # Another batch shape sums in another order: float32 tolerances (tests/float32.py), not exact.
    assert torch.allclose(logits[0], tr["logits"][1, 0], rtol=RTOL, atol=ATOL)
    assert torch.allclose(logits[1], logits[0], rtol=RTOL, atol=ATOL)
    assert torch.allclose(logits[2], tr["logits"][0, 0], rtol=RTOL, atol=ATOL)
    assert torch.allclose(st.state[1][2], tr["decoder.c"][0, 0], rtol=RTOL, atol=ATOL)
