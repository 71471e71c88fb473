"""The LSTM's gates read from oneDNN's workspace: the same as the formula-by-formula reference cell, taken on this
build (so the trace does not redo the kernel's matrix products), and never trusted when the layout is misread."""

from __future__ import annotations

import pytest
import torch

from seqviz.data.tokenizers import pad_batch
from seqviz.models import lstm_gates
from seqviz.models.reference import reference_trace
from tests.conftest import build_tiny_lm

IDS, MASK = pad_batch([[3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2, 3, 8], [5, 8, 9], [7, 9, 3, 2, 3, 8]])


def close_to_reference(fast, ref, mask):
    for name in fast:
        if fast[name].is_floating_point():
            valid = fast["loss_mask"] if name == "loss" else mask if fast[name].dim() == 2 else \
                mask[..., None].expand_as(fast[name])
            assert (fast[name] - ref[name])[valid].abs().max() <= 1e-5, name


@pytest.mark.parametrize("hidden", [12, 64])  # 4H = 48 and 256: the latter's rows padded to 272 floats
def test_the_kernels_gates_are_the_reference_cells(hidden):
    model = build_tiny_lm("lstm", d_hidden=hidden)
    close_to_reference(model.trace(IDS, mask=MASK), reference_trace(model, IDS, MASK), MASK)


@pytest.mark.skipif(not torch.backends.mkldnn.is_available(), reason="this torch has no oneDNN")
def test_the_gates_come_from_the_kernel_on_this_build(monkeypatch):
    """With oneDNN present the trace takes its gates from the workspace: no W_hh product is computed again."""
    import seqviz.models.recurrent as rec

    model = build_tiny_lm("lstm")
    rebuilt = []
    monkeypatch.setattr(rec, "_lstm_preactivations", lambda *a: rebuilt.append(1))
    trace = model.trace(IDS, mask=MASK)
    assert not rebuilt and trace["layers.1.gates.forget"].shape == (3, 19, 12)
    assert lstm_gates.good_ld(48) == 48 and lstm_gates.good_ld(1024) == 1040 and lstm_gates.good_ld(20) == 32


def test_a_misread_workspace_is_never_used(monkeypatch):
    """A wrong row width reads other numbers as gates: o tanh(c) is then not the kernel's h, and the gates are
    rebuilt from the weights (still the reference cell's)."""
    import seqviz.models.recurrent as rec

    model = build_tiny_lm("lstm")
    monkeypatch.setattr(lstm_gates, "good_ld", lambda width: width + 16)
    calls = []
    rebuild = rec._lstm_preactivations
    monkeypatch.setattr(rec, "_lstm_preactivations", lambda *a: (calls.append(1), rebuild(*a))[1])
    close_to_reference(model.trace(IDS, mask=MASK), reference_trace(model, IDS, MASK), MASK)
    assert len(calls) == 2 or not torch.backends.mkldnn.is_available()


def test_a_build_without_onednn_rebuilds_the_gates(monkeypatch):
    wide = build_tiny_lm("lstm").double()
    assert lstm_gates.fused_with_gates(wide.layers[0], wide.embed(IDS)) is None  # float64: not the kernel's
    model = build_tiny_lm("lstm")
    monkeypatch.setattr(torch.backends.mkldnn, "is_available", lambda: False)
    assert lstm_gates.fused_with_gates(model.layers[0], model.embed(IDS)) is None
    close_to_reference(model.trace(IDS, mask=MASK), reference_trace(model, IDS, MASK), MASK)
