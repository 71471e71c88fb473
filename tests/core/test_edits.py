"""Edits in the trace (``seqviz.models.edits``): the edited run against hand-written loops over torch's cells.

The identity edit goes through the plain per-step cell instead of the fused kernel, so it equals the
unedited trace to float32 rounding (1e-5 here), not bit for bit; ``edits=None`` or ``[]`` is the fused run.
"""

import pytest
import torch
from torch import nn

from seqviz.config import LMConfig
from seqviz.data.tokenizers import pad_batch
from seqviz.models.edits import SetUnits, ablate, clamp, patch, state_names, unit_means
from seqviz.models.minimal import g
from seqviz.models.recurrent import RecurrentLM

CELLS = ["rnn", "gru", "lstm", "mingru", "minlstm"]
IDS = torch.tensor([[3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2, 3, 8, 4]])


def tiny(cell, n_layers=2, seed=0):
    torch.manual_seed(seed)
    model = RecurrentLM(LMConfig(cell=cell, n_layers=n_layers, d_embed=7, d_hidden=11, vocab_size=23))
    with torch.no_grad():  # larger than default, so an edit's effect is not lost in saturation
        for p in model.parameters():
            p.normal_(0, 0.6)
    return model.eval()


def held(cell):
    return "c" if cell == "lstm" else "h"


@pytest.mark.parametrize("cell", CELLS)
def test_the_identity_edit_is_the_unedited_trace(cell):
    model = tiny(cell)
    plain = model.trace(IDS)
    for none in (None, []):
        assert all(torch.equal(plain[k], v) for k, v in model.trace(IDS, edits=none).items())  # the fused run
    same = model.trace(IDS, edits=[(f"layers.{i}.{held(cell)}", lambda s, t: s) for i in range(2)])
    assert list(same) == list(plain)
    for name in plain:
        assert torch.allclose(same[name], plain[name], atol=1e-5, rtol=0), name


def _cells(model):
    """torch's own cells holding the model's weights, one per layer (or the minimal cells' formulas)."""
    cell, out = model.config.cell, []
    for rnn in model.layers:
        if cell in ("mingru", "minlstm"):
            out.append(rnn)
            continue
        kind = {"rnn": nn.RNNCell, "gru": nn.GRUCell, "lstm": nn.LSTMCell}[cell]
        c = kind(rnn.input_size, rnn.hidden_size)
        with torch.no_grad():
            for leaf in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                getattr(c, leaf).copy_(getattr(rnn, f"{leaf}_l0"))
        out.append(c)
    return out


def _minimal(cell, rnn, x, h):
    """minGRU / minLSTM's step, as Feng et al. (2024) write it (z in PyTorch's sense: it keeps)."""
    H = rnn.hidden_size
    pre = x @ rnn.proj.weight.T + rnn.proj.bias
    if cell == "mingru":
        z = torch.sigmoid(pre[:, :H])
        return z * h + (1 - z) * g(pre[:, H:])
    i, f = torch.sigmoid(pre[:, :H]), torch.sigmoid(pre[:, H:2 * H])
    return f / (f + i) * h + i / (f + i) * g(pre[:, 2 * H:])


@torch.no_grad()
def hand_loop(model, ids, zero_unit: int, layer: int = 0):
    """Logits [T, V] with unit ``zero_unit`` of ``layer``'s held state (c for the LSTM, h otherwise) set to
    0 right after every step: a loop over torch's cells, written out."""
    cell = model.config.cell
    x = model.embed.weight[ids[0]]  # [T, E]
    for li, c in enumerate(_cells(model)):
        h = torch.zeros(1, c.hidden_size)
        s = torch.zeros(1, c.hidden_size)
        hs = []
        for t in range(len(x)):
            xt = x[t:t + 1]
            if cell == "lstm":
                h, s = c(xt, (h, s))
                if li == layer:
                    s = s.clone()
                    s[:, zero_unit] = 0
            else:
                h = _minimal(cell, c, xt, h) if cell in ("mingru", "minlstm") else c(xt, h)
                if li == layer:
                    h = h.clone()
                    h[:, zero_unit] = 0
            hs.append(h)
        x = torch.cat(hs)
    return model.head(x)


@pytest.mark.parametrize("cell", CELLS)
@pytest.mark.parametrize("layer", [0, 1])
def test_zeroing_a_unit_at_every_step_equals_a_loop_over_torch_s_cell(cell, layer):
    model = tiny(cell)
    unit = 4
    edited = model.trace(IDS, edits=[ablate(f"layers.{layer}.{held(cell)}", [unit])])
    expected = hand_loop(model, IDS, unit, layer)
    assert (edited["logits"][0] - expected).abs().max() <= 1e-5
    assert (edited[f"layers.{layer}.{held(cell)}"][0, :, unit] == 0).all()
    assert (edited["logits"] - model.trace(IDS)["logits"]).abs().max() > 1e-3  # the edit did something


@pytest.mark.parametrize("cell", CELLS)
def test_an_edit_changes_nothing_before_its_span_and_the_layer_below(cell):
    model = tiny(cell)
    plain = model.trace(IDS)
    edited = model.trace(IDS, edits=[clamp(f"layers.1.{held(cell)}", [0, 2], 0.9, span=(8, 12))])
    assert torch.allclose(edited["layers.0.h"], plain["layers.0.h"], atol=1e-6)  # the layer below: untouched
    assert torch.allclose(edited["logits"][:, :8], plain["logits"][:, :8], atol=1e-5)  # before the span
    assert (edited[f"layers.1.{held(cell)}"][0, 8:12, [0, 2]] == 0.9).all()
    assert (edited["logits"][:, 12:] - plain["logits"][:, 12:]).abs().max() > 1e-4  # after it: the memory carried it


@pytest.mark.parametrize("cell", CELLS)
def test_patching_every_state_at_one_step_makes_a_text_continue_as_the_other(cell):
    model = tiny(cell)
    a = torch.tensor([[3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8]])
    b = torch.tensor([[7, 7, 2, 8, 1, 8, 2, 6, 5, 3, 5, 8]])  # other first six tokens, the same last six
    tb = model.trace(b)
    p = 5  # the last step where the texts differ
    edits = [patch(name, tb, span=(p, p + 1)) for name in state_names(cell, 2)]
    ta = model.trace(a, edits=edits)
    for name in ["layers.0.h", "layers.1.h", "logits", *(["layers.1.c"] if cell == "lstm" else [])]:
        assert torch.allclose(ta[name][:, p:], tb[name][:, p:], atol=1e-5), name
        assert not torch.allclose(ta[name][:, :p], tb[name][:, :p], atol=1e-3), name
    assert torch.allclose(ta["loss"][:, p:], tb["loss"][:, p:], atol=1e-5)


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_patching_every_unit_from_a_position_on_gives_the_other_text_s_trace(cell):
    model = tiny(cell)
    a, b = IDS, torch.flip(IDS, [1])
    tb = model.trace(b)
    edits = [patch(name, tb, span=(7, IDS.shape[1])) for name in state_names(cell, 2)]
    ta = model.trace(a, edits=edits)
    assert torch.allclose(ta["logits"][:, 7:], tb["logits"][:, 7:], atol=1e-5)
    assert not torch.allclose(ta["logits"][:, :7], tb["logits"][:, :7], atol=1e-3)


def test_a_patch_at_an_offset_reads_the_aligned_step_of_the_other_text():
    model = tiny("lstm")
    tb = model.trace(IDS[:, :10])
    name, fn = patch("layers.0.c", tb, units=[1, 3], span=(12, 14), offset=-5)
    state = torch.zeros(1, 11)
    assert torch.equal(fn(state, 12)[0, [1, 3]], tb["layers.0.c"][0, 7, [1, 3]])
    assert torch.equal(fn(state, 11), state) and fn(state, 11) is state  # outside the span
    assert (fn(state, 12)[0, [0, 2]] == 0).all() and (state == 0).all()  # the other units kept, the input untouched


def test_mean_ablation_sets_the_unit_to_its_mean_over_a_reference_run():
    model = tiny("lstm")
    ref = model.trace(torch.flip(IDS, [1]))
    means = unit_means(ref, "layers.0.c")
    assert torch.allclose(means, ref["layers.0.c"][0].mean(0), atol=1e-6)
    edited = model.trace(IDS, edits=[ablate("layers.0.c", [2, 5], means=means)])
    assert torch.allclose(edited["layers.0.c"][0, :, [2, 5]], means[[2, 5]].expand(IDS.shape[1], 2))


def test_a_padded_batch_is_edited_row_by_row():
    model = tiny("gru")
    rows = [[3, 1, 4, 1, 5, 9, 2, 6], [5, 8, 9]]
    ids, mask = pad_batch(rows)
    edit = ablate("layers.0.h", [1, 2], span=(1, 6))
    batch = model.trace(ids, mask=mask, edits=[edit])
    for b, row in enumerate(rows):
        one = model.trace(torch.tensor([row]), edits=[edit])
        assert torch.allclose(batch["logits"][b, :len(row)], one["logits"][0], atol=1e-5)


def test_bad_edits_are_refused_with_what_is_allowed():
    model = tiny("gru")
    with pytest.raises(ValueError, match="no state 'layers.0.c'.*layers.0.h, layers.1.h"):
        model.trace(IDS, edits=[("layers.0.c", lambda s, t: s)])
    with pytest.raises(ValueError, match="not a function"):
        model.trace(IDS, edits=[("layers.0.h", 3)])
    with pytest.raises(ValueError, match="pair"):
        model.trace(IDS, edits=[ablate])
    with pytest.raises(ValueError, match="must return the state's shape"):
        model.trace(IDS, edits=[("layers.0.h", lambda s, t: s[:, :3])])
    with pytest.raises(ValueError, match="unit 11 is out of range.*11 units"):
        model.trace(IDS, edits=[ablate("layers.0.h", [11])])
    with pytest.raises(ValueError, match="at least one unit"):
        SetUnits([], torch.zeros(0))
    with pytest.raises(ValueError, match="span"):
        clamp("layers.0.h", [0], 1.0, span=(5, 5))
