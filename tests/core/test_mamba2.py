"""transformers Mamba-2 through seqviz: the same trace names as Mamba, parity with transformers' own forward (its
chunked SSD scan), the recurrence rebuilt by hand from the block's weights, step-by-step sampling, the gradient
by distance. A tiny random config (4 heads, 2 groups, chunks of 8), built offline."""

import pytest
import torch
import torch.nn.functional as F

import seqviz
from seqviz.families import of
from seqviz.hf_mamba import MambaLM
from tests.conftest import build_tiny_mamba2

IDS = torch.tensor([[3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2, 3, 8, 4], [2, 7, 1, 8, 2, 8, 1, 8, 2, 8, 4, 5,
                                                                            9, 0, 4, 5, 2, 3, 5, 3]])


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return build_tiny_mamba2(tmp_path_factory.mktemp("mamba2") / "tiny-mamba2")


@pytest.fixture(scope="module")
def loaded(folder):
    return seqviz.load(folder)


def test_a_mamba2_folder_opens_on_the_mamba_pages_with_the_same_names(folder, loaded):
    from tests.core.test_mamba import GOLDEN

    assert seqviz.detect(folder).name == "mamba" and isinstance(loaded, MambaLM)
    assert loaded.config.cell == "mamba" and loaded.config.channels == 32 and loaded.config.states == 4
    assert loaded.config.heads == 4 and of(loaded).title == "Mamba-2"  # its name in legends and captions
    trace = loaded.trace(IDS)
    assert list(trace) == GOLDEN
    assert trace["layers.0.dt"].shape == (2, 20, 32) and trace["layers.0.B"].shape == (2, 20, 8)  # 2 groups x N
    assert "Mamba2ForCausalLM" in loaded.card["architecture"] and "4 heads of 8" in loaded.card["architecture"]


def test_logits_and_hidden_states_equal_transformers_forward(loaded):
    """Against transformers' chunked SSD scan (20 tokens: across two chunk boundaries)."""
    from tests.core.test_mamba import check_transformers_parity

    check_transformers_parity(loaded, IDS)


def test_the_state_is_the_recurrence_written_by_hand(loaded):
    """s_t = exp(Δ_t A_head) s_(t-1) + Δ_t x_t B_tᵀ per head, B and C shared by each group of two heads, from the
    mixer's weights (softplus(dt + dt_bias), A = −exp(A_log)); y_t = C_t s_t + D x_t gives the block's output."""
    block = loaded.model.backbone.layers[0]
    mixer = block.mixer
    trace = loaded.trace(IDS[:1], names=["embed", "layers.0.x", "layers.0.B", "layers.0.C", "layers.0.state",
                                         "layers.0.h", "layers.0.z", "layers.0.gates.decay", "layers.0.s"])
    with torch.no_grad():
        proj = mixer.in_proj(block.norm(trace["embed"]))[0]
        raw_dt = proj[:, -4:]
        dt = F.softplus(raw_dt + mixer.dt_bias)  # [T, 4 heads]
        A = -torch.exp(mixer.A_log)
        x, B, C = trace["layers.0.x"][0], trace["layers.0.B"][0], trace["layers.0.C"][0]
        s = torch.zeros(4, 8, 4)  # heads x P x N
        states, ys = [], []
        for t in range(IDS.shape[1]):
            for head in range(4):
                g = head // 2  # heads 0, 1 read group 0's B and C; heads 2, 3 group 1's
                xt = x[t, head * 8:(head + 1) * 8]
                s[head] = torch.exp(dt[t, head] * A[head]) * s[head] + dt[t, head] * torch.outer(xt, B[t, g * 4:(g + 1) * 4])
            states.append(s.reshape(32, 4).clone())
            ys.append(torch.stack([s[hd] @ C[t, (hd // 2) * 4:(hd // 2 + 1) * 4] + mixer.D[hd] * x[t, hd * 8:(hd + 1) * 8]
                                   for hd in range(4)]).reshape(32))
        h = trace["embed"][0] + mixer.out_proj(mixer.norm(torch.stack(ys), trace["layers.0.z"][0]))
    assert (trace["layers.0.state"][0] - torch.stack(states)).abs().max() <= 1e-5
    assert (trace["layers.0.h"][0] - h).abs().max() <= 1e-5
    decay = torch.exp(dt * A).repeat_interleave(8, dim=1)  # each head's decay on its 8 channels
    assert (trace["layers.0.gates.decay"][0] - decay).abs().max() <= 1e-6
    assert (trace["layers.0.s"][0] - torch.stack(states)[:, :, 0]).abs().max() <= 1e-6


def test_greedy_sampling_step_by_step_is_the_full_forward_argmax(loaded):
    prompt = IDS[0, :6].tolist()
    out = loaded.sample(prompt, 8, temperature=0.0)
    ids = list(prompt)
    for _ in range(8):
        with torch.no_grad():
            ids.append(int(loaded.model(torch.tensor([ids])).logits[0, -1].argmax()))
    assert out == ids[6:]


def test_the_gradient_by_distance_is_autograd_through_the_blocks(loaded):
    """G[t, k] = ‖∂L_t/∂h_k‖ of the top block's stream: NaN above the diagonal; on it the gradient of L_t through the
    final norm and head alone, taken here on transformers' own hidden state; below it 0 (no block reads the top
    stream again). Through the scan's state (what the page draws for a Mamba) the past reaches L_t."""
    from seqviz.introspect.mamba_gradients import gradient_matrix

    ids = IDS[:1, :12]
    G = gradient_matrix(loaded, ids)
    assert G.shape == (11, 12)
    below = torch.tril(torch.ones(11, 12, dtype=torch.bool)).numpy()
    assert (G[~below] != G[~below]).all() and (G[below] >= 0).all()  # NaN above
    assert (torch.tensor(G).tril(-1).nan_to_num() == 0).all()
    with torch.no_grad():
        top = loaded.model(ids, output_hidden_states=True, return_dict=True).hidden_states[1][0]
    backbone, head = loaded.model.backbone, loaded.model.lm_head
    for t in range(11):
        leaf = top[t].clone().requires_grad_(True)
        loss = -torch.log_softmax(head(backbone.norm_f(leaf)), -1)[ids[0, t + 1]]
        (g,) = torch.autograd.grad(loss, leaf)
        assert G[t, t] == pytest.approx(float(g.norm()), rel=1e-4), t
    state = gradient_matrix(loaded, ids, wrt="state")  # through the scan's state: the same shape, causal
    assert state.shape == (11, 12) and (state[below] >= 0).all()
    assert (torch.tensor(state).tril(-1).nan_to_num() > 0).sum() >= 40  # 55 pairs k < t: most reach back


def test_a_mamba2_folder_is_refused_in_one_line_without_safetensors_or_with_other_shapes(folder, tmp_path):
    import json
    import shutil

    from seqviz.files import CheckpointError

    pickled = shutil.copytree(folder, tmp_path / "pickled")
    (pickled / "model.safetensors").rename(pickled / "pytorch_model.bin")
    with pytest.raises(CheckpointError, match="only pickled weights.*never unpickles"):
        seqviz.load(pickled)
    wider = shutil.copytree(folder, tmp_path / "wider")
    config = json.loads((wider / "config.json").read_text())
    (wider / "config.json").write_text(json.dumps({**config, "state_size": 8}))
    with pytest.raises(CheckpointError, match="do not match config.json"):
        seqviz.load(wider)


@pytest.mark.parametrize("steps", [1, 5, 16, 50])
def test_the_head_scan_is_the_loop_over_time(steps):
    """``head_scan`` (one factor per head, broadcast over its lanes) against s_t = a_t s_(t-1) + v_t step by step."""
    from seqviz.hf_mamba import head_scan

    gen = torch.Generator().manual_seed(steps)
    a, v = torch.rand(2, steps, 3, generator=gen), torch.randn(2, steps, 3, 5, generator=gen)
    s, loop = torch.zeros(2, 3, 5), []
    for t in range(steps):
        s = a[:, t, :, None] * s + v[:, t]
        loop.append(s)
    assert (head_scan(a, v) - torch.stack(loop, 1)).abs().max() <= 1e-6


def test_a_mamba2_takes_edits_of_its_state_like_a_mamba(loaded):
    """An identity edit leaves the trace as it was (to float32 rounding: the edited block scans step by step, the
    plain one in chunks); the whole state switched off from step 5 on is 0 there, leaves the logits before step 5
    as they were and moves the later ones."""
    from seqviz.models.edits import ablate

    plain = loaded.trace(IDS)
    same = loaded.trace(IDS, edits=[("layers.0.s", lambda s, t: s), ("layers.0.state", lambda s, t: s)])
    assert all((plain[k] - same[k]).abs().max() <= 1e-5 for k in plain if plain[k].is_floating_point())
    off = loaded.trace(IDS, edits=[ablate("layers.0.state", list(range(4)), span=(5, 99))], names=["logits", "layers.0.state"])
    assert (off["logits"][:, :5] - plain["logits"][:, :5]).abs().max() <= 1e-5
    assert off["layers.0.state"][:, 5:].abs().max() == 0 and (off["logits"][:, 6:] - plain["logits"][:, 6:]).abs().max() > 1e-3
