"""transformers xLSTM through seqviz: parity with transformers' own forward, cache and generate, the memory against
the paper's unstabilised equations in float64, edits, gradients, "Memory as attention" and the refusals. Tiny random
configs, built offline (tests/families/xlstm_tiny.py)."""

import math

import pytest
import torch
import torch.nn.functional as F

import seqviz
from seqviz.files import CheckpointError
from seqviz.hf_xlstm import XLSTMLM
from seqviz.hf_xlstm_cell import from_units
from seqviz.models.edits import SetUnits
from tests.families.xlstm_tiny import build_tiny_xlstm

LEAVES = ["h", "q", "k", "v", "gates.input", "gates.forget", "gates.output", "m", "n", "c"]
GOLDEN = ["tokens", "mask", "embed", *[f"layers.{i}.{leaf}" for i in range(2) for leaf in LEAVES],
          "logits", "loss", "loss_mask"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return build_tiny_xlstm(tmp_path_factory.mktemp("xlstm") / "tiny-xlstm", tokenizer=False)


@pytest.fixture(scope="module")
def lm(folder):
    return seqviz.load(folder)


def _ids(T: int, rows: int = 2, seed: int = 0) -> torch.Tensor:
    return torch.randint(0, 37, (rows, T), generator=torch.Generator().manual_seed(seed))


def test_an_xlstm_folder_is_detected_and_loaded_with_names_pinned(folder, lm):
    assert seqviz.detect(folder).name == "xlstm" and isinstance(lm, XLSTMLM)
    trace = lm.trace(_ids(16))
    assert list(trace) == GOLDEN  # the memory C only when asked (T x U x DK)
    assert [n for n in lm.trace_names() if not n.endswith(".C")] == GOLDEN
    assert lm.trace_names().index("layers.0.C") == GOLDEN.index("layers.0.c") + 1
    shapes = {leaf: tuple(trace[f"layers.1.{leaf}"].shape) for leaf in LEAVES}
    assert shapes == {"h": (2, 16, 64), "q": (2, 16, 64), "k": (2, 16, 64), "v": (2, 16, 64), "gates.input": (2, 16, 64),
                      "gates.forget": (2, 16, 64), "gates.output": (2, 16, 64), "m": (2, 16, 4), "n": (2, 16, 64),
                      "c": (2, 16, 64)}
    assert lm.trace(_ids(5), names=["layers.0.C"])["layers.0.C"].shape == (2, 5, 64, 16)
    assert (lm.config.heads, lm.config.key_dim, lm.config.value_dim, lm.config.units) == (4, 16, 16, 64)


@pytest.mark.parametrize("T", [45, 180])  # 2 chunks of 16 and 13 steps; 11 chunks and 4 steps
def test_logits_equal_transformers_chunkwise_forward(lm, T):
    ids = _ids(T)
    with torch.no_grad():
        theirs = lm.model(input_ids=ids).logits
    mine = lm.trace(ids, names=["logits", "loss", "loss_mask"])
    scale = float(theirs.abs().max())
    assert (mine["logits"] - theirs).abs().max() <= 1e-4 * scale
    loss = F.cross_entropy(theirs[:, :-1].reshape(-1, 37), ids[:, 1:].reshape(-1))
    assert mine.mean_loss() == pytest.approx(float(loss), rel=1e-5)


def test_the_memory_is_transformers_last_state_up_to_its_stabiliser(lm):
    """C̃ e^m is the unstabilised C whatever stabiliser a kernel chose (the chunkwise one's m differs from the
    step-by-step one's): the traced last memory, so scaled, equals transformers' cache after its chunkwise pass."""
    ids = _ids(45, rows=1)
    with torch.no_grad():
        cache = lm.model(input_ids=ids, use_cache=True).cache
    trace = lm.trace(ids, names=[f"layers.{i}.{n}" for i in range(2) for n in ("C", "m")])
    for i in range(2):
        C, n_, m = cache.rnn_state[i]
        mine = from_units(trace[f"layers.{i}.C"][:, -1], 4) * trace[f"layers.{i}.m"][:, -1, :, None, None].exp()
        theirs = C * m[..., None].exp()
        assert (mine - theirs).abs().max() <= 1e-4 * theirs.abs().max(), i


def _paper(model, ids: torch.Tensor, layer: int):
    """Block ``layer``'s mLSTM in float64 with the paper's unstabilised equations (Beck et al. 2024, eqs. 19-27):
    C_t = σ(f̃_t) C_(t−1) + e^(ĩ_t) k_t v_tᵀ, n_t likewise, h̃_t = C_tᵀ q̂_t / max(|n_tᵀ q̂_t|, 1), on a float64 copy of
    ``model`` with the block's input taken from transformers' own forward (a hook). Returns (h̃ [T, NH, DV], q̂, k, v
    [T, NH, ·], σ(f̃), e^(ĩ), max(|n_tᵀ q̂_t|, 1) [T, NH])."""
    import copy

    from transformers.models.xlstm.modeling_xlstm import soft_cap

    model, seen = copy.deepcopy(model).double(), {}
    block = model.backbone.blocks[layer]
    hook = block.register_forward_pre_hook(lambda _m, args: seen.setdefault("x", args[0]))
    with torch.no_grad():
        model(input_ids=ids)
        hook.remove()
        mlstm, x = block.mlstm_layer, block.norm_mlstm(seen["x"])[0]
        heads, cap = mlstm.config.num_heads, mlstm.config.gate_soft_cap
        q, k, v = (p(x).reshape(x.shape[0], heads, -1) for p in (mlstm.q, mlstm.k, mlstm.v))
        i, f = soft_cap(mlstm.igate_preact(x), cap).exp(), torch.sigmoid(soft_cap(mlstm.fgate_preact(x), cap))
        qs = q / math.sqrt(q.shape[-1])
        C, n, out, dens = torch.zeros(heads, q.shape[-1], v.shape[-1], dtype=x.dtype), torch.zeros_like(k[0]), [], []
        for t in range(x.shape[0]):
            C = f[t, :, None, None] * C + i[t, :, None, None] * k[t, :, :, None] * v[t, :, None, :]
            n = f[t, :, None] * n + i[t, :, None] * k[t]
            dens.append((qs[t] * n).sum(-1).abs().clamp_min(1))
            out.append((qs[t, :, :, None] * C).sum(1) / dens[-1][:, None])
    return torch.stack(out), qs, k, v, f, i, torch.stack(dens)


def test_the_traced_read_out_is_the_papers_unstabilised_memory_in_float64(lm):
    ids = _ids(60, rows=1)
    trace = lm.trace(ids, names=["layers.0.c", "layers.1.c"])
    for layer in range(2):
        h = _paper(lm.model, ids, layer)[0]
        c = trace[f"layers.{layer}.c"][0].double().reshape(h.shape)
        assert (c - h).abs().max() <= 1e-4 * h.abs().max(), layer


def test_memory_as_attention_equals_the_float64_shares_of_each_write(lm):
    """contributions[t, j, u] of column u (value channel of head h): ∏_(k=j+1..t) σ(f̃_k) e^(ĩ_j) v_j[u] k_jᵀ q̂_t /
    max(|n_tᵀ q̂_t|, 1), in float64 from the paper's unstabilised form; they sum to the traced read-out c."""
    from seqviz.introspect.implicit import contributions

    ids = _ids(40, rows=1, seed=2)
    got = contributions(lm, ids[0].tolist(), layer=1)
    h, qs, k, v, f, i, den = _paper(lm.model, ids, 1)
    T = qs.shape[0]
    logf = torch.cumsum(f.log(), 0)  # [T, NH]
    kept = torch.exp(logf[:, None] - logf[None]) * i[None]  # [t, j, NH]: ∏_(k=j+1..t) f_k · e^(ĩ_j)
    share = kept[..., None] * v[None] * (qs[:, None] * k[None]).sum(-1)[..., None] / den[:, None, :, None]
    share = torch.where(torch.tril(torch.ones(T, T, dtype=torch.bool))[..., None, None], share, 0).reshape(T, T, -1)
    assert abs(got.contributions - share.numpy()).max() <= 1e-4 * float(share.abs().max())
    assert abs(got.contributions.sum(1) + got.skip - got.memory).max() <= 1e-4 * float(abs(got.memory).max())
    assert abs(got.memory - h.reshape(T, -1).numpy()).max() <= 1e-4 * float(h.abs().max())


def test_greedy_sampling_is_transformers_generate_and_a_seed_repeats(lm):
    prompt = [3, 1, 4, 1, 5, 9, 2, 6]
    with torch.no_grad():
        theirs = lm.model.generate(torch.tensor([prompt]), max_new_tokens=20, do_sample=False, use_cache=True)
    assert lm.sample(prompt, 20, temperature=0) == theirs[0, len(prompt):].tolist()
    assert lm.sample(prompt, 20, 1.0, seed=3) == lm.sample(prompt, 20, 1.0, seed=3)


def test_an_edit_of_a_columns_read_out_moves_the_memory_by_the_least_change(lm):
    """``layers.0.c`` set over steps 4..7: those steps read the values set, earlier steps are untouched, and at step
    4 the memory moved only in the edited columns, along q̂_4 of their head (the least change that reads them)."""
    ids = _ids(20, rows=1, seed=4)
    names = ["layers.0.c", "layers.0.C", "layers.0.q", "loss"]
    plain = lm.trace(ids, names=names)
    units, values = [3, 21], torch.tensor([0.7, -0.3])
    edited = lm.trace(ids, names=names, edits=[("layers.0.c", SetUnits(units, values, span=(4, 8)))])
    assert torch.allclose(edited["layers.0.c"][0, 4:8][:, units], values.expand(4, 2), atol=1e-5)
    assert torch.equal(edited["layers.0.c"][0, :4], plain["layers.0.c"][0, :4])
    moved = (edited["layers.0.C"] - plain["layers.0.C"])[0, 4]  # [U, DK]
    assert moved[[u for u in range(64) if u not in units]].abs().max() == 0
    q = plain["layers.0.q"][0, 4].reshape(4, 16)
    for u in units:
        cosine = F.cosine_similarity(moved[u], q[u // 16], dim=0)
        assert abs(float(cosine)) == pytest.approx(1.0, abs=1e-5)
    assert (edited["loss"][0, 8:] - plain["loss"][0, 8:]).abs().max() > 1e-4  # later steps read the moved memory


def test_a_memory_wiped_at_one_step_keeps_only_later_writes(lm):
    """Zeroing C̃ at step 10 (``layers.0.C``) leaves C̃_t − (∏_(k=11..t) a_k) C̃_10 afterwards: the gates read only the
    block's input, so the memory's linear form (``unrolled``) says exactly what is lost."""
    from seqviz.hf_xlstm import unrolled

    ids = _ids(24, rows=1, seed=5)
    plain = lm.trace(ids, names=["layers.0.C"])["layers.0.C"][0]
    wiped = lm.trace(ids, names=["layers.0.C"], edits=[("layers.0.C", lambda s, t: s * 0 if t == 10 else s)])
    a = unrolled(lm, ids, 0).a.float()  # [T, U, DK]
    kept = plain[10]
    for t in range(11, 24):
        kept = a[t] * kept
        assert torch.allclose(wiped["layers.0.C"][0, t], plain[t] - kept, atol=1e-5 * float(plain[t].abs().max()))


def test_the_gradient_by_distance_is_transformers_own_backward(lm):
    """wrt="h": ‖∂L_t/∂h_k‖ of block 0's output by hooks on transformers' own forward. wrt="C" on the top block:
    the gates read only the block's input and L_t reads only c_t, so ∂L_t/∂C̃_k = ∏_(j=k+1..t) a_j · q̂_t ∂L_t/∂h̃_tᵀ
    / den_t per head, with ∂L_t/∂h̃_t (the backend's output) by a hook on transformers' forward."""
    from seqviz.introspect.gradients import gradient_matrix

    ids = _ids(12, rows=1, seed=6)
    T, model = ids.shape[1], lm.model
    grads = {}

    def nudged(module, name):
        def hook(_m, _args, out):
            first = out[0] if isinstance(out, tuple) else out
            grads[name] = torch.zeros_like(first, requires_grad=True)
            return (first + grads[name], *out[1:]) if isinstance(out, tuple) else first + grads[name]
        return module.register_forward_hook(hook)

    hooks = [nudged(model.backbone.blocks[0], "h"), nudged(model.backbone.blocks[1].mlstm_layer.mlstm_backend, "c")]
    G_h, G_C = gradient_matrix(lm, ids, layer=0, wrt="h"), gradient_matrix(lm, ids, layer=1, wrt="C")
    trace = lm.trace(ids, names=[f"layers.1.{n}" for n in ("q", "n", "m", "gates.forget")])
    q = trace["layers.1.q"][0].double().reshape(T, 4, 16) / 4.0  # q̂ = q / √16
    n, m = trace["layers.1.n"][0].double().reshape(T, 4, 16), trace["layers.1.m"][0].double()
    f = trace["layers.1.gates.forget"][0].double().reshape(T, 4, 16)[..., 0]
    a = f * torch.exp(torch.cat([m.new_zeros(1, 4), m[:-1]]) - m)  # [T, NH]
    den = torch.maximum((q * n).sum(-1).abs(), torch.exp(-m)) + lm.model.config.eps
    try:
        for t in range(T - 1):
            with torch.enable_grad():
                logits = model(input_ids=ids).logits[0, t]
                loss = -torch.log_softmax(logits, -1)[ids[0, t + 1]]
                g_h, g_c = torch.autograd.grad(loss, [grads["h"], grads["c"]])
            expected = g_h[0, : t + 1].double().norm(dim=-1)
            assert torch.allclose(torch.from_numpy(G_h[t, : t + 1]), expected, rtol=1e-3, atol=1e-6 * float(expected.max()))
            at_t = q[t].norm(dim=-1) * g_c[0, :, t].double().norm(dim=-1) / den[t]  # ‖∂L_t/∂C̃_t‖ per head
            for k in range(t + 1):
                carry = torch.prod(a[k + 1: t + 1], 0)
                assert G_C[t, k] == pytest.approx(float((carry * at_t).norm()), rel=1e-3, abs=1e-9), (t, k)
    finally:
        for hook in hooks:
            hook.remove()


def test_refusals_and_seqviz_inspect(folder, tmp_path, capsys):
    from seqviz.cli import main

    assert main(["inspect", str(folder)]) == 0
    said = capsys.readouterr().out
    assert '"family": "transformers xlstm"' in said and '"heads": 4' in said and "layers.1.c" in said
    pickled = tmp_path / "pickled"
    pickled.mkdir()
    (pickled / "config.json").write_text((folder / "config.json").read_text())
    (pickled / "pytorch_model.bin").write_bytes(b"PK\x03\x04")
    with pytest.raises(CheckpointError, match="never unpickles"):
        seqviz.load(pickled)


def test_seqviz_trains_an_xlstm_that_transformers_and_seqviz_both_open(tmp_path):
    """``seqviz train lm --cell xlstm``: the loop's forward is transformers' own, the folder it writes opens in
    transformers and in seqviz (its own char vocabulary and card), and the loss went down."""
    from transformers import xLSTMForCausalLM

    from seqviz.config import LMConfig
    from seqviz.data.corpus import Corpus
    from seqviz.data.tokenizers import Tokenizer
    from seqviz.train.lm import TrainConfig, train_lm
    from seqviz.train.xlstm import XLSTMTrainee

    text = "to be, or not to be, that is the question. " * 40
    tok = Tokenizer.train("char", text)
    out = tmp_path / "x"
    cfg = TrainConfig(steps=12, batch_size=4, seq_len=24, lr=1e-2, eval_every=6, eval_tokens=400, seed=0)
    train_lm(LMConfig(vocab_size=1), cfg, Corpus("toy", text, text[:400], "toy split"), out, tokenizer=tok,
             make_model=lambda t: XLSTMTrainee(t, hidden=64, layers=2, heads=2))
    assert {"config.json", "model.safetensors", "vocab.json", "card.json", "scores.json"} <= {p.name for p in out.iterdir()}
    hf = xLSTMForCausalLM.from_pretrained(out, use_safetensors=True, local_files_only=True).eval()
    lm = seqviz.load(out)
    assert isinstance(lm, XLSTMLM) and lm.config.tokenizer == "char" and lm.tokenizer.tokens == tok.tokens
    assert lm.card["architecture"] == "2-layer xLSTM, hidden 64, char-level"
    ids = torch.tensor([tok.encode(text[:70]).ids])
    with torch.no_grad():
        theirs = hf(input_ids=ids).logits
    assert (lm.trace(ids, names=["logits"])["logits"] - theirs).abs().max() <= 1e-4 * theirs.abs().max()
    history = lm.card["history"]
    assert history[-1]["val_loss"] < history[0]["val_loss"] and lm.card["val_loss"] < math.log(len(tok))
