"""transformers Mamba through seqviz: parity with transformers' own forward, the state rebuilt from Δ, A, B, C
against transformers' selective scan, names pinned, and the refusals. Tiny random configs, built offline."""

import math

import pytest
import torch
import torch.nn.functional as F
from transformers import MambaForCausalLM
from transformers.models.mamba.modeling_mamba import mamba_selective_scan

import seqviz
from seqviz.files import CheckpointError
from seqviz.hf_mamba import MambaLM
from tests.conftest import build_tiny_mamba  # vocabulary 37 without a tokenizer

GOLDEN = ["tokens", "mask", "embed",
          "layers.0.h", "layers.0.x", "layers.0.dt", "layers.0.B", "layers.0.C", "layers.0.z",
          "layers.0.gates.decay", "layers.0.gates.output_z", "layers.0.s",
          "layers.1.h", "layers.1.x", "layers.1.dt", "layers.1.B", "layers.1.C", "layers.1.z",
          "layers.1.gates.decay", "layers.1.gates.output_z", "layers.1.s",
          "logits", "loss", "loss_mask"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    path = build_tiny_mamba(tmp_path_factory.mktemp("mamba") / "tiny-mamba", seed=0, tokenizer=False)
    return path


@pytest.fixture(scope="module")
def loaded(folder):
    return seqviz.load(folder)


IDS = torch.tensor([[3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3], [2, 7, 1, 8, 2, 8, 1, 8, 2, 8, 4, 5, 9, 0, 4, 5]])


def test_a_mamba_folder_is_detected_and_loaded_with_names_pinned(folder, loaded):
    assert seqviz.detect(folder).name == "mamba" and isinstance(loaded, MambaLM)
    trace = loaded.trace(IDS)
    assert list(trace) == GOLDEN  # decay and state only when asked (T x D x N each)
    on_request = {f"layers.{i}.{n}" for i in range(2) for n in ("decay", "state")}
    assert [n for n in loaded.trace_names() if n not in on_request] == GOLDEN
    assert loaded.trace_names().index("layers.0.state") == GOLDEN.index("layers.0.s") + 2
    assert trace["layers.1.dt"].shape == (2, 16, 24) and trace["layers.1.B"].shape == (2, 16, 4)


def test_logits_and_hidden_states_equal_transformers_forward(loaded):
    check_transformers_parity(loaded, IDS)


def check_transformers_parity(lm, ids):
    """seqviz's trace of ``ids`` against transformers' own forward of the same model (2 blocks, vocabulary 37):
    logits and each block's hidden state to 1e-5, the mean loss to a relative 1e-5."""
    trace = lm.trace(ids)
    with torch.no_grad():
        run = lm.model(ids, output_hidden_states=True, return_dict=True)
    assert (trace["logits"] - run.logits).abs().max() <= 1e-5
    for i in range(2):
        assert (trace[f"layers.{i}.h"] - run.hidden_states[i]).abs().max() <= 1e-5, i
    loss = F.cross_entropy(run.logits[:, :-1].reshape(-1, 37), ids[:, 1:].reshape(-1))
    assert trace.mean_loss() == pytest.approx(float(loss), rel=1e-5)


def test_the_state_rebuilt_from_dt_a_b_c_equals_transformers_scan(loaded):
    names = [f"layers.1.{n}" for n in ("x", "dt", "B", "C", "z", "decay", "state")]
    t = loaded.trace(IDS, names=names)
    u, dt, B, C, z, decay, state = (t[n] for n in names)
    A = -torch.exp(loaded.model.backbone.layers[1].mixer.A_log)
    assert torch.allclose(decay, torch.exp(dt[..., None] * A), rtol=1e-6, atol=0)
    s, ys = torch.zeros(2, 24, 4), []
    for k in range(IDS.shape[1]):  # s_t = exp(Δ_t A) s_{t-1} + Δ_t B_t u_t, y_t = C_t s_t, one step at a time
        s = decay[:, k] * s + dt[:, k, :, None] * B[:, k, None, :] * u[:, k, :, None]
        assert (state[:, k] - s).abs().max() <= 1e-5, k
        ys.append((s * C[:, k, None, :]).sum(-1))
    D = loaded.model.backbone.layers[1].mixer.D
    mine = (torch.stack(ys, 1) + u * D) * F.silu(z)
    theirs, last = mamba_selective_scan(u.transpose(1, 2), dt.transpose(1, 2), A, B.transpose(1, 2),
                                        C.transpose(1, 2), D=D, z=z.transpose(1, 2), return_last_state=True)
    assert (mine - theirs.transpose(1, 2)).abs().max() <= 1e-5
    assert (s - last).abs().max() <= 1e-5


def test_bad_folders_are_refused_in_one_sentence(folder, tmp_path):
    import shutil

    pickled = tmp_path / "pickled"
    shutil.copytree(folder, pickled)
    (pickled / "model.safetensors").rename(pickled / "pytorch_model.bin")
    with pytest.raises(CheckpointError, match="never unpickles"):
        seqviz.load(pickled)
    bigger = tmp_path / "bigger"
    shutil.copytree(folder, bigger)
    config = (bigger / "config.json").read_text().replace('"num_hidden_layers": 2', '"num_hidden_layers": 20')
    (bigger / "config.json").write_text(config)
    with pytest.raises(CheckpointError, match="do not match config.json"):
        seqviz.load(bigger)


def test_trace_input_errors_are_sentences(loaded):
    with pytest.raises(ValueError, match="no tokenizer"):
        loaded.trace("to be")
    with pytest.raises(ValueError, match=r"\[0, 37\)"):
        loaded.trace(torch.tensor([[1, 99]]))
    with pytest.raises(ValueError, match="no trace name"):
        loaded.trace(IDS, names=["layers.0.forget"])
    with pytest.raises(ValueError, match="no state 'layers.0.dt' to edit"):  # h, s and state: tests/core/test_mamba_edits.py
        loaded.trace(IDS, edits=[("layers.0.dt", lambda h, t: h)])


@pytest.fixture(scope="module")
def with_tokenizer(tmp_path_factory):

    return seqviz.load(build_tiny_mamba(tmp_path_factory.mktemp("mamba-tok") / "tiny-mamba"))


def test_it_reads_text_as_a_recurrent_lm_does(with_tokenizer):
    """LMConfig's names, seqviz's tokenizer interface (pieces join back into the text) and padded batches."""
    lm = with_tokenizer
    assert (lm.config.cell, lm.config.n_layers, lm.config.d_hidden, lm.config.channels) == ("mamba", 2, 16, 24)
    text = "To be, or [not] to be"
    enc = lm.tokenizer.encode(text)
    assert "".join(enc.pieces) == text and enc.unknown == ["[", "]"]
    short, long = enc.ids[:5], enc.ids
    batch = lm.trace([short, long])
    alone = lm.trace([short])
    assert batch["mask"].sum(1).tolist() == [5, len(long)]
    assert torch.allclose(batch["logits"][0, :5], alone["logits"][0], atol=1e-6)  # right padding is never read


def test_the_gates_are_the_slowest_states_decay_and_silu_z(with_tokenizer):
    lm = with_tokenizer
    t = lm.trace(["To be, or not to be"], names=["layers.1.dt", "layers.1.z", "layers.1.gates.decay",
                                                 "layers.1.gates.output_z", "layers.1.state", "layers.1.s"])
    A = -torch.exp(lm.model.backbone.layers[1].mixer.A_log)
    decay = torch.exp(t["layers.1.dt"][..., None] * A)  # [1, T, D, N]
    assert torch.allclose(t["layers.1.gates.decay"], decay.max(-1).values, rtol=1e-6, atol=0)
    assert torch.allclose(t["layers.1.gates.output_z"], F.silu(t["layers.1.z"]))
    slow = A.argmax(-1)
    assert torch.equal(t["layers.1.s"], t["layers.1.state"][..., torch.arange(24), slow])


def test_sampling_steps_the_state_as_transformers_forward_reads_the_whole_text(with_tokenizer):
    """Greedy tokens from the step-by-step state equal the argmax of transformers' forward over prompt + sample."""
    lm = with_tokenizer
    prompt = lm.tokenizer.encode("To be, or not").ids
    sample = lm.sample(prompt, 12, temperature=0.0)
    banned = lm.tokenizer.special_ids
    ids = list(prompt)
    with torch.no_grad():
        for _ in range(12):
            logits = lm.model(torch.tensor([ids])).logits[0, -1]
            logits[banned] = -float("inf")
            ids.append(int(logits.argmax()))
    assert sample == ids[len(prompt):]
    assert lm.sample(prompt, 20, 1.0, seed=3) == lm.sample(prompt, 20, 1.0, seed=3)


def test_seqviz_trains_a_mamba_that_transformers_and_seqviz_both_open(tmp_path):
    """``seqviz train lm --cell mamba``: the loop's forward equals transformers' own, the folder it writes
    opens in transformers and in seqviz (its own char vocabulary and card), and the loss went down."""
    from seqviz.data.corpus import Corpus
    from seqviz.data.tokenizers import Tokenizer
    from seqviz.introspect.mamba_gradients import loop_scan
    from seqviz.models.recurrent import cell_scan
    from seqviz.train.lm import TrainConfig, train_lm
    from seqviz.train.mamba import MambaTrainee

    text = "to be, or not to be, that is the question. " * 40
    tok = Tokenizer.train("char", text)
    torch.manual_seed(0)
    net = MambaTrainee(tok, hidden=16, layers=2, state_size=4)
    x = torch.tensor([tok.encode(text[:30]).ids])
    logits, state = net(x)
    assert state is None
    assert torch.allclose(logits, net.model(input_ids=x).logits, atol=1e-5)  # transformers' forward
    f, u = torch.rand(2, 9, 5), torch.randn(2, 9, 5)
    assert torch.allclose(loop_scan(f, u), cell_scan(f, u), atol=1e-6)  # the scan autograd follows

    corpus = Corpus("toy", text, text[:400], "toy split")
    out = tmp_path / "m"
    cfg = TrainConfig(steps=12, batch_size=4, seq_len=24, lr=1e-2, eval_every=6, eval_tokens=400, seed=0)
    train_lm(seqviz.config.LMConfig(vocab_size=1), cfg, corpus, out, tokenizer=tok,
             make_model=lambda t: MambaTrainee(t, hidden=16, layers=2, state_size=4))
    assert {"config.json", "model.safetensors", "vocab.json", "card.json", "scores.json"} <= {p.name for p in out.iterdir()}
    hf = MambaForCausalLM.from_pretrained(out, use_safetensors=True, local_files_only=True)
    lm = seqviz.load(out)
    assert isinstance(lm, MambaLM) and lm.config.tokenizer == "char" and lm.tokenizer.tokens == tok.tokens
    assert lm.card["architecture"] == "2-layer Mamba, hidden 16, 32 channels x 4 states, char-level"
    ids = torch.tensor([tok.encode(text[:40]).ids])
    assert torch.allclose(lm.trace(ids, names=["logits"])["logits"], hf(input_ids=ids).logits, atol=1e-5)
    history = lm.card["history"]
    assert history[-1]["val_loss"] < history[0]["val_loss"] and lm.card["val_loss"] < math.log(len(tok))
