"""The fast trace (fused kernels + batched gate rebuild) against the formula-by-formula cell."""

import math

import pytest
import torch

from seqviz.config import ConfigError, LMConfig
from seqviz.data.tokenizers import Tokenizer, pad_batch
from seqviz.models.recurrent import RecurrentLM, generate
from seqviz.models.reference import reference_trace
from seqviz.trace import trace_names

CELLS = ["rnn", "gru", "lstm", "mingru", "minlstm"]

# The golden list: renaming a trace name breaks every page, so it is pinned here.
GOLDEN = {
    "rnn": ["tokens", "mask", "embed", "layers.0.h", "layers.0.preact", "layers.1.h", "layers.1.preact",
            "logits", "loss", "loss_mask"],
    "gru": ["tokens", "mask", "embed",
            "layers.0.h", "layers.0.gates.reset", "layers.0.gates.update", "layers.0.gates.new",
            "layers.1.h", "layers.1.gates.reset", "layers.1.gates.update", "layers.1.gates.new",
            "logits", "loss", "loss_mask"],
    "lstm": ["tokens", "mask", "embed",
             "layers.0.h", "layers.0.c", "layers.0.gates.input", "layers.0.gates.forget",
             "layers.0.gates.cell", "layers.0.gates.output",
             "layers.1.h", "layers.1.c", "layers.1.gates.input", "layers.1.gates.forget",
             "layers.1.gates.cell", "layers.1.gates.output",
             "logits", "loss", "loss_mask"],
    # minGRU / minLSTM: the classic cells' names for the gates they keep (minLSTM's i and f normalised)
    "mingru": ["tokens", "mask", "embed",
               "layers.0.h", "layers.0.gates.update", "layers.0.gates.new",
               "layers.1.h", "layers.1.gates.update", "layers.1.gates.new",
               "logits", "loss", "loss_mask"],
    "minlstm": ["tokens", "mask", "embed",
                "layers.0.h", "layers.0.gates.input", "layers.0.gates.forget", "layers.0.gates.cell",
                "layers.1.h", "layers.1.gates.input", "layers.1.gates.forget", "layers.1.gates.cell",
                "logits", "loss", "loss_mask"],
}


def tiny(cell, n_layers=3, seed=0, vocab=23):
    torch.manual_seed(seed)
    model = RecurrentLM(LMConfig(cell=cell, n_layers=n_layers, d_embed=7, d_hidden=11, vocab_size=vocab))
    # Larger-than-default weights so gates actually saturate somewhere and differences would show.
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.6)
    return model.eval()


@pytest.mark.parametrize("cell", CELLS)
def test_trace_names_are_golden(cell):
    model = tiny(cell, n_layers=2)
    trace = model.trace(torch.tensor([[1, 2, 3]]))
    assert list(trace) == GOLDEN[cell] == trace_names(cell, 2)


@pytest.mark.parametrize("cell", CELLS)
def test_fast_trace_equals_reference_cell_with_padding(cell):
    model = tiny(cell)
    ids, mask = pad_batch([[3, 1, 4, 1, 5, 9, 2, 6, 5, 3], [5, 8, 9], [7, 9, 3, 2, 3, 8], [22]])
    fast = model.trace(ids, mask=mask)
    ref = reference_trace(model, ids, mask)
    assert set(fast) == set(ref)
    for name in fast:
        a, b = fast[name], ref[name]
        assert a.shape == b.shape, name
        if a.is_floating_point():
            valid = fast["loss_mask"] if name == "loss" else mask if a.dim() == 2 else mask[..., None].expand_as(a)
            assert not torch.isnan(a).any(), name  # no NaN anywhere, padding included
            diff = (a - b)[valid].abs().max()
            assert diff <= 1e-5, f"{name}: {diff}"
        else:
            assert torch.equal(a, b), name


@pytest.mark.parametrize("cell", CELLS)
def test_shapes_follow_the_documented_convention(cell):
    model = tiny(cell, n_layers=2)
    trace = model.trace(torch.randint(0, 23, (2, 9)))
    for name, t in trace.items():
        if name in ("tokens", "mask"):
            assert t.shape == (2, 9), name
        elif name in ("loss", "loss_mask"):
            assert t.shape == (2, 8), name  # one per prediction: the last token predicts nothing
        elif name == "embed":
            assert t.shape == (2, 9, 7)
        elif name == "logits":
            assert t.shape == (2, 9, 23)
        else:
            assert t.shape == (2, 9, 11), name
        assert t.device.type == "cpu" and not t.requires_grad


def test_lstm_hidden_state_is_output_gate_times_tanh_cell():
    trace = tiny("lstm").trace(torch.randint(0, 23, (1, 30)))
    h = trace["layers.2.h"]
    rebuilt = trace["layers.2.gates.output"] * torch.tanh(trace["layers.2.c"])
    assert torch.allclose(h, rebuilt, atol=1e-6)


def test_gru_update_rule_holds_on_trace():
    trace = tiny("gru").trace(torch.randint(0, 23, (1, 12)))
    h, z, n = trace["layers.1.h"], trace["layers.1.gates.update"], trace["layers.1.gates.new"]
    h_prev = torch.cat([torch.zeros_like(h[:, :1]), h[:, :-1]], dim=1)
    assert torch.allclose(h, (1 - z) * n + z * h_prev, atol=1e-6)


def test_loss_is_next_token_nll_by_hand():
    model = tiny("lstm", n_layers=1)
    ids = torch.tensor([[4, 8, 15, 16, 23 - 1]])
    trace = model.trace(ids)
    logits = trace["logits"][0]
    for t in range(ids.shape[1] - 1):
        p = torch.exp(logits[t, ids[0, t + 1]]) / torch.exp(logits[t]).sum()
        assert math.isclose(trace["loss"][0, t].item(), -math.log(p.item()), rel_tol=1e-5)
    assert trace["loss"].shape == (1, ids.shape[1] - 1)


def test_loss_mean_is_finite_and_is_cross_entropy_for_one_text_and_for_a_padded_batch():
    model = tiny("gru", n_layers=2)
    ids = torch.tensor([[4, 8, 15, 16, 22, 3]])
    trace = model.trace(ids)
    expected = torch.nn.functional.cross_entropy(trace["logits"][0, :-1], ids[0, 1:])  # autograd's own op
    assert torch.isfinite(trace["loss"].mean()) and math.isclose(trace["loss"].mean().item(), expected.item(),
                                                                 rel_tol=1e-5)
    padded, mask = pad_batch([[4, 8, 15, 16, 22, 3], [5, 9]])
    batch = model.trace(padded, mask=mask)
    assert torch.isfinite(batch["loss"]).all() and batch["loss_mask"].sum() == 5 + 1
    both = torch.cat([trace["loss"][0], model.trace(torch.tensor([[5, 9]]))["loss"][0]])
    assert math.isclose(batch.mean_loss(), both.double().mean().item(), rel_tol=1e-5)


def test_names_keep_only_what_is_asked_and_unknown_names_are_refused():
    model = tiny("lstm", n_layers=2)
    full = model.trace(torch.tensor([[1, 2, 3, 4]]))
    some = model.trace(torch.tensor([[1, 2, 3, 4]]), names=["layers.1.c", "tokens"])
    assert list(some) == ["tokens", "layers.1.c"] and torch.equal(some["layers.1.c"], full["layers.1.c"])
    with pytest.raises(ValueError, match="no trace name 'layers.5.h'.*layers.0.h"):
        model.trace(torch.tensor([[1, 2]]), names=["layers.5.h"])


def test_a_trace_cannot_be_changed_after_it_is_made():
    trace = tiny("rnn", n_layers=1).trace(torch.tensor([[1, 2, 3]]))
    with pytest.raises(TypeError):
        trace._tensors["tokens"] = torch.zeros(1)
    with pytest.raises(AttributeError):
        trace.token_strings = [["x"]]
    assert not hasattr(trace, "texts") and "token_strings" in type(trace).__doc__


def test_trace_from_text_uses_tokenizer_and_keeps_pieces():
    tok = Tokenizer.train("char", "to be or not to be")
    model = RecurrentLM(LMConfig(cell="gru", n_layers=1, d_embed=4, d_hidden=5, vocab_size=len(tok)), tok).eval()
    trace = model.trace(["to be", "not"])
    assert trace.token_strings == [list("to be"), list("not")]
    assert trace["mask"].tolist() == [[True] * 5, [True] * 3 + [False] * 2]
    assert trace.lengths().tolist() == [5, 3]
    with pytest.raises(TypeError):
        trace["new"] = 1  # read-only


def test_trace_rejects_empty_and_out_of_range_input():
    model = tiny("rnn", n_layers=1)
    with pytest.raises(ValueError, match="empty"):
        model.trace([])
    with pytest.raises(ValueError, match="token ids"):
        model.trace(torch.tensor([[0, 99]]))


def test_generate_is_seeded_and_greedy_is_argmax():
    tok = Tokenizer.train("char", "abcabcabd")
    model = RecurrentLM(LMConfig(cell="lstm", n_layers=1, d_embed=4, d_hidden=6, vocab_size=len(tok)), tok).eval()
    a = generate(model, [2, 3], 8, temperature=1.0, seed=5)
    assert a == generate(model, [2, 3], 8, temperature=1.0, seed=5)
    assert all(i not in tok.special_ids for i in a)
    greedy = generate(model, [2, 3], 3, temperature=0)
    ids = [2, 3]
    for _ in range(3):
        logits = model.trace(torch.tensor([ids]))["logits"][0, -1]
        logits[tok.special_ids] = -float("inf")
        ids.append(int(logits.argmax()))
    assert greedy == ids[2:]


@pytest.mark.parametrize("bad", [dict(cell="transformer"), dict(n_layers=0), dict(dropout=1.5),
                                 dict(tokenizer="bpe"), dict(vocab_size=-3), dict(d_hidden=2.5)])
def test_config_validates_on_construction(bad):
    with pytest.raises(ConfigError):
        LMConfig(**{"vocab_size": 10, **bad})


@pytest.mark.parametrize("cell", CELLS)
def test_a_partial_trace_computes_the_same_values_as_the_full_one(cell):
    model = tiny(cell, n_layers=3)
    ids, mask = pad_batch([[3, 1, 4, 1, 5, 9, 2], [6, 5]])
    full = model.trace(ids, mask=mask)
    for names in (["layers.0.h"], ["layers.1.h", "tokens"], ["loss", "loss_mask"], [n for n in full if "2." in n],
                  [n for n in full if n.startswith("layers.1.")] + ["logits"]):
        part = model.trace(ids, names=names, mask=mask)
        assert set(part) == set(names)
        for name in names:
            assert torch.equal(part[name], full[name]), (cell, name)


def test_a_trace_survives_pickling_as_streamlits_data_cache_does_it():
    import pickle

    trace = tiny("lstm", n_layers=1).trace(torch.tensor([[1, 2, 3]]))
    back = pickle.loads(pickle.dumps(trace))
    assert list(back) == list(trace) and all(torch.equal(back[k], trace[k]) for k in trace)
    with pytest.raises(TypeError):
        back._tensors["tokens"] = torch.zeros(1)


@pytest.mark.parametrize("shape", [(1, 1, 3), (1, 2, 3), (1, 3, 5), (1, 36, 8), (1, 37, 8), (2, 300, 64),
                                   (3, 50, 512)])
@pytest.mark.parametrize("strided", [False, True])
def test_cell_scan_follows_the_recurrence(shape, strided):
    """c_t = f_t c_{t-1} + u_t, written out step by step in float64: the chunked scan agrees with it, gates
    near 0 and 1 included, with T a multiple of its chunk length (36 = 6 x 6) or not (37: one step left over),
    and with f a view into a wider buffer as the LSTM trace hands it over (``strided``)."""
    from seqviz.models.recurrent import cell_scan

    g = torch.Generator().manual_seed(sum(shape))
    f = torch.sigmoid(4 * torch.randn(shape, generator=g))  # many gates near 0 or 1
    u = torch.tanh(torch.randn(shape, generator=g))
    if strided:
        f = torch.cat([torch.rand(shape, generator=g), f], dim=-1)[..., shape[2]:]
        assert not f.is_contiguous() or shape[:2] == (1, 1)  # one row: any strides are contiguous
    expected, prev = torch.empty(shape, dtype=torch.float64), torch.zeros(shape[0], shape[2], dtype=torch.float64)
    for t in range(shape[1]):
        prev = f[:, t].double() * prev + u[:, t].double()
        expected[:, t] = prev
    got = cell_scan(f, u)
    assert got.dtype == f.dtype and got.shape == f.shape
    torch.testing.assert_close(got.double(), expected, rtol=1e-5, atol=1e-5)
