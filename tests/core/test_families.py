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
    assert list(families.table()) == ["rnn", "gru", "lstm", "mingru", "minlstm", "mamba", "mamba2", "falcon_mamba",
                                      "minlm", "minlm_lstm", "rglru", "rwkv", "xlstm"]
    with pytest.raises(KeyError, match="seqviz knows rnn, gru"):
        families.get("wings")


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


def test_the_xlstm_entry_names_its_leaves_and_its_linear_form_reproduces_the_traced_memory(tmp_path):
    """transformers' xLSTM: the leaves the entry names are the ones traced (C on request), and its linear form
    (``hf_xlstm.unrolled``, through ``implicit.parts``) gives C̃_t = a_t ⊙ C̃_(t−1) + b_t at every step, and the
    read-out c_t = Σ_n read_t ⊙ C̃_t, against the traced C̃ and c (float32: a few ulp of their size)."""
    import seqviz
    from seqviz.introspect.implicit import parts
    from tests.families.xlstm_tiny import build_tiny_xlstm

    model = seqviz.load(build_tiny_xlstm(tmp_path / "x", seed=3))
    family = families.of(model)
    assert family.name == "xlstm" and family.linear.function and family.ranks("c") and not family.ranks("h")
    assert [n for n in model.trace_names() if n.startswith("layers.")] == family.layer_names(model.config.n_layers)
    ids = torch.tensor([model.tokenizer.encode("the quick brown fox jumps.").ids])
    for layer in range(model.config.n_layers):
        p = parts(model, ids, layer)
        C = model.trace(ids, names=[f"layers.{layer}.C"])[f"layers.{layer}.C"][0].double()
        scale = 1e-5 * (1 + float(C.abs().max()))
        assert torch.allclose(C[0], p.b[0], atol=scale), "C̃_0 = b_0: the memory starts at zero"
        assert torch.allclose(C[1:], p.a[1:] * C[:-1] + p.b[1:], atol=scale)
        assert torch.allclose((p.read * C).sum(-1), p.memory, atol=1e-5 * (1 + float(p.memory.abs().max())))
        assert p.edit == "C" and family.state_width(model.config, "c") == p.memory.shape[1]


def _other(name: str, tmp_path):
    """A tiny random model of a family outside seqviz's own cells (the entry's ``loader`` row opens it)."""
    import seqviz

    if name in ("minlm", "minlm_lstm"):
        from seqviz.lucid_minlm import MinLM
        from seqviz.lucid_minlm_keys import ByteTokenizer, MinLMConfig

        torch.manual_seed(4)
        config = MinLMConfig(cell=name, n_layers=2, d_embed=8, d_hidden=12, d_ff=16, conv_kernel=3 * (name == "minlm"))
        return MinLM(config, ByteTokenizer()).eval().requires_grad_(False)
    if name == "rwkv":  # a transformers RWKV-4: its linear form is a function (hf_rwkv.unrolled, e^k in float64)
        from tests.core.test_rwkv import build_tiny_rwkv

        return seqviz.load(build_tiny_rwkv(tmp_path / name, seed=4))
    from tests.core.test_falcon_mamba import build_tiny_falcon_mamba
    from tests.conftest import build_tiny_mamba

    build = build_tiny_falcon_mamba if name == "falcon_mamba" else build_tiny_mamba
    return seqviz.load(build(tmp_path / name, seed=4))


@pytest.mark.parametrize("name", ["mamba", "falcon_mamba", "minlm", "minlm_lstm", "rwkv"])
def test_the_linear_form_of_every_other_family_reproduces_its_traced_memory(name, tmp_path):
    """The leaves an entry names are the ones its model traces, and s_t = a_t ⊙ s_(t−1) + b_t rebuilt from what the
    entry names ("Memory as attention"'s ``parts``: leaves or its function) is the traced memory at every step."""
    from seqviz.introspect.implicit import parts

    model = _other(name, tmp_path)
    family = families.of(model)
    assert family.name == name and family.loader in seqviz_formats()
    layer_names = [n for n in model.trace_names() if n.startswith("layers.")]
    assert set(layer_names) == set(family.layer_names(model.config.n_layers))
    ids = torch.tensor([model.tokenizer.encode("the quick brown fox.").ids])
    for layer in range(model.config.n_layers):
        p = parts(model, ids, layer)
        s, steps = torch.zeros_like(p.b[0]), []
        for a_t, b_t in zip(p.a, p.b):
            s = a_t * s + b_t
            steps.append((s if p.read is None else s * p.read[len(steps)]).sum(-1))
        memory = torch.stack(steps) + p.skip
        assert torch.allclose(memory, p.memory, atol=1e-5 * (1 + float(p.memory.abs().max())))
        if not family.linear.function:  # leaves: the memory is the traced state itself
            traced = model.trace(ids, names=[f"layers.{layer}.{family.linear.state}"])
            assert torch.allclose(p.memory.float(), traced[f"layers.{layer}.{family.linear.state}"][0], atol=1e-6)


def seqviz_formats():
    from seqviz.registry import FAMILIES

    return FAMILIES
def test_the_rg_lru_entry_names_its_recurrent_blocks_leaves_and_its_linear_form_is_their_state(tmp_path):
    """A RecurrentGemma's layers are its recurrent blocks (the attention block between them is ``attention.0``):
    every layer traces exactly the entry's leaves, and s_t = a_t ⊙ s_(t−1) + b_t holds at every step, on a
    text of 51 tokens, past the attention window."""
    import seqviz
    from tests.families.rgemma import build_tiny_rgemma

    model = seqviz.load(build_tiny_rgemma(tmp_path / "tiny-rgemma"))
    family = families.of(model)
    assert family.name == "rglru" and family.memory == "s" and family.symbol == "a"
    assert [n for n in model.trace_names() if n.startswith("layers.")] == family.layer_names(model.config.n_layers)
    assert set(family.gates) <= {leaf.split(".", 1)[1] for leaf in family.leaves if leaf.startswith("gates.")}
    trace = model.trace("the quick brown fox jumps over the lazy dog, twice.")
    assert trace["tokens"].shape[1] == 51
    for layer in range(model.config.n_layers):
        a, b, s = _unrolled(trace, layer, family.linear)
        assert torch.allclose(s[0], b[0], atol=1e-6), "s_0 = b_0: the state starts at zero (the RG-LRU's reset)"
        assert torch.allclose(s[1:], a[1:] * s[:-1] + b[1:], atol=1e-5 * (1 + float(s.abs().max())))
        assert bool((a > 0).all() and (a < 1).all())


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
