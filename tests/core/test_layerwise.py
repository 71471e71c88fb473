"""Traces of real size: the per-layer walk equals the full trace, a trace stops after the last layer asked for, the
Mamba's chunked scan equals the step-by-step recurrence (edits and the final state included), the chunked loss
equals log-softmax, sampling from a prompt read at once equals transformers' greedy decoding."""

from __future__ import annotations

import pytest
import torch

import seqviz
from seqviz.trace import walk
from tests.conftest import build_tiny_lm, build_tiny_mamba, build_tiny_mamba2

TEXT = "To be, or not to be, that is the question:\nWhether 'tis nobler."


@pytest.fixture(scope="module")
def mamba(tmp_path_factory):
    return seqviz.load(build_tiny_mamba(tmp_path_factory.mktemp("walk") / "tiny-mamba"))


@pytest.fixture(scope="module")
def mamba2(tmp_path_factory):
    return seqviz.load(build_tiny_mamba2(tmp_path_factory.mktemp("walk") / "tiny-mamba2", tokenizer=True))


def models(request):
    return {"lstm": lambda: build_tiny_lm("lstm"), "gru": lambda: build_tiny_lm("gru"),
            "mingru": lambda: build_tiny_lm("mingru"), "mamba": lambda: request.getfixturevalue("mamba"),
            "mamba2": lambda: request.getfixturevalue("mamba2")}


@pytest.mark.parametrize("kind", ["lstm", "gru", "mingru", "mamba", "mamba2"])
@pytest.mark.parametrize("names", [None, "layer 1", "head"])
def test_the_walk_holds_exactly_the_trace_one_layer_at_a_time(kind, names, request):
    model = models(request)[kind]()
    texts = [TEXT, TEXT[:23]]  # padded: the mask travels with every layer
    asked = {None: None, "layer 1": [n for n in model.trace_names() if n.startswith("layers.1.")],
             "head": ["logits", "loss"]}[names]
    whole = model.trace(texts, names=asked)
    parts = list(walk(model, texts, names=asked))
    layers = [sorted({n.split(".")[1] for n in p if n.startswith("layers.")}) for p in parts]
    assert all(len(found) <= 1 for found in layers)  # one layer per part
    merged = {k: v for p in parts for k, v in p.items()}
    assert set(whole) <= set(merged) <= set(whole) | {"tokens", "mask"}
    for name in whole:
        assert torch.equal(merged[name], whole[name]), name
    assert all(torch.equal(p["mask"], whole["mask"] if "mask" in whole else merged["mask"]) for p in parts)


def test_a_family_without_a_walk_of_its_own_is_walked_through_its_trace():
    lstm = build_tiny_lm("lstm")

    class Plain:  # the trace protocol alone (a registered family's model)
        config, tokenizer = lstm.config, lstm.tokenizer
        trace_names, trace = lstm.trace_names, lstm.trace

    parts = list(walk(Plain(), TEXT))
    whole = lstm.trace(TEXT)
    assert [sorted({n.split(".")[1] for n in p if n.startswith("layers.")}) for p in parts] == [["0"], ["1"]]
    assert "embed" in parts[0] and "logits" in parts[-1]
    for p in parts:
        for name in p:
            assert torch.equal(p[name], whole[name])


@pytest.mark.parametrize("kind", ["lstm", "mamba"])
def test_a_trace_stops_after_the_last_layer_asked_for_and_runs_the_head_only_for_logits(kind, request, monkeypatch):
    model = models(request)[kind]()
    ran = []
    if kind == "mamba":
        import seqviz.hf_mamba as hm

        block = hm.mamba_block
        monkeypatch.setattr(hm, "mamba_block", lambda b, h, *a, **k: (ran.append(b), block(b, h, *a, **k))[1])
        head = model.model.lm_head
    else:
        from seqviz.models.recurrent import RecurrentLM

        layer = RecurrentLM._layer
        monkeypatch.setattr(RecurrentLM, "_layer", lambda self, i, *a: (ran.append(i), layer(self, i, *a))[1])
        head = model.head
    heads = []
    hook = head.register_forward_hook(lambda *_: heads.append(1))
    try:
        model.trace(TEXT, names=["layers.0.h"])
        assert len(ran) == 1 and not heads
        model.trace(TEXT, names=["layers.0.h", "loss"])
        assert len(ran) == 3 and len(heads) == 1
    finally:
        hook.remove()


# ------------------------------------------------------------------ the Mamba's scan in chunks of time
def loop_scan(dt, A, B, C, u, edit=None):
    """s_t = exp(Δ_t A) s_(t−1) + Δ_t B_t u_t and y_t = C_t s_t, one step at a time in float64."""
    dt, A, B, C, u = (v.double() for v in (dt, A, B, C, u))
    s, states, ys = torch.zeros(u.shape[0], u.shape[2], A.shape[1], dtype=torch.float64), [], []
    for t in range(u.shape[1]):
        s = torch.exp(dt[:, t, :, None] * A) * s + dt[:, t, :, None] * B[:, t, None, :] * u[:, t, :, None]
        if edit is not None:
            s = edit(s, t)
        states.append(s)
        ys.append((s * C[:, t, None, :]).sum(-1))
    return torch.stack(ys, 1), torch.stack(states, 1)


@pytest.mark.parametrize("lanes", [1, 40, 1 << 20])  # a chunk of one step, of two, of the whole text
def test_the_chunked_scan_is_the_recurrence_step_by_step(lanes, monkeypatch):
    import seqviz.hf_mamba_scan as hs

    monkeypatch.setattr(hs, "CHUNK_LANES", lanes)
    torch.manual_seed(0)
    b, T, D, N = 2, 11, 5, 4
    dt, A = torch.rand(b, T, D) * 0.5, -torch.rand(D, N) * 2
    B, C, u = torch.randn(b, T, N), torch.randn(b, T, N), torch.randn(b, T, D)
    slow = A.argmax(-1)
    y, parts = hs.selective_scan(dt, A, B, C, u, slow, {"state", "decay", "s", "gates.decay", "last"})
    ref_y, ref_state = loop_scan(dt, A, B, C, u)
    assert torch.allclose(y.double(), ref_y, rtol=1e-5, atol=1e-6)
    assert torch.allclose(parts["state"].double(), ref_state, rtol=1e-5, atol=1e-6)
    assert torch.equal(parts["last"], parts["state"][:, -1])
    assert torch.equal(parts["s"], parts["state"][..., torch.arange(D), slow])
    assert torch.equal(parts["gates.decay"], parts["decay"][..., torch.arange(D), slow])
    assert torch.allclose(parts["decay"], torch.exp(dt[..., None] * A))

    def held(s, t):  # states 1 and 3 of every channel held at 0.5 over steps 4..8
        if not 4 <= t < 9:
            return s
        s = s.clone()
        s[:, :, [1, 3]] = 0.5
        return s

    def channel_off(s, t):  # channel 2's slowest state set to 0 from step 6 on
        if t < 6:
            return s
        s = s.clone()
        s[:, 2] = 0.0
        return s

    def both(s, t):  # the same, on the whole state: first the state's edit, then the slowest state's
        s = held(s, t)
        if t >= 6:
            s = s.clone()
            s[:, 2, slow[2]] = 0.0
        return s

    y, parts = hs.selective_scan(dt, A, B, C, u, slow, {"state"}, edits={"state": [held], "s": [channel_off]})
    ref_y, ref_state = loop_scan(dt, A, B, C, u, edit=both)
    assert torch.allclose(y.double(), ref_y, rtol=1e-5, atol=1e-6)
    assert torch.allclose(parts["state"].double(), ref_state, rtol=1e-5, atol=1e-6)


def test_the_chunked_loss_is_minus_log_softmax(monkeypatch):
    import seqviz.models.recurrent as rec

    monkeypatch.setattr(rec, "LOSS_CHUNK", 3 * 7)  # rows of 3 tokens: several chunks and a short last one
    torch.manual_seed(0)
    logits, ids = torch.randn(2, 10, 7) * 3, torch.randint(0, 7, (2, 10))
    mask = torch.ones(2, 10, dtype=torch.bool)
    mask[1, 6:] = False
    loss = rec.next_token_loss(logits, ids, mask)
    ref = -torch.log_softmax(logits[:, :-1].double(), -1).gather(-1, ids[:, 1:, None])[..., 0]
    ref[1, 5:] = 0.0
    assert loss.shape == (2, 9) and torch.allclose(loss.double(), ref, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("prompt", ["T", "To", "To be, or not to be"])  # shorter and longer than the conv window
def test_a_prompt_read_at_once_samples_as_transformers_greedy_decoding(prompt, mamba):
    ids = mamba.tokenizer.encode(prompt).ids
    sample = mamba.sample(ids, 6, temperature=0.0)
    banned, seq = mamba.tokenizer.special_ids, list(ids)
    with torch.no_grad():
        for _ in range(6):
            logits = mamba.model(torch.tensor([seq])).logits[0, -1]
            logits[banned] = -float("inf")
            seq.append(int(logits.argmax()))
    assert sample == seq[len(ids):]


def test_the_state_after_a_prompt_read_at_once_is_the_scan_of_the_trace(mamba):
    from seqviz.hf_mamba import prefill

    ids = torch.tensor([mamba.tokenizer.encode(TEXT).ids])
    h, windows, states = prefill(mamba.model.backbone, ids)
    trace = mamba.trace(ids, names=["layers.1.h", "layers.1.state"])
    assert torch.equal(h, trace["layers.1.h"][:, -1])
    assert torch.allclose(states[1], trace["layers.1.state"][:, -1])
    block = mamba.model.backbone.layers[1]
    with torch.no_grad():  # block 1's convolution reads in_proj of its normalised input, the stream after block 0
        x = block.mixer.in_proj(block.norm(mamba.trace(ids, names=["layers.0.h"])["layers.0.h"])).chunk(2, -1)[0]
    assert torch.allclose(windows[1], x[:, -3:].transpose(1, 2), atol=1e-6)


def test_the_top_blocks_state_gradient_written_out_is_autograds(mamba, monkeypatch):
    """G of the top block's state from one backward pass and the decays equals one backward pass per loss."""
    import numpy as np

    from seqviz.introspect import mamba_gradients as mg

    ids = torch.tensor([mamba.tokenizer.encode(TEXT).ids])
    written = mg.gradient_matrix(mamba, ids, layer=-1, wrt="state")
    monkeypatch.setattr(mg, "is_mamba2", lambda mixer: True)  # the general path: autograd through the blocks
    assert np.allclose(written, mg.gradient_matrix(mamba, ids, layer=-1, wrt="state"), rtol=1e-4, atol=1e-9,
                       equal_nan=True)
