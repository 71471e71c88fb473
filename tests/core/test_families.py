"""The family table: every entry is consistent with the models it describes (traces, linear forms, needs)."""

from __future__ import annotations

import pytest
import torch

from seqviz import families
from seqviz.families import NEEDS, Family, Linear
from seqviz.text import in_language as language
from tests.conftest import build_tiny_lm

CELLS = ("rnn", "gru", "lstm", "mingru", "minlstm")


def test_the_table_holds_every_shipped_family_once():
    assert list(families.table()) == ["rnn", "gru", "lstm", "mingru", "minlstm", "mamba", "mamba2", "rwkv"]
    with pytest.raises(KeyError, match="seqviz knows rnn, gru"):
        families.get("xlstm")


@pytest.mark.parametrize("cell", CELLS)
def test_an_entry_names_exactly_the_leaves_its_model_traces(cell):
    model = build_tiny_lm(cell)
    family = families.of(model)
    assert family.name == cell
    layer_names = [n for n in model.trace_names() if n.startswith("layers.")]
    assert layer_names == family.layer_names(model.config.n_layers)
    assert set(family.gates) <= {leaf.split(".", 1)[1] for leaf in family.leaves if leaf.startswith("gates.")}


def _unrolled(trace, layer: int, linear: Linear):
    """(a, b, s) [T, U] of one layer from the entry's linear form, read off the trace by name."""
    def leaf(name):
        complement = name.startswith("1-")
        x = trace[f"layers.{layer}.{name.removeprefix('1-')}"][0].double()
        return 1 - x if complement else x

    b = leaf(linear.write[0])
    for name in linear.write[1:]:
        b = b * leaf(name)
    return leaf(linear.decay), b, leaf(linear.state)


@pytest.mark.parametrize("cell", [c for c in CELLS if families.get(c).linear is not None])
def test_the_gated_linear_form_reproduces_the_traced_state(cell):
    """s_t = a_t ⊙ s_(t−1) + b_t, with a, b, s taken by the names the entry gives: the form "Memory as
    attention" unrolls. Checked at every step against the model's own state (float32: a few ulp of |s|)."""
    model = build_tiny_lm(cell, seed=3)
    trace = model.trace("the quick brown fox.")
    for layer in range(model.config.n_layers):
        a, b, s = _unrolled(trace, layer, families.of(model).linear)
        assert torch.allclose(s[0], b[0], atol=1e-6), "s_0 = b_0: the state starts at zero"
        assert torch.allclose(s[1:], a[1:] * s[:-1] + b[1:], atol=1e-5 * (1 + float(s.abs().max())))


def test_the_rwkv_entry_names_its_leaves_and_its_linear_form_is_the_traced_numerator(tmp_path):
    """A transformers RWKV: the leaves its entry names are the ones traced, and the parts its linear form gives
    (``hf_rwkv.unrolled``: a = e^(−w), b = e^(k_t)·v_t) rebuild the traced numerator a_t at every step."""
    import seqviz
    from seqviz.introspect.implicit import parts
    from tests.core.test_rwkv import build_tiny_rwkv

    model = seqviz.load(build_tiny_rwkv(tmp_path / "rwkv", seed=3))
    family = families.of(model)
    assert family.name == "rwkv" and families.get("rwkv") is family
    assert [n for n in model.trace_names() if n.startswith("layers.")] == family.layer_names(2)
    ids = torch.tensor([model.tokenizer.encode("the quick brown fox.").ids])
    for layer in range(2):
        p = parts(model, ids, layer)
        a, b, s = p.a[..., 0], p.b[..., 0], p.memory
        assert torch.allclose(s[0], b[0], rtol=1e-5, atol=1e-6), "s_0 = b_0: the state starts at zero"
        assert torch.allclose(s[1:], a[1:] * s[:-1] + b[1:], rtol=1e-4, atol=1e-5 * float(s.abs().max()))


def test_a_family_without_a_need_says_why_in_the_visitors_language():
    rnn, lstm = families.get("rnn"), families.get("lstm")
    assert lstm.why_not("memory") is None and lstm.applies("cell_path")
    assert "no gate that keeps its state" in rnn.why_not("memory")
    with language("zh"):
        said = rnn.why_not("memory")
        assert "no gate" not in said and any("\u4e00" <= c <= "\u9fff" for c in said), said
    with pytest.raises(KeyError, match="no need"):
        rnn.applies("wings")
    generic = Family(name="x", title="X", description="x", leaves=("h",), signals=("h",))
    assert generic.why_not("recurrent_weights") == f"This view needs {NEEDS['recurrent_weights']}, which a X does not have."


def test_retention_ranks_only_states_whose_units_are_the_memorys():
    lstm, mamba, rnn = families.get("lstm"), families.get("mamba"), families.get("rnn")
    assert lstm.kept_by() == "forget" and lstm.ranks("h") and lstm.ranks("c")
    assert mamba.ranks("s") and not mamba.ranks("h")
    with pytest.raises(ValueError, match="no gate"):
        rnn.kept_by()


def test_a_registered_family_is_found_and_removed():
    toy = families.register(Family(name="toy-x", title="T", description="t", leaves=("h",), signals=("h",)))
    try:
        assert families.of(type("C", (), {"cell": "toy-x"})()) is toy
    finally:
        families.unregister("toy-x")
    assert "toy-x" not in families.table()
