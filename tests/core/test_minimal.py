"""minGRU and minLSTM (Feng et al. 2024): the log-space parallel scan against the loop, the trace against
the formula-by-formula cell, the folder round trip through ``seqviz.load``, sampling and the signal table."""

import math

import pytest
import torch

import seqviz
from seqviz.charts.palette import SIGNAL_COLOURS
from seqviz.config import LMConfig
from seqviz.data.tokenizers import Tokenizer
from seqviz.introspect.gates import saturation_counts, signal_key
from seqviz.models.minimal import MinGRU, MinLSTM, g, log_g, log_scan
from seqviz.models.recurrent import RecurrentLM, generate
from seqviz.families import get as family

CELLS = ["mingru", "minlstm"]


def tiny(cell, n_layers=2, seed=0, tokenizer=None):
    torch.manual_seed(seed)
    vocab = len(tokenizer) if tokenizer is not None else 13
    model = RecurrentLM(LMConfig(cell=cell, n_layers=n_layers, d_embed=6, d_hidden=9, vocab_size=vocab), tokenizer)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.6)
    return model.eval()


def test_log_scan_is_the_recurrence():
    torch.manual_seed(1)
    a, b = torch.rand(2, 50, 3, dtype=torch.float64), torch.rand(2, 50, 3, dtype=torch.float64) * 3
    h, expected = torch.zeros(2, 3, dtype=torch.float64), []
    for t in range(50):
        h = a[:, t] * h + b[:, t]
        expected.append(h)
    assert torch.allclose(log_scan(a.log(), b.log()), torch.stack(expected, 1), rtol=1e-12, atol=0)


def test_g_is_the_papers_activation_and_log_g_its_log():
    x = torch.tensor([-30.0, -2.0, -1e-3, 0.0, 0.7, 40.0], dtype=torch.float64)
    assert g(x).tolist() == pytest.approx([1 / (1 + math.exp(30)), 1 / (1 + math.exp(2)), 1 / (1 + math.exp(1e-3)),
                                          0.5, 1.2, 40.5], rel=1e-12)
    assert torch.allclose(log_g(x), torch.log(g(x)), rtol=1e-12, atol=0)


@pytest.mark.parametrize("layer", [MinGRU, MinLSTM])
@pytest.mark.parametrize("steps", [1, 7, 128])
def test_parallel_scan_equals_the_sequential_loop_in_float32(layer, steps):
    torch.manual_seed(steps)
    cell = layer(5, 8)
    x, state = torch.randn(3, steps, 5), torch.randn(1, 3, 8)  # h_{-1} of any sign (a carried training state)
    with torch.no_grad():
        for start in (None, state):
            (h, last), (h_loop, _) = cell(x, start), cell.sequential(x, start)
            assert h.dtype == torch.float32 and h.shape == (3, steps, 8) and last.shape == (1, 3, 8)
            torch.testing.assert_close(h, h_loop, rtol=2e-5, atol=2e-5)
            torch.testing.assert_close(last, h_loop[:, -1:].transpose(0, 1))


@pytest.mark.parametrize("layer", [MinGRU, MinLSTM])
def test_parallel_scan_gradients_equal_the_loops(layer):
    torch.manual_seed(0)
    cell = layer(4, 6).double()
    x = torch.randn(2, 20, 4, dtype=torch.float64, requires_grad=True)
    ga = torch.autograd.grad(cell(x)[0].pow(2).sum(), [x, *cell.parameters()])
    gb = torch.autograd.grad(cell.sequential(x)[0].pow(2).sum(), [x, *cell.parameters()])
    for a, b in zip(ga, gb):
        assert torch.allclose(a, b, rtol=1e-9, atol=1e-12)


def test_minlstm_gates_are_normalised_and_mingru_z_keeps_the_past():
    model = tiny("minlstm", n_layers=1)
    tr = model.trace(torch.randint(0, 13, (2, 15)))
    i, f, c = (tr[f"layers.0.gates.{n}"] for n in ("input", "forget", "cell"))
    assert torch.allclose(i + f, torch.ones_like(i))
    h = tr["layers.0.h"]
    h_prev = torch.cat([torch.zeros_like(h[:, :1]), h[:, :-1]], 1)
    assert torch.allclose(h, f * h_prev + i * c, atol=1e-6)
    gru = tiny("mingru", n_layers=1)
    tr = gru.trace(torch.randint(0, 13, (2, 15)))
    z, n, h = tr["layers.0.gates.update"], tr["layers.0.gates.new"], tr["layers.0.h"]
    h_prev = torch.cat([torch.zeros_like(h[:, :1]), h[:, :-1]], 1)
    assert torch.allclose(h, z * h_prev + (1 - z) * n, atol=1e-6)  # PyTorch's convention, as for the GRU


@pytest.mark.parametrize("cell", CELLS)
def test_trace_of_a_long_text_keeps_float32_accuracy(cell):
    """The trace's h comes from the chunked linear scan, within float32 of the loop over 1,000 tokens."""
    model = tiny(cell, n_layers=2)
    ids = torch.randint(0, 13, (1, 1000))
    tr = model.trace(ids, names=["layers.1.h"])
    with torch.no_grad():
        x = model.embed(ids)
        for rnn in model.layers:
            x = rnn.sequential(x)[0]
    torch.testing.assert_close(tr["layers.1.h"], x, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("cell", CELLS)
def test_save_load_round_trip_through_seqviz_load(cell, tmp_path):
    tok = Tokenizer.train("char", "to be or not to be, that is the question")
    model = tiny(cell, n_layers=3, tokenizer=tok)
    folder = model.save_pretrained(tmp_path / cell, {"name": cell})
    assert seqviz.detect(folder).name == "recurrent_lm"
    loaded = seqviz.load(folder)
    assert loaded.config == model.config and loaded.config.cell == cell
    assert sorted(loaded.state_dict()) == sorted(model.state_dict())
    a, b = model.trace("to be or not"), loaded.trace("to be or not")
    assert list(a) == list(b) and all(torch.equal(a[k], b[k]) for k in a)
    assert loaded.describe()["cell"] == cell


@pytest.mark.parametrize("cell", CELLS)
def test_greedy_sampling_follows_the_traced_logits(cell):
    model = tiny(cell, n_layers=2)
    prompt = [1, 2, 3, 4]
    out = generate(model, prompt, 12, temperature=0)
    logits = model.trace(torch.tensor([prompt + out]))["logits"][0]
    assert out == logits[len(prompt) - 1: -1].argmax(-1).tolist()
    assert generate(model, prompt, 12, temperature=1.0, seed=3) == generate(model, prompt, 12, temperature=1.0, seed=3)


@pytest.mark.parametrize("cell", CELLS)
def test_the_signal_table_names_trace_names_with_colours(cell):
    model = tiny(cell, n_layers=2)
    names = model.trace_names()
    entry = family(cell)
    for signal in entry.signals:
        assert signal in SIGNAL_COLOURS
        assert signal_key(1, signal) in names
    assert f"layers.0.gates.{entry.kept_by()}" in names
    assert [s for s in entry.signals if s != "h"] == list(entry.gates) == list(model.layers[0].GATES)
    # candidates and h are unbounded: saturation counts only the gates
    counts = saturation_counts(model.trace(torch.randint(0, 13, (1, 20))), cell, 2)
    assert {s for _layer, s in counts} == {s for s in entry.signals if entry.squash(s) == "sigmoid"}


def test_config_refuses_an_unknown_cell():
    with pytest.raises(ValueError, match="mingru"):
        LMConfig(cell="minrnn", vocab_size=3)
