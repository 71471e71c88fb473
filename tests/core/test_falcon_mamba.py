"""transformers FalconMamba through seqviz: Mamba's names and equations with its RMS-normalised Δ, B and C, against
transformers' own forward (logits, hidden states, sampling, an edit, gradients) and float64 references built by hand
from the mixer's weights. A tiny random config with a character tokenizer, built offline."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import seqviz
from seqviz import families
from seqviz.hf_falcon_mamba import FalconMambaLM
from tests.conftest import TINY_ALPHABET, _tiny_mamba
from tests.core.test_mamba import GOLDEN

TEXT = "To be, or not to be, that is the question: whether 'tis nobler in the mind to suffer"


def build_tiny_falcon_mamba(path, seed: int = 0, tokenizer: bool = True, alphabet: str = TINY_ALPHABET):
    """A 2-block transformers FalconMamba (16 wide, 32 channels x 4 states), random weights moved far from the
    init, saved with a character tokenizer over ``alphabet``."""
    from transformers import FalconMambaConfig, FalconMambaForCausalLM

    return _tiny_mamba(path, seed, tokenizer, alphabet, lambda vocab_size: FalconMambaForCausalLM(FalconMambaConfig(
        vocab_size=vocab_size, hidden_size=16, state_size=4, num_hidden_layers=2, expand=2, conv_kernel=4,
        time_step_rank=3, use_cache=False, tie_word_embeddings=False)))


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return build_tiny_falcon_mamba(tmp_path_factory.mktemp("falcon") / "tiny-falcon-mamba")


@pytest.fixture(scope="module")
def lm(folder):
    return seqviz.load(folder)


def _ids(lm, T: int) -> torch.Tensor:
    torch.manual_seed(T)
    return torch.randint(1, lm.config.vocab_size, (2, T))


def test_a_falcon_mamba_folder_opens_with_mambas_names_pinned(folder, lm):
    assert seqviz.detect(folder).name == "falcon_mamba" and isinstance(lm, FalconMambaLM)
    assert families.of(lm).name == "falcon_mamba" and families.of(lm).title == "FalconMamba"
    assert (lm.config.cell, lm.config.channels, lm.config.states) == ("mamba", 32, 4)
    assert list(lm.trace(TEXT)) == GOLDEN
    assert "FalconMambaForCausalLM" in lm.card["architecture"] and "RMS" in lm.card["architecture"]
    assert seqviz.registry.FAMILIES["falcon_mamba"].read_shape(folder).family == "falcon_mamba"  # no torch needed


@pytest.mark.parametrize("T", [45, 180])
def test_logits_and_hidden_states_equal_transformers_forward(lm, T):
    """Within 1e-4 of the logits' scale (float32 rounding through two blocks is ~1e-6 of it)."""
    ids = _ids(lm, T)
    trace = lm.trace(ids)
    with torch.no_grad():
        run = lm.model(ids, output_hidden_states=True)
    scale = float(run.logits.abs().max())
    assert float((trace["logits"] - run.logits).abs().max()) <= 1e-4 * scale
    for i in range(2):
        assert float((trace[f"layers.{i}.h"] - run.hidden_states[i]).abs().max()) <= 1e-4 * float(
            run.hidden_states[i].abs().max())


def test_b_c_and_delta_are_rms_normalised_by_hand(lm):
    """Δ = softplus(W_Δ RMSNorm(step) + b_Δ), B and C of unit RMS, from x_proj of the traced u (float64 by hand);
    the same weights read as a plain Mamba (no norms) give other logits: the norms are what makes it FalconMamba."""
    from transformers import MambaConfig, MambaForCausalLM

    names = ["layers.1.x", "layers.1.dt", "layers.1.B", "layers.1.C"]
    t = lm.trace(TEXT, names=names)
    u, dt, B, C = (t[n][0].double() for n in names)
    mixer = lm.model.backbone.layers[1].mixer
    step, b, c = torch.split(u @ mixer.x_proj.weight.double().T, [3, 4, 4], -1)

    def rms(x):
        return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)

    assert torch.allclose(B, rms(b), atol=1e-5) and torch.allclose(C, rms(c), atol=1e-5)
    hand = F.softplus(rms(step) @ mixer.dt_proj.weight.double().T + mixer.dt_proj.bias.double())
    assert torch.allclose(dt, hand, rtol=1e-5, atol=1e-7)
    plain = MambaForCausalLM(MambaConfig(**{k: v for k, v in lm.model.config.to_dict().items()
                                            if k not in ("model_type", "architectures")}))
    plain.load_state_dict(lm.model.state_dict(), strict=False)
    ids = _ids(lm, 45)
    with torch.no_grad():
        assert float((plain.eval()(ids).logits - lm.trace(ids, names=["logits"])["logits"]).abs().max()) > 1e-2


def test_sampling_step_by_step_is_transformers_full_forward(lm):
    """Greedy and temperature-1 tokens (the same generator) from the carried state equal what transformers'
    forward over prompt + sample gives at each step."""
    prompt = lm.tokenizer.encode("To be, or").ids
    for temperature, seed in ((0.0, 0), (1.0, 5)):
        got = lm.sample(prompt, 15, temperature, seed=seed)
        gen, ids = torch.Generator().manual_seed(seed), list(prompt)
        with torch.no_grad():
            for _ in range(15):
                logits = lm.model(torch.tensor([ids])).logits[0, -1]
                logits[lm.banned()] = -float("inf")
                ids.append(int(logits.argmax()) if temperature == 0 else
                           int(torch.multinomial(torch.softmax(logits, -1), 1, generator=gen)))
        assert got == ids[len(prompt):], temperature


def test_an_edit_of_a_blocks_output_is_transformers_forward_with_that_output_replaced(lm):
    """layers.0.h set to 0 on units 2 and 5 at step 6: block 1 (its conv and scan) reads the edited stream, as
    transformers' forward does with a hook replacing block 0's output there."""
    ids = torch.tensor([lm.tokenizer.encode(TEXT[:30]).ids])

    def ablate(h, t):
        if t == 6:
            h = h.clone()
            h[:, [2, 5]] = 0
        return h

    edited = lm.trace(ids, names=["logits"], edits=[("layers.0.h", ablate)])["logits"]

    def hook(_module, _inputs, output):
        output = output.clone()
        output[:, 6, [2, 5]] = 0
        return output

    handle = lm.model.backbone.layers[0].register_forward_hook(hook)
    try:
        with torch.no_grad():
            theirs = lm.model(ids).logits
    finally:
        handle.remove()
    assert float((edited - theirs).abs().max()) <= 1e-5 * float(theirs.abs().max())
    assert float((edited - lm.trace(ids, names=["logits"])["logits"]).abs().max()) > 1e-3  # the edit did something


def test_the_gradient_by_distance_is_autograd_through_transformers_forward(lm):
    """G[t, k] = ‖∂L_t/∂h_k‖ of block 0 equals autograd through transformers' forward with block 0's output a leaf."""
    from seqviz.introspect.gradients import by_distance, gradient_matrix

    ids = torch.tensor([lm.tokenizer.encode("To be, or not to be: that is").ids])
    G = gradient_matrix(lm, ids, layer=0, wrt="h")
    T = ids.shape[1]
    with torch.no_grad():
        h = lm.model(ids, output_hidden_states=True).hidden_states[0]  # after block 0 (= layers.0.h)
    reference = np.full((T - 1, T), np.nan)
    for t in range(T - 1):
        leaf = h.clone().requires_grad_(True)
        handle = lm.model.backbone.layers[0].register_forward_hook(lambda _m, _i, _o: leaf)
        try:
            with torch.enable_grad():
                (g,) = torch.autograd.grad(F.cross_entropy(lm.model(ids).logits[0, t:t + 1], ids[0, t + 1:t + 2]), leaf)
        finally:
            handle.remove()
        reference[t, : t + 1] = g[0, : t + 1].double().norm(dim=-1).numpy()
    assert np.allclose(G, reference, rtol=1e-4, atol=1e-7, equal_nan=True)
    assert np.allclose(by_distance(G)["mean"], by_distance(reference)["mean"], rtol=1e-4)


def test_memory_and_decay_through_the_entry_are_the_hand_product_of_exp_delta_a(lm):
    """The entry's retention (decay, kept by s): the memory view's first channel and span are those of
    ∏ exp(Δ_t A) of each channel's slowest state, cumulated by hand in float64 from the traced Δ and A_log."""
    from seqviz.views.gates import memory_spans

    family = families.of(lm)
    assert (family.kept_by(), family.memory, family.symbol) == ("decay", "s", "Ā")
    ids = tuple(lm.tokenizer.encode(TEXT).ids)
    view = memory_spans(lm, ids, layer=1, position=0, delta=0.0)
    dt = lm.trace([list(ids)], names=["layers.1.dt"])["layers.1.dt"][0].double()
    A = -torch.exp(lm.model.backbone.layers[1].mixer.A_log.double())
    product = torch.cumprod(torch.exp(dt[:, :, None] * A), 0).max(-1).values.numpy()  # the slowest state's
    span = np.where((product > 0.5).all(0), len(ids), (product > 0.5).argmin(0))
    best = int(np.lexsort((np.arange(len(span)), -np.log10(product[-1]), -span))[0])
    assert view.facts["unit"] == best and view.facts["span"] == int(span[best])


def test_memory_as_attention_is_the_float64_unrolled_scan(lm):
    """[t, j, c] = Σ_n C_t[n] ∏_(k=j+1..t) exp(Δ_k[c] A[c, n]) Δ_j[c] B_j[n] u_j[c] in float64, loop by loop, from
    the traced (normalised) B, C and Δ; with D·u_t it sums to the traced scan output."""
    from seqviz.introspect.implicit import contributions

    text = TEXT[:20]
    names = [f"layers.0.{n}" for n in ("x", "dt", "B", "C", "state")]
    t = lm.trace(text, names=names)
    u, dt, B, C, state = (t[n][0].double() for n in names)
    mixer = lm.model.backbone.layers[0].mixer
    A = -torch.exp(mixer.A_log.double())  # [D, N]
    T, D = u.shape
    ref = np.zeros((T, T, D))
    for i in range(T):
        for j in range(i + 1):
            kept = torch.exp(dt[j + 1: i + 1, :, None] * A).prod(0)  # [D, N]
            ref[i, j] = (C[i] * kept * dt[j, :, None] * B[j] * u[j, :, None]).sum(-1).numpy()
    got = contributions(lm, text, layer=0)
    assert got.family == "falcon_mamba"
    assert np.allclose(got.contributions, ref, rtol=1e-5, atol=1e-6)
    memory = (state * C[:, None, :]).sum(-1) + u * mixer.D.double()
    assert np.allclose(got.contributions.sum(1) + got.skip, memory.numpy(), rtol=1e-4, atol=1e-5)


def test_inspect_says_what_it_is(folder, capsys):
    from seqviz.cli import main

    assert main(["inspect", str(folder)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["found"].startswith("a transformers FalconMamba") and report["family"] == "transformers falcon_mamba"
    assert report["channels"] == 32 and "layers.1.state" in report["trace_names"]
