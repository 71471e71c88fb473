"""Every recurrent-LM page, and each of its tabs, through AppTest on a tiny random transformers Mamba folder."""

from __future__ import annotations

import pytest

from appkit.registry import PAGES
from tests.app.tabs import choose_tab, tab_sets, walk_family
from tests.app.test_minimal_pages import clean
from tests.app.test_pages import open_page
from tests.app.test_picker_truth import in_use
from tests.conftest import build_tiny_lm, build_tiny_mamba, build_tiny_mamba2, tiny_card

LM_PAGES = [p for p in PAGES if p.model_type == "recurrent_lm" and p.exists]


@pytest.fixture(scope="module")
def mamba_root(tmp_path_factory):
    """A checkpoints root: tiny-mamba and tiny-mamba2 (a character tokenizer of their own) beside a tiny LSTM
    (seqviz's vocabulary)."""
    root = tmp_path_factory.mktemp("mamba-checkpoints")
    build_tiny_mamba(root / "tiny-mamba")
    build_tiny_mamba2(root / "tiny-mamba2", tokenizer=True)
    lstm = build_tiny_lm("lstm", seed=1)
    lstm.save_pretrained(root / "tiny-lstm", tiny_card(lstm, "tiny-lstm"))
    return root


@pytest.mark.parametrize("name", ["tiny-mamba", "tiny-mamba2"])
@pytest.mark.parametrize("page", LM_PAGES, ids=[p.path for p in LM_PAGES])
def test_every_tab_of_every_lm_page_runs_on_a_mamba(page, name, mamba_root, monkeypatch):
    walk_family(page, name, mamba_root, monkeypatch, "Mamba")


# ------------------------------------------------------------------ the numbers, against independent references
def _hf(mamba_root):
    from transformers import AutoTokenizer, MambaForCausalLM

    folder = mamba_root / "tiny-mamba"
    return MambaForCausalLM.from_pretrained(folder).eval(), AutoTokenizer.from_pretrained(folder)


def test_a_mamba_is_opened_from_a_local_folder_and_its_perplexity_is_transformers(mamba_root, monkeypatch):
    """Typed as a local folder; the perplexity shown is exp(mean cross-entropy) of transformers' own forward."""
    import math

    import torch
    import torch.nn.functional as F

    from appkit.sidebar import widget_key
    from seqviz.inputs import DEFAULT_SAMPLE, SAMPLES

    monkeypatch.setenv("SEQVIZ_CHECKPOINTS", str(mamba_root))
    page = next(p for p in LM_PAGES if p.path == "language_model.py")
    at = open_page(page)
    at.sidebar.radio(key=widget_key("recurrent_lm", "source", "language_model")).set_value("Local folder").run()
    at.sidebar.text_input(key=widget_key("recurrent_lm", "folder", "language_model")).input(
        str(mamba_root / "tiny-mamba")).run()
    clean(at, "language_model.py, local folder")
    assert in_use(at) == ("tiny-mamba", "local folder")
    assert any("Mamba" in c.value for c in at.sidebar.caption)  # "Found a transformers Mamba ...: 2-layer Mamba"
    model, tok = _hf(mamba_root)
    ids = [i for i in tok(SAMPLES[DEFAULT_SAMPLE], add_special_tokens=False).input_ids if i != tok.unk_token_id]
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0]
    loss = F.cross_entropy(logits[:-1], torch.tensor(ids[1:]))
    shown = next(m.value for m in at.metric if m.label == "Perplexity")
    assert shown == f"{math.exp(float(loss)):.2f}"
    at.toggle(key="lm_off").set_value(True).run()  # its channels' slowest states s, switched off inside its scan
    clean(at, "language_model.py, a Mamba's longest memories switched off")
    assert any("of the state s in layer 0" in c.value for c in at.caption)  # its channels' slowest states s


def test_the_memory_tab_ranks_channels_by_the_hand_computed_product_of_decays(mamba_root, monkeypatch):
    """The first channel of the memory tab and its span: ∏ exp(Δ_t·A) > 0.5, cumulated by hand from Δ and A_log
    (over every state of the channel: the slowest one is the channel's memory)."""
    import numpy as np
    import torch

    import seqviz
    from seqviz.introspect.language import prepare
    from seqviz.views.gates import DEFAULT_TEXT

    monkeypatch.setenv("SEQVIZ_CHECKPOINTS", str(mamba_root))
    page = next(p for p in LM_PAGES if p.path == "gates.py")
    at = open_page(page, {"recurrent_lm": "tiny-mamba", "gate_tab": "Memory ∏ f"})
    clean(at, "gates.py memory")
    lm = seqviz.load(mamba_root / "tiny-mamba")
    ids = prepare(lm.tokenizer, DEFAULT_TEXT)[0]  # as the page reads it: the pieces it does not know left out
    dt = lm.trace([ids], names=["layers.0.dt"])["layers.0.dt"][0].double()  # [T, D]
    A = -torch.exp(lm.model.backbone.layers[0].mixer.A_log.double())  # [D, N]
    product = torch.cumprod(torch.exp(dt[:, :, None] * A), 0).max(-1).values.numpy()  # [T, D], from position 0
    span = np.where((product > 0.5).all(0), len(ids), (product > 0.5).argmin(0))
    best = int(np.lexsort((np.arange(len(span)), -np.log10(product[-1]), -span))[0])
    box = next(s for s in at.selectbox if s.label == "Unit (longest memory first)")
    assert int(box.value) == best
    metric = next(m for m in at.metric if m.label.startswith(f"Unit {best}: "))
    assert metric.value.split()[-2] == str(int(span[best]))
    assert any("Mamba keeps" in c.value for c in at.caption)


@pytest.mark.parametrize("name, says, not_said", [("tiny-mamba", "A channel is ranked by its slowest state", "per head"),
                                                   ("tiny-mamba2", "A is one number per head", "slowest state")])
def test_the_memory_tab_says_how_each_mamba_keeps_its_state(name, says, not_said, mamba_root, monkeypatch):
    """A Mamba's A is per channel and state (its slowest state ranks a channel); Mamba-2's is one per head."""
    monkeypatch.setenv("SEQVIZ_CHECKPOINTS", str(mamba_root))
    at = open_page(next(p for p in LM_PAGES if p.path == "gates.py"), {"recurrent_lm": name, "gate_tab": "Memory ∏ f"})
    clean(at, f"gates.py memory, {name}")
    captions = " ".join(c.value for c in at.caption)
    assert says in captions and not_said not in captions


def test_the_gradient_by_distance_is_autograd_through_transformers_forward(mamba_root):
    """G[t, k] = ‖∂L_t/∂h_k‖ of layer 0 equals autograd through transformers' own forward, with block 0's output
    replaced by a leaf (a forward hook), one loss at a time."""
    import numpy as np
    import torch
    import torch.nn.functional as F

    import seqviz
    from seqviz.introspect.gradients import by_distance, gradient_matrix

    lm = seqviz.load(mamba_root / "tiny-mamba")
    ids = torch.tensor([lm.tokenizer.encode("To be, or not to be: that is it.").ids])
    G = gradient_matrix(lm, ids, layer=0, wrt="h")  # a Mamba's own default is its state (next test)
    model, _tok = _hf(mamba_root)
    T = ids.shape[1]
    with torch.no_grad():
        h = model(ids, output_hidden_states=True).hidden_states[0]  # after block 0
    reference = np.full((T - 1, T), np.nan)
    for t in range(T - 1):
        leaf = h.clone().requires_grad_(True)
        hook = model.backbone.layers[0].register_forward_hook(lambda _m, _i, _o: leaf)
        try:
            logits = model(ids).logits
        finally:
            hook.remove()
        (g,) = torch.autograd.grad(F.cross_entropy(logits[0, t:t + 1], ids[0, t + 1:t + 2]), leaf)
        reference[t, : t + 1] = g[0, : t + 1].double().norm(dim=-1).numpy()
    assert np.allclose(G, reference, rtol=1e-4, atol=1e-7, equal_nan=True)
    curve = by_distance(G)
    assert np.allclose(curve["mean"], by_distance(reference)["mean"], rtol=1e-4)


def test_the_state_gradient_decays_as_the_hand_computed_product_of_exp_dt_a(mamba_root):
    """In the top block, ∂L_t/∂s_k = ∂L_t/∂s_t ⊙ ∏_(j=k+1..t) exp(Δ_j A) (the recurrence, differentiated by hand);
    the page's curve (G of the state, a Mamba's default) is the norm of it."""
    import numpy as np
    import torch
    import torch.nn.functional as F

    import seqviz
    from seqviz.introspect import mamba_gradients as mg
    from seqviz.views.gradients import matrix

    lm = seqviz.load(mamba_root / "tiny-mamba")
    text = "To be, or not to be: that is it."
    ids = torch.tensor([lm.tokenizer.encode(text).ids])
    T, DN = ids.shape[1], lm.config.channels * lm.config.states
    decay = lm.trace(ids, names=["layers.1.decay"])["layers.1.decay"][0].reshape(T, DN).double()
    G, _pieces = matrix(lm, text, tokens=T)  # the page's default: the top layer, its state for a Mamba
    h = lm.trace(ids, names=["layers.0.h"])["layers.0.h"]
    for t in (3, T - 2):
        eps = torch.zeros(1, T, DN, requires_grad=True)
        with torch.enable_grad():
            loss = F.cross_entropy(mg._head(lm, h, 1, eps)[0, t:t + 1], ids[0, t + 1:t + 2])
            (g,) = torch.autograd.grad(loss, eps)
        g = g[0].double()
        for k in range(t + 1):
            kept = torch.prod(decay[k + 1:t + 1], 0)  # empty product at k = t: 1
            assert torch.allclose(g[k], g[t] * kept, rtol=1e-4, atol=1e-9), (t, k)
        assert np.allclose(G[t, : t + 1], g[: t + 1].norm(dim=-1).numpy(), rtol=1e-4)
        assert float(g[t + 1:].abs().max()) == 0.0  # a state after t never reaches L_t


def test_a_zipped_mamba_folder_uploads_as_a_language_model(mamba_root):
    import io
    import zipfile

    from seqviz.registry import detect
    from seqviz.uploads import extract_upload

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for f in (mamba_root / "tiny-mamba").iterdir():
            z.write(f, f"tiny-mamba/{f.name}")
    path = extract_upload([("tiny-mamba.zip", buffer.getvalue())])
    assert detect(path).name == "mamba" and detect(path).model_type == "recurrent_lm"


@pytest.mark.parametrize("page", LM_PAGES, ids=[p.path for p in LM_PAGES])
def test_a_classic_cell_beside_a_mamba_runs_every_tab(page, mamba_root, monkeypatch):
    """With a Mamba among the checkpoints, an LSTM's pages (their comparisons and tables list every one) still run."""
    monkeypatch.setenv("SEQVIZ_CHECKPOINTS", str(mamba_root))
    at = open_page(page, {"recurrent_lm": "tiny-lstm"})
    clean(at, page.path)
    for key, labels in tab_sets(at.main):
        for label in labels:
            if choose_tab(at, key, label):
                at.run()
                clean(at, f"{page.path} · {label}")


def test_a_mamba_of_ones_own_is_compared_with_the_shipped_cells_and_the_page_says_the_tokens_differ(
        mamba_root, tmp_path, monkeypatch):
    """A Mamba typed as a folder outside the shipped ones joins the comparison; its tokenizer knows no comma, so it
    reads the sample text as other tokens than the shipped LSTM, and the page says so."""
    from appkit.sidebar import widget_key
    from tests.conftest import TINY_ALPHABET

    own = build_tiny_mamba(tmp_path / "my-mamba", seed=2, alphabet=TINY_ALPHABET.replace(",", ""))
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    (shipped / "tiny-lstm").symlink_to(mamba_root / "tiny-lstm")
    monkeypatch.setenv("SEQVIZ_CHECKPOINTS", str(shipped))
    monkeypatch.setenv("SEQVIZ_ALLOWED_DIRS", str(tmp_path))
    at = open_page(next(p for p in LM_PAGES if p.path == "language_model.py"))
    at.sidebar.radio(key=widget_key("recurrent_lm", "source", "language_model")).set_value("Local folder").run()
    at.sidebar.text_input(key=widget_key("recurrent_lm", "folder", "language_model")).input(str(own)).run()
    clean(at, "language_model.py, own Mamba")
    assert in_use(at) == ("my-mamba", "local folder")
    table = at.dataframe[0].value
    assert list(table["model"]) == ["my-mamba", "tiny-lstm"]
    assert any("different tokens" in i.value for i in at.info)
