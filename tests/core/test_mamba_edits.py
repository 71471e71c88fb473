"""Edits inside a transformers Mamba's trace (ablate, clamp, patch on a block's output h, its channels' slowest
states s and its whole state), against transformers' own forward with its selective scan replaced by a loop
written here that makes the same edit: everything else (norms, projections, the causal conv, the gate) is
transformers' code. Tiny random configs, built offline."""

import pytest
import torch
import torch.nn.functional as F
from transformers.models.mamba import modeling_mamba

import seqviz
from seqviz.models.edit_batch import edited_traces
from seqviz.models.edits import ablate, clamp, patch
from tests.conftest import build_tiny_mamba  # vocabulary 37 without a tokenizer

IDS = torch.tensor([[3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3], [2, 7, 1, 8, 2, 8, 1, 8, 2, 8, 4, 5, 9, 0, 4, 5]])
OTHER = torch.tensor([[1, 1, 2, 3, 5, 8, 13, 21, 3, 4, 7, 11, 18, 29, 10, 6]])


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    path = build_tiny_mamba(tmp_path_factory.mktemp("mamba-edits") / "tiny-mamba", seed=1, tokenizer=False)
    return seqviz.load(path)


def transformers_logits(lm, ids, layer: int, edit, monkeypatch) -> torch.Tensor:
    """transformers' forward, its selective scan replaced in block ``layer`` by a step loop that applies
    ``edit(state [B, D, N], A, t)`` after each step (the other blocks: the same loop, unedited)."""
    calls = []

    def scan(u, dt, A, B, C, D=None, z=None, delta_bias=None, delta_softplus=False, return_last_state=False, **_):
        here = len(calls)
        calls.append(here)
        dt = F.softplus(dt + delta_bias[..., None]) if delta_softplus else dt  # [b, D, T]
        B, C = B.transpose(1, 2), C.transpose(1, 2)  # [b, T, N]
        s, ys = u.new_zeros(u.shape[0], u.shape[1], A.shape[1]), []
        for t in range(u.shape[2]):
            s = torch.exp(A * dt[:, :, t, None]) * s + dt[:, :, t, None] * B[:, t, None, :] * u[:, :, t, None]
            if here == layer:
                s = edit(s, A, t)
            ys.append((s * C[:, t, None, :]).sum(-1))
        return (torch.stack(ys, -1) + u * D[:, None]) * F.silu(z)

    monkeypatch.setattr(modeling_mamba, "mamba_selective_scan", scan)
    with torch.no_grad():
        return lm.model(ids).logits


def test_identity_edits_leave_the_trace_exactly_as_it_was(loaded):
    plain = loaded.trace(IDS)
    for name in ("layers.0.h", "layers.0.s", "layers.1.state"):
        edited = loaded.trace(IDS, edits=[(name, lambda state, t: state)])
        for key in plain:
            torch.testing.assert_close(edited[key], plain[key], rtol=0, atol=1e-6, msg=f"{name}: {key}")


@pytest.mark.parametrize("layer", [0, 1])
def test_a_channel_switched_off_equals_transformers_forward_with_the_same_edit(loaded, layer, monkeypatch):
    channel = 5

    def zero_slowest(s, A, t):  # channel 5's slowest state (A nearest 0) set to 0 from step 3 on
        if t < 3:
            return s
        s = s.clone()
        s[:, channel, int(A[channel].argmax())] = 0.0
        return s

    mine = loaded.trace(IDS, edits=[ablate(f"layers.{layer}.s", [channel], span=(3, 99))])["logits"]
    theirs = transformers_logits(loaded, IDS, layer, zero_slowest, monkeypatch)
    unedited = transformers_logits(loaded, IDS, layer, lambda s, A, t: s, monkeypatch)
    assert (mine - theirs).abs().max() <= 1e-5
    assert (theirs - unedited).abs().max() > 1e-3  # the edit changed the prediction: the test can fail


def test_the_whole_state_clamped_equals_transformers_forward_with_the_same_edit(loaded, monkeypatch):
    mine = loaded.trace(IDS, edits=[clamp("layers.0.state", [1, 3], 0.5, span=(4, 9))])["logits"]

    def held(s, A, t):  # states 1 and 3 of every channel held at 0.5 over steps 4..8
        if not 4 <= t < 9:
            return s
        s = s.clone()
        s[..., [1, 3]] = 0.5
        return s

    assert (mine - transformers_logits(loaded, IDS, 0, held, monkeypatch)).abs().max() <= 1e-5


def test_patching_every_unit_of_h_from_another_text_gives_that_texts_trace(loaded):
    a, b = IDS[:1], OTHER
    source, plain = loaded.trace(b), loaded.trace(a)
    patched = loaded.trace(a, edits=[patch("layers.0.h", source)])  # every step: block 1 reads b's stream only
    assert (patched["logits"] - source["logits"]).abs().max() <= 1e-5
    assert (patched["layers.1.s"] - source["layers.1.s"]).abs().max() <= 1e-5
    later = loaded.trace(a, edits=[patch("layers.0.h", source, span=(6, 16))])  # from step 6: block 1 keeps a's past
    assert (later["logits"][0, :6] - plain["logits"][0, :6]).abs().max() <= 1e-6
    assert (later["logits"][0, 6:] - plain["logits"][0, 6:]).abs().max() > 1e-3


def test_batched_edit_sets_equal_one_edited_trace_each(loaded):
    plain = loaded.trace(IDS)
    sets = [[ablate("layers.1.s", [c])] for c in (0, 7, 19)] + [[ablate("layers.0.h", [2, 3], span=(5, 12))]]
    runs = edited_traces(loaded, plain, sets, ("logits", "loss"))
    for edits, run in zip(sets, runs):
        alone = loaded.trace(IDS, edits=edits)
        assert (run["logits"] - alone["logits"]).abs().max() <= 1e-5
        assert (run["loss"] - alone["loss"]).abs().max() <= 1e-5


def test_edits_a_mamba_cannot_take_are_sentences(loaded):
    with pytest.raises(ValueError, match="no state 'layers.0.c' to edit"):
        loaded.trace(IDS, edits=[("layers.0.c", lambda c, t: c)])
    with pytest.raises(ValueError, match="must return the state's shape"):
        loaded.trace(IDS, edits=[("layers.0.s", lambda s, t: s[:, :3])])
