"""transformers RecurrentGemma through seqviz: names pinned, parity with transformers' own forward (past the attention
window), the RG-LRU against transformers' own module and the paper's formula, sampling, edits, gradients by
distance, "Memory as attention" against a float64 loop, refusals and ``seqviz inspect``. Tiny random configs."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import seqviz
from seqviz.files import CheckpointError
from seqviz.hf_rgemma import RecurrentGemmaLM
from tests.families.rgemma import WINDOW, build_tiny_rgemma

RECURRENT = ("h", "x", "gates.input", "gates.recurrence", "gates.forget", "gates.output", "write", "s")
GOLDEN = ["tokens", "mask", "embed", *[f"layers.0.{n}" for n in RECURRENT], *[f"layers.1.{n}" for n in RECURRENT],
          "attention.0.h", *[f"layers.2.{n}" for n in RECURRENT], "logits", "loss", "loss_mask"]
STREAMS = ["embed", "layers.0.h", "layers.1.h", "attention.0.h", "layers.2.h"]  # transformers' hidden_states


@pytest.fixture(scope="module")
def lm(tmp_path_factory):
    return seqviz.load(build_tiny_rgemma(tmp_path_factory.mktemp("rgemma") / "tiny-rgemma", tokenizer=False))


def _ids(T: int, rows: int = 2, seed: int = 0) -> torch.Tensor:
    return torch.randint(0, 37, (rows, T), generator=torch.Generator().manual_seed(seed))


def test_a_folder_is_detected_and_loaded_with_names_pinned(lm):
    assert isinstance(lm, RecurrentGemmaLM) and lm.config.blocks == ("recurrent", "recurrent", "attention", "recurrent")
    trace = lm.trace(_ids(20))
    assert list(trace) == GOLDEN  # attention weights only when asked ([B, heads, T, T])
    assert lm.trace_names() == GOLDEN[:GOLDEN.index("attention.0.h") + 1] + ["attention.0.weights"] + \
        GOLDEN[GOLDEN.index("attention.0.h") + 1:]
    assert trace["layers.2.s"].shape == (2, 20, 24) and trace["attention.0.h"].shape == (2, 20, 16)
    only = lm.trace(_ids(20), names=["layers.1.gates.forget", "attention.0.weights"])
    assert list(only) == ["layers.1.gates.forget", "attention.0.weights"]
    assert only["attention.0.weights"].shape == (2, 2, 20, 20)


@pytest.mark.parametrize("T", [45, 180])  # both past the attention window of 16 tokens
def test_logits_and_streams_equal_transformers_forward(lm, T):
    ids = _ids(T)
    trace = lm.trace(ids)
    with torch.no_grad():
        run = lm.model(ids, output_hidden_states=True, use_cache=False)
        last = lm.model.model.final_norm(trace["layers.2.h"])  # transformers' last hidden state is normalised
    scale = float(run.logits.abs().max())
    assert float((trace["logits"] - run.logits).abs().max()) <= 1e-4 * scale
    for name, theirs in zip(STREAMS, run.hidden_states[:-1]):
        assert float((trace[name] - theirs).abs().max()) <= 1e-4 * float(theirs.abs().max()), name
    assert float((last - run.hidden_states[-1]).abs().max()) <= 1e-4 * float(last.abs().max())
    loss = torch.nn.functional.cross_entropy(run.logits[:, :-1].reshape(-1, 37), ids[:, 1:].reshape(-1))
    assert trace.mean_loss() == pytest.approx(float(loss), rel=1e-5)


def test_the_rg_lru_is_transformers_module_and_the_papers_formula(lm):
    """s from transformers' own ``RecurrentGemmaRglru`` fed the traced x; a_t = σ(Λ)^(c·r_t) with Λ = −Λ' (the
    paper's form, from the traced r_t); the attention weights are transformers' eager ones, 0 outside the window."""
    from transformers import RecurrentGemmaForCausalLM

    ids = _ids(45)
    trace = lm.trace(ids, names=["layers.1.x", "layers.1.gates.recurrence", "layers.1.gates.forget", "layers.1.s",
                                 "attention.0.weights"])
    lru = lm.model.model.layers[1].temporal_block.rg_lru
    with torch.no_grad():
        lru.recurrent_states = None
        theirs = lru(trace["layers.1.x"], torch.arange(45)[None].expand(2, -1))
    assert torch.allclose(trace["layers.1.s"], theirs, atol=1e-5 * float(theirs.abs().max()))
    paper = torch.sigmoid(-lru.recurrent_param.double()) ** (8 * trace["layers.1.gates.recurrence"].double())
    assert torch.allclose(trace["layers.1.gates.forget"].double(), paper, rtol=1e-5)
    eager = RecurrentGemmaForCausalLM.from_pretrained(lm.card["path"], attn_implementation="eager").eval()
    with torch.no_grad():
        (weights,) = eager(ids, output_attentions=True, use_cache=False).attentions
    ours = trace["attention.0.weights"]
    assert torch.allclose(ours, weights, atol=1e-6)
    t, j = torch.arange(45)[:, None], torch.arange(45)[None]
    assert float(ours[..., (j > t) | (j <= t - WINDOW)].abs().max()) == 0 and torch.allclose(ours.sum(-1), torch.ones(1))


def test_sampling_carries_each_blocks_state_as_transformers_forward_reads_the_whole_text(lm):
    """One token at a time past the window, the logits are transformers' forward's on the whole text; greedy tokens
    are the argmax of its forward on the grown text; a seed fixes a sampled continuation."""
    from seqviz.hf_rgemma import stepper

    ids = _ids(50, rows=1, seed=6)
    step = stepper(lm)
    stepped = torch.stack([step(int(token), t) for t, token in enumerate(ids[0])])
    with torch.no_grad():
        whole = lm.model(ids, use_cache=False).logits[0]
    assert float((stepped - whole).abs().max()) <= 1e-4 * float(whole.abs().max())
    prompt = _ids(20, rows=1, seed=3)[0].tolist()
    greedy = lm.sample(prompt, 30, temperature=0)
    with torch.no_grad():
        logits = lm.model(torch.tensor([prompt + greedy]), use_cache=False).logits[0]
    assert logits[len(prompt) - 1:-1].argmax(-1).tolist() == greedy
    assert lm.sample(prompt, 12, temperature=1.0, seed=5) == lm.sample(prompt, 12, temperature=1.0, seed=5)
    with pytest.raises(ValueError, match="at least one prompt token"):
        lm.sample([], 3)


def test_an_edit_of_the_state_is_the_linear_form_without_that_write(lm):
    """Knocking token j's write out of layer 1's state (s_j − b_j at step j) leaves s_t − (∏_{k=j+1..t} a_k) b_j at
    every later step (the layer's gates read only its input, which the edit does not reach), nothing before j, and
    changes the blocks above from j on."""
    ids, j = _ids(45, rows=1), 20
    plain = lm.trace(ids)
    write = plain["layers.1.write"][0, j]

    def knock(state, t):
        return state - write if t == j else state

    edited = lm.trace(ids, edits=[("layers.1.s", knock)])
    a, s = plain["layers.1.gates.forget"][0].double(), plain["layers.1.s"][0].double()
    kept = torch.cumprod(torch.cat([torch.ones(1, 24, dtype=torch.float64), a[j + 1:]]), 0)  # ∏ a from j + 1 to t
    expected = s[j:] - kept * write.double()
    assert torch.allclose(edited["layers.1.s"][0, j:].double(), expected, atol=1e-5 * float(s.abs().max()))
    scale = float(plain["logits"].abs().max())  # the edited run scans step by step: float32 rounding apart
    assert float((edited["logits"][0, :j] - plain["logits"][0, :j]).abs().max()) <= 1e-5 * scale
    assert float((edited["logits"][0, j:] - plain["logits"][0, j:]).abs().max()) > 1e-2 * scale
    with pytest.raises(ValueError, match="no state 'attention.0.h' to edit"):
        lm.trace(ids, edits=[("attention.0.h", knock)])


def test_the_gradient_by_distance_is_the_product_of_decays(lm):
    """In the last block, ∂s_t/∂s_k = diag(∏_{m=k+1..t} a_m) (its gates read only its input): G[t, k] =
    ‖(∏ a) ⊙ ∂L_t/∂s_t‖, with ∂L_t/∂s_t taken by hand from the traced s through the block's read-out."""
    from seqviz.hf_rgemma import head
    from seqviz.hf_rgemma_blocks import mlp
    from seqviz.introspect import gradients

    ids = _ids(24, rows=1, seed=2)
    G = gradients.gradient_matrix(lm, ids, layer=2, wrt="s")
    trace = lm.trace(ids)
    block = lm.model.model.layers[3]
    t = 19
    s = trace["layers.2.s"][0].detach().requires_grad_(True)
    with torch.enable_grad():
        out = mlp(block, trace["attention.0.h"][0] + block.temporal_block.linear_out(s * trace["layers.2.gates.output"][0]))
        loss = -torch.log_softmax(head(lm.model, out[None])[0, t], -1)[ids[0, t + 1]]
        (g,) = torch.autograd.grad(loss, s)
    a = trace["layers.2.gates.forget"][0].double()
    for k in range(t + 1):
        expected = float((torch.prod(a[k + 1:t + 1], 0) * g[t].double()).norm())
        assert G[t, k] == pytest.approx(expected, rel=1e-4)
    assert np.isnan(G[t, t + 1]) and G.shape == (23, 24)
    far = gradients.gradient_matrix(lm, ids, layer=0)  # the view's default: the entry's carried state s
    assert np.all(np.isfinite(far[np.tril_indices(23)])) and gradients.connectivity(lm, ids, 10).shape == (11,)


def test_memory_as_attention_is_the_float64_unrolled_recurrence(lm):
    """``implicit.contributions`` through the entry: [t, j, u] = (∏_{k=j+1..t} a_k) b_j by a float64 loop over the
    traced a and b; the rows sum to the traced state s."""
    from seqviz.introspect import implicit

    ids = _ids(30, rows=1, seed=4)[0].tolist()
    got = implicit.contributions(lm, ids, layer=2)
    trace = lm.trace([ids], names=["layers.2.gates.forget", "layers.2.write", "layers.2.s"])
    a, b = trace["layers.2.gates.forget"][0].double().numpy(), trace["layers.2.write"][0].double().numpy()
    want = np.zeros((30, 30, 24))
    for j in range(30):
        kept = b[j]
        for t in range(j, 30):
            kept = kept if t == j else kept * a[t]
            want[t, j] = kept
    assert np.allclose(got.contributions, want, rtol=1e-5, atol=1e-6 * np.abs(want).max())
    assert np.allclose(got.contributions.sum(1), trace["layers.2.s"][0].numpy(), atol=1e-5 * np.abs(want).max())
    assert got.family == "rglru" and not got.skip.any()


def test_bad_folders_and_inputs_are_refused_in_one_sentence(lm, tmp_path):
    folder = build_tiny_rgemma(tmp_path / "pickled", tokenizer=False, layers=1)
    (folder / "model.safetensors").rename(folder / "pytorch_model.bin")
    with pytest.raises(CheckpointError, match="only pickled weights"):
        seqviz.load(folder)
    with pytest.raises(ValueError, match="no tokenizer"):
        lm.trace("text")
    with pytest.raises(ValueError, match=r"token ids must lie in \[0, 37\)"):
        lm.trace([[1, 99]])


def test_a_folder_with_seqvizs_vocabulary_opens_and_inspect_says_what_it_is(tmp_path, capsys):
    """Hawk (recurrent blocks only) with seqviz's own vocab.json; ``seqviz inspect`` prints its blocks and names."""
    from seqviz.cli import main
    from seqviz.data.tokenizers import Tokenizer
    from tests.conftest import TINY_ALPHABET

    tok = Tokenizer.train("char", TINY_ALPHABET)
    folder = build_tiny_rgemma(tmp_path / "hawk", tokenizer=False, block_types=("recurrent",), layers=2,
                               vocab_size=len(tok))
    (folder / "vocab.json").write_text(json.dumps(tok.to_dict()))
    hawk = seqviz.load(folder)
    assert hawk.tokenizer.kind == "char" and hawk.config.tokenizer == "char" and hawk.config.n_layers == 2
    assert hawk.trace("To be, or not")["tokens"].shape == (1, 13)
    assert main(["inspect", str(folder)]) == 0
    said = json.loads(capsys.readouterr().out)
    assert said["found"].startswith("a transformers RecurrentGemma") and said["cell"] == "rglru"
    assert said["blocks"] == ["recurrent", "recurrent"] and said["trace_names"][3:5] == ["layers.0.h", "layers.0.x"]
