"""lucidrains' minLM (mingru-pytorch) through seqviz: a user's state dict opened with its conventions read from the
keys, against lucidrains' own forward (logits, its token-by-token state, sampling, an edit, gradients) and float64
references built from its modules. Tiny random minLMs, built in the test."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import seqviz
from seqviz import families
from seqviz.files import CheckpointError
from seqviz.lucid_minlm import MinLM

minLM = pytest.importorskip("minGRU_pytorch.minLM").minLM  # requirements-dev.txt pins it
TEXT = "To be, or not to be, that is the question: whether 'tis nobler in the mind to suffer"
GOLDEN = ["tokens", "mask", "embed", "layers.0.h", "layers.0.gates.update", "layers.0.gates.new", "layers.0.stream",
          "layers.1.h", "layers.1.gates.update", "layers.1.gates.new", "layers.1.stream", "logits", "loss", "loss_mask"]
# (use_lstm, enable_conv, expansion): minGRU with a conv and to_out; minLSTM without either
KINDS = {"gru": (False, True, 1.5), "lstm": (True, False, 1.0)}


def build_minlm(kind: str = "gru", seed: int = 0):
    """lucidrains' minLM over 256 bytes, 2 blocks of dim 16 (ff_mult 2, conv kernel 3), weights moved far from
    the init so every part of a block matters."""
    use_lstm, conv, expansion = KINDS[kind]
    torch.manual_seed(seed)
    ref = minLM(num_tokens=256, dim=16, depth=2, ff_mult=2, expansion=expansion, conv_kernel_size=3,
                use_lstm=use_lstm, enable_conv=conv).eval()
    with torch.no_grad():
        for p in ref.parameters():
            p.add_(torch.randn_like(p) * 0.3)
    return ref


def save_minlm(ref, folder, prefix: str = "", suffix: str = ".safetensors", vocab: bool = True):
    """The state dict as a user saves it (``{prefix}`` before every key), with vocab.json of its 256 bytes."""
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    state = {prefix + k: v.contiguous() for k, v in ref.state_dict().items()}
    path = folder / f"minlm{suffix}"
    save_file(state, str(path)) if suffix == ".safetensors" else torch.save(state, path)
    if vocab:
        (folder / "vocab.json").write_text(json.dumps([chr(i) for i in range(256)]))
    return path


@pytest.fixture(scope="module", params=list(KINDS))
def pair(request, tmp_path_factory):
    ref = build_minlm(request.param)
    return ref, seqviz.load(save_minlm(ref, tmp_path_factory.mktemp(f"minlm-{request.param}")))


def test_a_state_dict_file_or_folder_opens_with_names_pinned_and_conventions_said(tmp_path):
    ref = build_minlm("gru")
    path = save_minlm(ref, tmp_path / "pt", prefix="_orig_mod.", suffix=".pt")  # torch.compile's prefix
    assert seqviz.detect(path).name == "minlm" and seqviz.detect(path.parent).name == "minlm"
    lm = seqviz.load(path.parent)
    assert isinstance(lm, MinLM) and families.of(lm).name == "minlm" and list(lm.trace(TEXT)) == GOLDEN
    said = " ".join(lm.card["conventions"])
    assert "z = σ(−gate)" in said and "kernel 3" in said and "expansion 1.5" in said
    assert "RMSNorm's epsilon" in lm.card["not_inferred"][0]
    assert (lm.config.d_embed, lm.config.d_hidden, lm.config.d_ff, lm.config.conv_kernel) == (16, 24, 32, 3)


def test_what_cannot_be_inferred_is_asked_for_exactly(tmp_path):
    path = save_minlm(build_minlm("gru"), tmp_path / "bare", vocab=False)
    with pytest.raises(CheckpointError, match=r'256 tokens in id order.*"tokenizer": "bytes"'):
        seqviz.load(path)
    (tmp_path / "bare" / "spec.json").write_text(json.dumps({"tokenizer": "bytes"}))
    lm = seqviz.load(path)
    enc = lm.tokenizer.encode("né")  # UTF-8: é is two bytes, its piece on the first
    assert enc.ids == [110, 0xC3, 0xA9] and "".join(enc.pieces) == "né"


@pytest.mark.parametrize("T", [45, 180])
def test_logits_equal_lucidrains_forward(pair, T):
    ref, lm = pair
    torch.manual_seed(T)
    ids = torch.randint(0, 256, (2, T))
    with torch.no_grad():
        theirs = ref(ids)
    assert float((lm.trace(ids, names=["logits"])["logits"] - theirs).abs().max()) <= 1e-4 * float(theirs.abs().max())


def _lucid_gates(ref, layer: int, ids):
    """lucidrains' own projection of its block ``layer`` (hooked): (hidden, gate) or (hidden, f, i) [T, I]."""
    seen = {}
    cell = ref.layers[layer][2]
    proj = getattr(cell, "to_hidden_and_gate", None) or cell.to_hidden_and_f_i_gate
    handle = proj.register_forward_hook(lambda _m, _i, out: seen.setdefault("out", out))
    try:
        with torch.no_grad():
            ref(ids)
    finally:
        handle.remove()
    return [p[0].double() for p in seen["out"].chunk(2 if hasattr(cell, "to_hidden_and_gate") else 3, -1)]


def _g(x):
    return torch.where(x >= 0, x + 0.5, torch.sigmoid(x))


def test_the_gates_and_state_are_lucidrains_in_seqvizs_convention(pair):
    """minGRU: update = σ(−gate), new = g(hidden), and h_t = z h_(t−1) + (1 − z) g(h̃) in float64; minLSTM: i′, f′
    normalised; the traced h is what lucidrains' cell hands its to_out."""
    ref, lm = pair
    ids = torch.tensor([list(TEXT[:40].encode())])
    t = lm.trace(ids)
    parts = _lucid_gates(ref, 1, ids)
    if families.of(lm).name == "minlm":
        hidden, gate = parts
        a, b = torch.sigmoid(-gate), torch.sigmoid(gate) * _g(hidden)
        assert torch.allclose(t["layers.1.gates.update"][0].double(), a, atol=1e-6)
    else:
        hidden, f, i = parts
        a, b = torch.sigmoid(f) / (torch.sigmoid(f) + torch.sigmoid(i)), torch.sigmoid(i) / (
            torch.sigmoid(f) + torch.sigmoid(i)) * _g(hidden)
        assert torch.allclose(t["layers.1.gates.forget"][0].double(), a, atol=1e-6)
    h, hs = torch.zeros_like(a[0]), []
    for k in range(len(a)):
        h = a[k] * h + b[k]
        hs.append(h)
    assert torch.allclose(t["layers.1.h"][0].double(), torch.stack(hs), rtol=1e-4, atol=1e-5)


def test_sampling_step_by_step_is_lucidrains_full_forward(pair):
    ref, lm = pair
    prompt = list(b"To be")
    for temperature, seed in ((0.0, 0), (1.0, 3)):
        got = lm.sample(prompt, 12, temperature, seed=seed)
        gen, ids = torch.Generator().manual_seed(seed), list(prompt)
        with torch.no_grad():
            for _ in range(12):
                logits = ref(torch.tensor([ids]))[0, -1]
                ids.append(int(logits.argmax()) if temperature == 0 else
                           int(torch.multinomial(torch.softmax(logits, -1), 1, generator=gen)))
        assert got == ids[len(prompt):], temperature


def test_an_edit_of_the_state_is_lucidrains_step_by_step_with_that_state_replaced(tmp_path):
    """The top block's h with units 1 and 4 set to 2.0 at step 5: every later step reads it, as lucidrains' minLM
    does when its carried prev_hiddens are so edited (its own recurrent decoding). (Below the top, seqviz's block
    above would read the edited state at step 5 itself, where lucidrains' had already run.)"""
    ref = build_minlm("lstm", seed=1)  # no conv: lucidrains' minLM can carry its state token by token
    lm = seqviz.load(save_minlm(ref, tmp_path))
    ids = list(TEXT[:20].encode())

    def clamp(h, t):
        if t == 5:
            h = h.clone()
            h[:, [1, 4]] = 2.0
        return h

    got = lm.trace([ids], names=["logits"], edits=[("layers.1.h", clamp)])["logits"][0]
    hiddens, rows = None, []
    with torch.no_grad():
        for t in range(len(ids)):
            logits, hiddens = ref(torch.tensor([ids[: t + 1]]), return_prev_hiddens=True, prev_hiddens=hiddens)
            if t == 5:
                hiddens[1] = hiddens[1].clone()
                hiddens[1][..., [1, 4]] = 2.0
            rows.append(logits[0, -1])
    theirs, kept = torch.stack(rows), [t for t in range(len(ids)) if t != 5]
    assert float((got[kept] - theirs[kept]).abs().max()) <= 1e-4 * float(theirs.abs().max())
    # at step 5 itself seqviz's to_out reads the edited h_5 (as the layer above an edited seqviz cell); lucidrains
    # had already used its own
    assert float((got[5] - theirs[5]).abs().max()) > 1e-3
    assert float((got[6:] - lm.trace([ids], names=["logits"])["logits"][0, 6:]).abs().max()) > 1e-3


def test_the_top_blocks_gradient_decays_as_the_hand_product_of_its_update_gates(tmp_path):
    """∂L_t/∂h_k of the top block = ∂L_t/∂h_t (through lucidrains' to_out onwards, a leaf by a hook) ⊙
    ∏_(j=k+1..t) σ(−gate_j) (the recurrence differentiated by hand): G and its curve by distance."""
    from seqviz.introspect.gradients import by_distance, gradient_matrix

    ref = build_minlm("gru", seed=2)
    lm = seqviz.load(save_minlm(ref, tmp_path))
    ids = torch.tensor([list(TEXT[:24].encode())])
    G = gradient_matrix(lm, ids, layer=1)
    _hidden, gate = _lucid_gates(ref, 1, ids)
    z = torch.sigmoid(-gate)  # [T, I]
    T = ids.shape[1]
    reference = np.full((T - 1, T), np.nan)
    for t in range(T - 1):
        box = {}

        def swap(_module, args):
            box["leaf"] = args[0].detach().clone().requires_grad_(True)
            return (box["leaf"],)

        handle = ref.layers[1][2].to_out.register_forward_pre_hook(swap)
        try:
            with torch.enable_grad():
                loss = F.cross_entropy(ref(ids)[0, t:t + 1], ids[0, t + 1:t + 2])
                (g,) = torch.autograd.grad(loss, box["leaf"])
        finally:
            handle.remove()
        direct = g[0, t].double()
        for k in range(t + 1):
            reference[t, k] = float((direct * z[k + 1: t + 1].prod(0)).norm())
    assert np.allclose(G, reference, rtol=1e-4, atol=1e-9, equal_nan=True)
    assert np.allclose(by_distance(G)["mean"], by_distance(reference)["mean"], rtol=1e-4)


def test_memory_through_the_entry_and_memory_as_attention_are_float64_products(pair):
    """The memory view's first unit and span are those of ∏ of lucidrains' own retention (σ(−gate), or f′),
    cumulated by hand; "Memory as attention" is [t, j, u] = ∏_(k=j+1..t) a_k · b_j in float64, summing to h."""
    from seqviz.introspect.implicit import contributions
    from seqviz.views.gates import memory_spans

    ref, lm = pair
    text = TEXT[:30]
    ids = torch.tensor([list(text.encode())])
    parts = _lucid_gates(ref, 0, ids)
    if families.of(lm).name == "minlm":
        a, b = torch.sigmoid(-parts[1]), torch.sigmoid(parts[1]) * _g(parts[0])
    else:
        f, i = torch.sigmoid(parts[1]), torch.sigmoid(parts[2])
        a, b = f / (f + i), i / (f + i) * _g(parts[0])
    product = torch.cumprod(a, 0).numpy()
    span = np.where((product > 0.5).all(0), len(a), (product > 0.5).argmin(0))
    best = int(np.lexsort((np.arange(len(span)), -np.log10(product[-1]), -span))[0])
    view = memory_spans(lm, tuple(ids[0].tolist()), layer=0, position=0, delta=0.0)
    assert view.facts["unit"] == best and view.facts["span"] == int(span[best])
    T = len(a)
    expected = np.zeros((T, T, a.shape[1]))
    for t in range(T):
        for j in range(t + 1):
            expected[t, j] = (a[j + 1: t + 1].prod(0) * b[j]).numpy()
    got = contributions(lm, text, layer=0)
    assert got.family == families.of(lm).name
    assert np.allclose(got.contributions, expected, rtol=1e-4, atol=1e-6)
    h = lm.trace(text, names=["layers.0.h"])["layers.0.h"][0].numpy()
    assert np.abs(got.contributions.sum(1) - h).max() <= 1e-5 * (1 + np.abs(h).max())


def test_a_seqviz_folder_round_trips_and_inspect_prints_the_conventions(pair, tmp_path, capsys):
    from seqviz.cli import main

    ref, lm = pair
    folder = lm.save_pretrained(tmp_path / "saved")
    again = seqviz.load(folder)
    ids = torch.tensor([list(TEXT[:20].encode())])
    assert torch.equal(again.trace(ids, names=["logits"])["logits"], lm.trace(ids, names=["logits"])["logits"])
    assert main(["inspect", str(lm.card["path"])]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["found"].startswith("lucidrains' minLM") and report["cell"] == families.of(lm).name
    assert any("no bias" in c for c in report["card"]["conventions"]) and len(report["card"]["not_inferred"]) == 3
