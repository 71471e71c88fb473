"""transformers RWKV-4 through seqviz: parity with transformers' own forward, the WKV against a float64 hand loop of
the paper's equations, names pinned, sampling, edits, gradients and the refusals. Tiny random configs, built offline."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import seqviz
from seqviz.files import CheckpointError
from seqviz.hf_rwkv import RwkvLM
from tests.conftest import TINY_ALPHABET, _tiny_mamba, tiny_card

LEAVES = ("h", "k", "v", "gates.decay", "gates.output", "s", "den", "wkv")
GOLDEN = ["tokens", "mask", "embed", *[f"layers.{i}.{leaf}" for i in range(2) for leaf in LEAVES],
          "logits", "loss", "loss_mask"]


def build_tiny_rwkv(path, seed: int = 0, tokenizer: bool = True, layers: int = 2, rescale_every: int = 0):
    """A transformers RWKV-4 (hidden 16, 12 channels, channel mix 24) with random weights moved far from the init,
    saved to ``path`` with a character tokenizer over the tiny alphabet (vocabulary 37 without)."""
    from transformers import RwkvConfig, RwkvForCausalLM

    return _tiny_mamba(path, seed, tokenizer, TINY_ALPHABET, lambda vocab_size: RwkvForCausalLM(RwkvConfig(
        vocab_size=vocab_size, hidden_size=16, attention_hidden_size=12, intermediate_size=24,
        num_hidden_layers=layers, context_length=256, rescale_every=rescale_every, use_cache=False,
        bos_token_id=None, eos_token_id=None)))


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return build_tiny_rwkv(tmp_path_factory.mktemp("rwkv") / "tiny-rwkv", tokenizer=False)


@pytest.fixture(scope="module")
def lm(folder):
    return seqviz.load(folder)


def ids_of(T: int, rows: int = 2, seed: int = 1) -> torch.Tensor:
    return torch.randint(0, 37, (rows, T), generator=torch.Generator().manual_seed(seed))


def test_an_rwkv_folder_is_detected_and_loaded_with_names_pinned(folder, lm):
    assert seqviz.detect(folder).name == "rwkv" and isinstance(lm, RwkvLM)
    trace = lm.trace(ids_of(16))
    assert list(trace) == GOLDEN == lm.trace_names()
    assert trace["layers.1.k"].shape == (2, 16, 12) and trace["layers.1.h"].shape == (2, 16, 16)
    assert lm.config.cell == "rwkv" and lm.config.channels == 12 and lm.config.ffn == 24
    assert "RwkvForCausalLM, 2 layers, hidden 16, 12 channels, feed-forward 24" in lm.describe()["architecture"]


@pytest.mark.parametrize("T", [45, 180])
def test_logits_and_hidden_states_equal_transformers_forward(lm, T):
    """transformers' forward (its WKV loop, training mode: weights as stored) of the same model; logits to 1e-4 of
    their scale, each block's residual stream to 1e-4 of its own."""
    ids = ids_of(T)
    trace = lm.trace(ids)
    lm.model.train()
    try:
        with torch.no_grad():
            run = lm.model(ids, output_hidden_states=True, return_dict=True)
    finally:
        lm.model.eval()
    assert (trace["logits"] - run.logits).abs().max() <= 1e-4 * run.logits.abs().max()
    for i in range(2):
        h = run.hidden_states[i]
        assert (trace[f"layers.{i}.h"] - h).abs().max() <= 1e-4 * h.abs().max()


def test_a_model_whose_weights_transformers_rescaled_is_traced_as_transformers_runs_it(tmp_path):
    """RWKV's eval mode halves the stream every ``rescale_every`` blocks (and the weights that write it); once
    transformers has run it so, the trace follows: logits and hidden states are transformers' own."""
    lm = seqviz.load(build_tiny_rwkv(tmp_path / "r", layers=3, rescale_every=1))
    ids = ids_of(45)
    before = lm.trace(ids)["logits"]
    with torch.no_grad():
        run = lm.model(ids, output_hidden_states=True, return_dict=True)  # eval: rescales in place
    assert lm.model.rwkv.layers_are_rescaled
    trace = lm.trace(ids)
    assert (trace["logits"] - run.logits).abs().max() <= 1e-4 * run.logits.abs().max()
    assert (before - run.logits).abs().max() <= 1e-3 * run.logits.abs().max()  # LayerNorm: the same up to its ε
    assert torch.allclose(trace["layers.2.h"], run.hidden_states[2], atol=1e-4 * float(run.hidden_states[2].abs().max()))


def test_the_wkv_is_the_papers_recurrence_in_float64(lm):
    """a_t = e^(−w) a_(t−1) + e^(k_t) v_t, b_t alike with 1, WKV_t = (a_(t−1) + e^(u+k_t) v_t) / (b_(t−1) + e^(u+k_t))
    (Peng et al. 2023), by hand in float64 from the traced k and v and the layer's own w and u."""
    trace = lm.trace(ids_of(40, rows=1))
    for i, block in enumerate(lm.model.rwkv.blocks):
        k, v = (trace[f"layers.{i}.{n}"][0].double() for n in ("k", "v"))
        w = torch.exp(block.attention.time_decay.double())
        u = block.attention.time_first.double()
        a = b = torch.zeros_like(k[0])
        for t in range(k.shape[0]):
            wkv = (a + torch.exp(u + k[t]) * v[t]) / (b + torch.exp(u + k[t]))
            a, b = torch.exp(-w) * a + torch.exp(k[t]) * v[t], torch.exp(-w) * b + torch.exp(k[t])
            for name, want in (("wkv", wkv), ("s", a), ("den", b)):
                got = trace[f"layers.{i}.{name}"][0, t].double()
                assert torch.allclose(got, want, rtol=1e-4, atol=1e-5 * float(want.abs().max())), (i, t, name)
        assert torch.allclose(trace[f"layers.{i}.gates.decay"][0, 3].double(), torch.exp(-w), rtol=1e-6)


def test_names_compute_only_what_is_asked(lm, monkeypatch):
    """A name of block 0 runs block 0 alone; logits run every block; the scaled state only where asked."""
    import seqviz.hf_rwkv as hf

    ran, real = [], hf.rwkv_block
    monkeypatch.setattr(hf, "rwkv_block", lambda block, *a, **k: (ran.append((block.layer_id, a[1] if len(a) > 1
                                                                               else k.get("leaves"))), real(block, *a, **k))[1])
    trace = lm.trace(ids_of(8), names=["layers.0.k"])
    assert list(trace) == ["layers.0.k"] and ran == [(0, frozenset({"k"}))]
    ran.clear()
    assert list(lm.trace(ids_of(8), names=["loss"])) == ["loss"] and [r[0] for r in ran] == [0, 1]


def test_sampling_is_transformers_greedy_continuation_and_deterministic(lm):
    prompt = [3, 1, 4, 1, 5, 9]
    greedy = lm.sample(prompt, 12, temperature=0)
    ids = list(prompt)
    lm.model.train()  # transformers' forward on the stored weights
    try:
        with torch.no_grad():
            for _ in range(12):
                ids.append(int(lm.model(torch.tensor([ids])).logits[0, -1].argmax()))
    finally:
        lm.model.eval()
    assert greedy == ids[len(prompt):]
    assert lm.sample(prompt, 20, temperature=1.0, seed=4) == lm.sample(prompt, 20, temperature=1.0, seed=4)
    with pytest.raises(ValueError, match="prompt"):
        lm.sample([], 3)


def test_an_edit_of_the_numerator_follows_the_recurrence(lm):
    """Channel 2's numerator set to 0 at step 5: from there a_t = e^(−w) a_(t−1) + e^(k_t) v_t from the edited
    value; the block's output (and the loss) change only from step 5 on."""
    from seqviz.models.edits import ablate

    ids = ids_of(20, rows=1)
    plain = lm.trace(ids)
    edited = lm.trace(ids, edits=[ablate("layers.0.s", [2], span=(5, 6))])
    s, k, v = (edited[f"layers.0.{n}"][0].double() for n in ("s", "k", "v"))
    decay = edited["layers.0.gates.decay"][0, 0].double()
    assert float(s[5, 2]) == 0.0
    want = torch.exp(k[6:, 2]) * v[6:, 2]
    for t in range(6, 20):
        assert torch.isclose(s[t, 2], decay[2] * s[t - 1, 2] + want[t - 6], rtol=1e-4, atol=1e-6)
    assert torch.allclose(plain["layers.0.h"][0, :6], edited["layers.0.h"][0, :6], rtol=1e-6, atol=1e-6)
    assert not torch.allclose(plain["layers.0.h"][0, 6:], edited["layers.0.h"][0, 6:])
    assert torch.allclose(plain["loss"][0, :5], edited["loss"][0, :5], rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="layers.0.s"):
        lm.trace(ids, edits=[("layers.0.c", lambda s, t: s)])


def test_an_edit_of_the_stream_is_what_the_blocks_above_read(lm):
    from seqviz.hf_rwkv import blocks

    ids = ids_of(12, rows=1)
    edited = lm.trace(ids, edits=[("layers.0.h", lambda h, t: h * 0 if t == 4 else h)])
    stream = lm.trace(ids, names=["layers.0.h"])["layers.0.h"].clone()
    stream[:, 4] = 0
    with torch.no_grad():
        top, _ = blocks(lm, stream, 1)
    assert torch.allclose(edited["layers.1.h"], top, atol=1e-6)


def test_the_gradient_by_distance_is_autograd_and_finite_differences(lm):
    """G[t, k] = ‖∂L_t/∂a_k‖ of block 0 against central differences of the loss, each channel's numerator nudged
    at step k through the trace's own edits."""
    from seqviz.introspect import gradients as gr

    ids = ids_of(10, rows=1)
    G = gr.gradient_matrix(lm, ids, layer=0, wrt="state")
    assert G.shape == (9, 10) and np.isnan(G[3, 4]) and (G[~np.isnan(G)] >= 0).all()
    t, k, eps = 7, 4, 1e-2
    grad = []
    for c in range(lm.config.channels):
        def loss(by):
            def fn(s, step):
                return s + by * torch.eye(lm.config.channels)[c] if step == k else s
            return float(lm.trace(ids, names=["loss"], edits=[("layers.0.s", fn)])["loss"][0, t])
        grad.append((loss(eps) - loss(-eps)) / (2 * eps))
    assert G[t, k] == pytest.approx(float(np.linalg.norm(grad)), rel=2e-2)
    top = gr.gradient_matrix(lm, ids, layer=1, wrt="h")  # the top block's stream reaches only its own loss
    assert np.allclose(np.tril(top, -1)[~np.isnan(np.tril(top, -1))], 0) and (np.diag(top) > 0).all()
    reach = gr.connectivity(lm, ids, 6)
    assert reach.shape == (7,) and (reach > 0).all()


def test_the_folder_is_refused_without_safetensors_and_opens_with_seqviz_vocab(tmp_path, folder):
    import shutil

    pickled = tmp_path / "pickled"
    shutil.copytree(folder, pickled)
    (pickled / "model.safetensors").rename(pickled / "pytorch_model.bin")
    with pytest.raises(CheckpointError, match="seqviz never unpickles"):
        seqviz.load(pickled)
    from seqviz.data.tokenizers import Tokenizer

    own = tmp_path / "own"
    shutil.copytree(folder, own)
    tok = Tokenizer.train("char", TINY_ALPHABET[:35])
    assert len(tok) == 37
    (own / "vocab.json").write_text(json.dumps(tok.to_dict()))
    model = seqviz.load(own)
    assert model.tokenizer.kind == "char" and model.config.tokenizer == "char"
    trace = model.trace("the cat")
    assert trace.token_strings[0] == list("the cat")


def test_seqviz_inspect_describes_an_rwkv_folder(tmp_path, capsys):
    from seqviz.cli import main

    path = build_tiny_rwkv(tmp_path / "tiny-rwkv", tokenizer=True)
    lm = seqviz.load(path)
    (path / "card.json").write_text(json.dumps(tiny_card(lm, "tiny-rwkv")))
    assert main(["inspect", str(path)]) == 0
    said = capsys.readouterr().out
    assert "rwkv" in said and "layers.1.s" in said and "channels" in said


def test_memory_as_attention_is_the_float64_sum_of_decayed_writes(lm):
    """``contributions`` through the entry: [t, j, c] = e^(−w_c (t−j)) e^(k_j) v_j, by hand in float64 from the traced
    k, v and the layer's time_decay; summed over j it is the traced numerator."""
    from seqviz.introspect.implicit import contributions

    ids = ids_of(30, rows=1)[0].tolist()
    got = contributions(lm, ids, layer=1)
    trace = lm.trace([ids], names=["layers.1.k", "layers.1.v", "layers.1.s"])
    k, v = trace["layers.1.k"][0].double(), trace["layers.1.v"][0].double()
    w = torch.exp(lm.model.rwkv.blocks[1].attention.time_decay.double())
    t, j = torch.meshgrid(torch.arange(30), torch.arange(30), indexing="ij")
    want = torch.where((j <= t)[..., None], torch.exp(-w * (t - j)[..., None].double()) * (torch.exp(k) * v)[None], 0)
    assert np.allclose(got.contributions, want.numpy(), rtol=1e-5, atol=1e-6 * float(want.abs().max()))
    assert np.allclose(got.contributions.sum(1) + got.skip, trace["layers.1.s"][0].numpy(), rtol=1e-4,
                       atol=1e-5 * float(np.abs(got.memory).max()))
    assert got.family == "rwkv" and (got.skip == 0).all()


def test_seqviz_trains_an_rwkv_that_transformers_and_seqviz_both_open(tmp_path):
    """``seqviz train lm --cell rwkv``: the loop's forward (and its gradients) equal transformers' own, the folder it
    writes opens in transformers and in seqviz (its own char vocabulary and card), and the loss went down."""
    from transformers import RwkvForCausalLM

    from seqviz.config import LMConfig
    from seqviz.data.corpus import Corpus
    from seqviz.data.tokenizers import Tokenizer
    from seqviz.train.lm import TrainConfig, train_lm
    from seqviz.train.rwkv import RwkvTrainee

    text = "to be, or not to be, that is the question. " * 40
    tok = Tokenizer.train("char", text)
    torch.manual_seed(0)
    net = RwkvTrainee(tok, hidden=16, layers=2, intermediate=32)
    with torch.no_grad():  # off the init (its embedding is 1e-4 small), so that every part of the block matters
        for p in net.parameters():
            p.add_(torch.randn_like(p) * 0.3)
    x = torch.tensor([tok.encode(text[:30]).ids])
    logits, state = net(x)
    assert state is None and torch.allclose(logits, net.model(input_ids=x).logits, atol=1e-5)
    ours = torch.autograd.grad(logits.square().sum(), net.model.rwkv.blocks[0].attention.time_decay)[0]
    theirs = torch.autograd.grad(net.model(input_ids=x).logits.square().sum(),
                                 net.model.rwkv.blocks[0].attention.time_decay)[0]
    assert torch.allclose(ours, theirs, rtol=1e-4, atol=1e-6 * float(theirs.abs().max()))

    corpus = Corpus("toy", text, text[:400], "toy split")
    out = tmp_path / "r"
    cfg = TrainConfig(steps=12, batch_size=4, seq_len=24, lr=1e-2, eval_every=6, eval_tokens=400, seed=0)
    train_lm(LMConfig(vocab_size=1), cfg, corpus, out, tokenizer=tok,
             make_model=lambda t: RwkvTrainee(t, hidden=16, layers=2, intermediate=32))
    assert {"config.json", "model.safetensors", "vocab.json", "card.json", "scores.json"} <= {p.name for p in out.iterdir()}
    hf = RwkvForCausalLM.from_pretrained(out, use_safetensors=True, local_files_only=True)
    lm = seqviz.load(out)
    assert isinstance(lm, RwkvLM) and lm.config.tokenizer == "char" and lm.tokenizer.tokens == tok.tokens
    assert lm.card["architecture"] == "2-layer RWKV-4, hidden 16, char-level"
    ids = torch.tensor([tok.encode(text[:40]).ids])
    assert torch.allclose(lm.trace(ids, names=["logits"])["logits"], hf(input_ids=ids).logits, atol=1e-5)
    history = lm.card["history"]
    assert history[-1]["val_loss"] < history[0]["val_loss"] and lm.card["val_loss"] < np.log(len(tok))
