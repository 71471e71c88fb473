"""transformers Mamba and Mamba-2 causal LMs (Gu & Dao 2023; Dao & Gu 2024): safe loading and a trace of the scan.

A Mamba checkpoint is a transformers folder (``config.json`` with ``model_type: mamba`` or ``mamba2``,
``model.safetensors``, optionally tokenizer files); it loads through ``MambaForCausalLM`` (or
``Mamba2ForCausalLM``) with
``use_safetensors=True``, ``trust_remote_code=False`` and ``local_files_only=True``, after the
config's tensors are checked against the safetensors header on the meta device. Pickled weights
are refused.

The trace re-runs each block from its own weights with transformers' reference equations (Mamba
section 3; ``MambaMixer``'s sequential path), one named tensor per quantity (D channels, N states)::

    layers.{i}.h      [B, T, H]     the residual stream after block i (= transformers' hidden_states[i])
    layers.{i}.x      [B, T, D]     u_t, the scan's input (in_proj, causal conv, SiLU)
    layers.{i}.dt     [B, T, D]     Δ_t = softplus(W_Δ x_proj(u_t) + b_Δ), the step per channel
    layers.{i}.B      [B, T, N]     B_t (input-dependent: the selection)
    layers.{i}.C      [B, T, N]     C_t
    layers.{i}.z      [B, T, D]     the gate's input: y_t is multiplied by SiLU(z_t)
    layers.{i}.gates.decay     [B, T, D]  exp(Δ_t A) of each channel's slowest state (its longest memory)
    layers.{i}.gates.output_z  [B, T, D]  SiLU(z_t), the output gate
    layers.{i}.s      [B, T, D]     s_t of each channel's slowest state: what that decay keeps
    layers.{i}.decay  [B, T, D, N]  exp(Δ_t A), what the state keeps per channel and state (only when asked)
    layers.{i}.state  [B, T, D, N]  s_t = exp(Δ_t A) s_{t-1} + Δ_t B_t u_t (only when asked)

A = −exp(A_log) [D, N] is the same at every step; the decay is Mamba's forget gate. Since A < 0 is
fixed, each channel's slowest state (A nearest 0) decays least at every step, so its decay is a
per-token gate whose product is that channel's memory, as ∏ f is an LSTM unit's (the gates pages). The scan is
``recurrent.cell_scan`` over the D·N lanes (products and sums, as the sequential loop).

Mamba-2 (``Mamba2Mixer``) has the same names: its A is one scalar per head, so Δ_t and exp(Δ_t A) are per head
(each of the head's P = D / heads channels carries it), B_t and C_t are shared by a group of heads (``B``, ``C``:
[B, T, groups·N]), s_t = exp(Δ_t A) s_(t-1) + Δ_t x_t B_tᵀ per head, and y_t = C_t s_t + D x_t is normalised with
its gate, RMSNorm(y_t · SiLU(z_t)). All N states of a channel decay alike: ``s`` is its first.
torch and transformers are imported inside the functions: importing this module costs neither.
"""

from __future__ import annotations


from seqviz.families.mamba import LEAVES as LAYER_LEAVES  # the family table names them once
from seqviz.families.mamba import ON_REQUEST  # T x D x N each: in a full trace only when named
from seqviz.hf_causal import HFCausalLM, generator, next_token

def mamba_trace_names(n_layers: int) -> list[str]:
    """Every name a Mamba trace can hold, in order (``names=None`` leaves out ``ON_REQUEST``)."""
    names = ["tokens", "mask", "embed"]
    for i in range(n_layers):
        names += [f"layers.{i}.{leaf}" for leaf in LAYER_LEAVES]
    return names + ["logits", "loss", "loss_mask"]


class MambaLM(HFCausalLM):
    """A transformers ``MambaForCausalLM`` or ``Mamba2ForCausalLM`` and its tokenizer (if the folder has one),
    answering with traces (its family is "mamba" or "mamba2")."""

    kinds, title = ("mamba", "mamba2"), "Mamba"

    @classmethod
    def classes(cls, kind: str):
        """transformers' (config class, causal-LM class) of a ``mamba`` or ``mamba2`` config."""
        if kind == "mamba2":
            from transformers import Mamba2Config, Mamba2ForCausalLM

            return Mamba2Config, Mamba2ForCausalLM
        from transformers import MambaConfig, MambaForCausalLM

        return MambaConfig, MambaForCausalLM

    @classmethod
    def shape_of(cls, hf_config):
        from seqviz.hf_mamba_text import MambaShape

        return MambaShape.of(hf_config)

    @classmethod
    def architecture(cls, hf_config, shape) -> str:
        heads = f", {hf_config.num_heads} heads of {hf_config.head_dim}" if shape.heads else ""
        return (f"{hf_config.num_hidden_layers} layers, hidden {hf_config.hidden_size}, {shape.channels} channels x "
                f"{hf_config.state_size} states{heads}")

    def trace_names(self) -> list[str]:
        return mamba_trace_names(self.config.n_layers)

    def sample(self, ids: list[int], n: int, temperature: float = 1.0, seed: int | None = 0) -> list[int]:
        """``n`` token ids after ``ids``, step by step with each block's state (``sample``)."""
        return sample(self, ids, n, temperature, seed)

    def trace(self, inputs, names=None, mask=None, edits=None):
        """Run the model block by block and return the named tensors (``names=None``: all but decay and state).

        ``inputs`` as a recurrent LM's: a text, texts or id lists (right-padded), or an id tensor with an
        optional ``mask``. ``edits``: ``[(name, fn(state, t) -> state), ...]`` (``seqviz.models.edits``) on
        ``layers.{i}.h`` (the block's output, [B, H]: the blocks above read the edited one), ``layers.{i}.s``
        (each channel's slowest state, [B, D]) or ``layers.{i}.state`` ([B, D, N]), applied right after step
        t computes the state, before step t + 1 reads it: a block with a state edited scans step by step.
        Only what is named is computed: no block above the last one named, no head without logits or loss."""
        from seqviz.trace import Trace

        ids, mask, pieces, wanted, edits = self._prepared(inputs, names, mask, edits)
        out = {}
        for part in self._parts(ids, mask, wanted, edits):
            out.update(part)
        return Trace({k: out[k] for k in wanted}, pieces)

    def walk(self, inputs, names=None, mask=None, edits=None):
        """The trace one block at a time (``seqviz.trace.walk``): a ``Trace`` per block that has a name asked for
        (tokens, mask and that block's names; the first with the embedding, the last with the head's), each
        computed after the caller has let go of the one before."""
        from seqviz.trace import Trace

        ids, mask, pieces, wanted, edits = self._prepared(inputs, names, mask, edits)
        for part in self._parts(ids, mask, wanted, edits):
            yield Trace({k: part[k] for k in wanted if k in part} | {"tokens": ids, "mask": mask}, pieces)

    def _prepared(self, inputs, names, mask, edits):
        """(ids, mask, pieces, the names asked for in order, edits by layer), every input checked."""
        from seqviz.models.edits import by_layer
        from seqviz.trace import check_names

        available = self.trace_names()
        wanted = [n for n in available if n.split(".", 2)[-1] not in ON_REQUEST] if names is None \
            else check_names(names, available)
        edits = by_layer(edits, "mamba", self.config.n_layers)
        ids, mask, pieces = self.inputs(inputs, mask)
        return ids, mask, pieces, wanted, edits

    def _parts(self, ids, mask, wanted, edits):
        """Yield {name: tensor} block by block up to the last block named (the first with tokens, mask and the
        embedding), then the head's names if any is asked: the residual stream is all that is carried."""
        import torch

        from seqviz.models.recurrent import next_token_loss
        from seqviz.trace import HEAD_NAMES, loss_mask

        backbone = self.model.backbone
        head = any(n in HEAD_NAMES for n in wanted)
        deepest = max((int(n.split(".")[1]) for n in wanted if n.startswith("layers.")), default=-1)
        with torch.no_grad():
            h = backbone.embeddings(ids)
        out = {"tokens": ids, "mask": mask, "embed": h}
        for i, block in enumerate(backbone.layers[: len(backbone.layers) if head else deepest + 1]):
            leaves = {n.split(".", 2)[2] for n in wanted if n.startswith(f"layers.{i}.")}
            with torch.no_grad():
                h, parts = mamba_block(block, h, leaves, edits=edits.get(i))
            out.update({f"layers.{i}.{k}": v for k, v in parts.items()})
            if leaves or i == deepest:
                yield out
                out = {}
        if head:
            with torch.no_grad():
                logits = self.model.lm_head(backbone.norm_f(h))
                out.update(logits=logits, loss=next_token_loss(logits, ids, mask), loss_mask=loss_mask(mask))
        if out:
            yield out



def scan_inputs(block, h):
    """What one block scans, from the residual stream ``h`` [B, T, H] entering it: (u, Δ, B, C, z, decay
    exp(Δ A) [B, T, D, N], drive Δ B u [B, T, D, N], ``read(state)`` = C_t s_t [B, T, D], skip D u [B, T, D], each
    channel's slowest state [D], Mamba-2's decay per head [B, T, heads] or None). ``mamba_block`` scans them;
    ``introspect.implicit`` unrolls them (s_t = decay_t ⊙ s_(t−1) + drive_t, y_t = read(s_t) + skip_t)."""
    import torch

    mixer = block.mixer
    if is_mamba2(mixer):
        u, dt, B, C, z, per_head, drive, read, skip = _mamba2_inputs(mixer, mixer.in_proj(block.norm(h)))
        decay = per_head.repeat_interleave(mixer.head_dim, -1)[..., None].expand(-1, -1, -1, drive.shape[-1])  # a view
        slow = torch.zeros(decay.shape[2], dtype=torch.long)  # a head's N states decay alike: its first
    else:
        u, dt, B, C, z, A = _mamba1_inputs(mixer, block.norm(h))
        decay = torch.exp(dt[..., None] * A)  # [B, T, D, N]
        drive = dt[..., None] * B[:, :, None, :] * u[..., None]  # Δ_t B_t u_t
        skip = u * mixer.D  # D u_t

        def read(state):  # C_t s_t per channel: [B, T, D, N] -> [B, T, D]
            return (state * C[:, :, None, :]).sum(-1)

        slow = A.argmax(-1)  # [D]: each channel's slowest state (A < 0 nearest 0)
    return u, dt, B, C, z, decay, drive, read, skip, slow, (per_head if is_mamba2(mixer) else None)


def _mamba1_inputs(mixer, h):
    """(u, Δ, B, C, z, A) of a ``MambaMixer`` from the normalised residual stream: u, Δ, z [B, T, D], B, C [B, T, N]
    and A = −exp(A_log) [D, N]."""
    import torch
    import torch.nn.functional as F

    T = h.shape[1]
    x, z = mixer.in_proj(h).chunk(2, dim=-1)  # [B, T, D] each
    conv = F.conv1d(x.transpose(1, 2), mixer.conv1d.weight, mixer.conv1d.bias,
                    padding=mixer.conv_kernel_size - 1, groups=mixer.intermediate_size)[..., :T]  # causal
    u = mixer.act(conv).transpose(1, 2)  # [B, T, D]
    step, B, C = selection(mixer, u)
    return u, F.softplus(mixer.dt_proj(step)), B, C, z, -torch.exp(mixer.A_log.float())


def mamba_block(block, h, leaves=frozenset(LAYER_LEAVES), scan=None, edits=None):
    """One ``MambaBlock`` from its weights: (the residual stream after it, {leaf: tensor} for ``leaves``).

    A Mamba's scan runs in chunks of time (``hf_mamba_scan.selective_scan``: the [T, D, N] decay and state only when
    ``leaves`` name them, its state edits applied step by step) unless ``scan(f, u)`` is given, which runs
    c_t = f_t c_(t-1) + u_t over dim 1 on the whole decay and drive (``introspect.mamba_gradients`` passes a loop
    autograd can follow). Mamba-2's runs ``head_scan`` (one factor per head), its state edits step by step.
    ``edits``: leaf ("h", "s", "state") -> [fn(state, t) -> state] (``MambaLM.trace``)."""
    import torch.nn.functional as F

    mixer, edits = block.mixer, edits or {}
    if scan is None and not is_mamba2(mixer):
        from seqviz.hf_mamba_scan import selective_scan

        u, dt, B, C, z, A = _mamba1_inputs(mixer, block.norm(h))
        y, parts = selective_scan(dt, A, B, C, u, A.argmax(-1), leaves, edits)
        y = y + u * mixer.D  # C_t s_t + D u_t
    else:
        u, dt, B, C, z, y, parts = _whole_scan(block, h, scan, edits)
    gate = F.silu(z)
    h = h + mixer.out_proj(mixer.norm(y, z) if is_mamba2(mixer) else y * gate)  # Mamba-2: RMSNorm(y · SiLU(z))
    if edits.get("h"):
        h = _edited_stream(h, edits["h"])
    parts = {**parts, "h": h, "x": u, "dt": dt, "B": B, "C": C, "z": z, "gates.output_z": gate}
    return h, {k: v for k, v in parts.items() if k in leaves}


def _whole_scan(block, h, scan, edits):
    """(u, Δ, B, C, z, y = C_t s_t + D u_t, {decay, state, gates.decay, s}) of one block, its decay and drive
    written over the whole text: a given ``scan``, an edited state stepped, or Mamba-2's ``head_scan``."""
    import torch

    from seqviz.models.recurrent import cell_scan

    mixer, T = block.mixer, h.shape[1]
    u, dt, B, C, z, decay, drive, read, skip, slow, per_head = scan_inputs(block, h)
    batch, _, D, N = decay.shape
    channel = torch.arange(D)
    if edits.get("s") or edits.get("state"):
        state = _edited_scan(decay, drive, edits.get("state", ()), edits.get("s", ()), channel, slow)
    elif is_mamba2(mixer) and scan is None:  # one factor per head: the scan reads it once per head, not per lane
        state = head_scan(per_head, drive.view(batch, T, mixer.num_heads, -1)).view(batch, T, D, N)
    else:
        state = (scan or cell_scan)(decay.reshape(batch, T, D * N), drive.reshape(batch, T, D * N)).view(batch, T, D, N)
    parts = {"decay": decay, "state": state, "gates.decay": decay[..., channel, slow], "s": state[..., channel, slow]}
    return u, dt, B, C, z, read(state) + skip, parts


def _edited_stream(h, fns):
    """The block's output h [B, T, H] with each edit applied at each step: a block's output feeds only the blocks
    above, so editing it after the block is exact."""
    import torch

    from seqviz.models.edits import _edited

    steps = []
    for t in range(h.shape[1]):
        h_t = h[:, t]
        for fn in fns:
            h_t = _edited(fn, h_t, t, "h")
        steps.append(h_t)
    return torch.stack(steps, dim=1)


def selection(mixer, u):
    """A Mamba-1 mixer's (Δ's low-rank input, B_t, C_t) [B, T, ·] from its scan input u: x_proj's three parts,
    each RMS-normalised where the mixer has norms for them (FalconMamba, Zuo et al. 2024: weightless RMSNorm of
    Δ's input, B and C before the scan; transformers' ``FalconMambaMixer``'s own modules, so the same float ops)."""
    import torch

    parts = torch.split(mixer.x_proj(u), [mixer.time_step_rank, mixer.ssm_state_size, mixer.ssm_state_size], -1)
    if hasattr(mixer, "b_layernorm"):
        parts = mixer.dt_layernorm(parts[0]), mixer.b_layernorm(parts[1]), mixer.c_layernorm(parts[2])
    return parts


def is_mamba2(mixer) -> bool:
    """Whether a block's mixer is Mamba-2's (one A per head, a Δ bias, a gated RMSNorm)."""
    return hasattr(mixer, "dt_bias")


def _mamba2_inputs(mixer, projected):
    """What a ``Mamba2Mixer`` scans, per channel (D = heads · P) and state, from its in_proj output [B, T, ·]:
    (u, Δ, B, C, z, exp(Δ A) per head [B, T, heads], drive, read, D u) — Δ [B, T, D] (each head's on its channels),
    B and C [B, T, groups · N], drive Δ_t x_t B_tᵀ [B, T, D, N], ``read(state)`` = C_t s_t [B, T, D] (a state of the
    last T' steps: their C), D u [B, T, D].
    B and C reach the heads as broadcast views: only drive is written at T × D × N."""
    import torch
    import torch.nn.functional as F

    T = projected.shape[1]
    heads, P, G, N = mixer.num_heads, mixer.head_dim, mixer.n_groups, mixer.ssm_state_size
    z, xbc, dt = projected.split([mixer.intermediate_size, mixer.conv_dim, heads], dim=-1)
    conv = F.conv1d(xbc.transpose(1, 2), mixer.conv1d.weight, mixer.conv1d.bias, padding=mixer.conv_kernel_size - 1,
                    groups=mixer.conv_dim)[..., :T]  # causal: the left padding only
    u, B, C = torch.split(mixer.act(conv).transpose(1, 2), [mixer.intermediate_size, G * N, G * N], dim=-1)
    batch = u.shape[0]
    dt = F.softplus(dt + mixer.dt_bias).clamp(*mixer.time_step_limit)  # [B, T, heads]
    A = -torch.exp(mixer.A_log.float())  # [heads]

    def of_heads(v):  # [B, T, G·N] -> [B, T, heads, 1, N]: each group's B or C for its heads (a view)
        return v.reshape(batch, T, G, 1, 1, N).expand(-1, -1, -1, heads // G, -1, -1).reshape(batch, T, heads, 1, N)

    per_head = (dt[..., None] * u.reshape(batch, T, heads, P))[..., None]  # Δ_t x_t [B, T, heads, P, 1]
    drive = (per_head * of_heads(B)).reshape(batch, T, heads * P, N)  # Δ_t x_t B_tᵀ
    Ch = of_heads(C)[:, :, :, 0]  # [B, T, heads, N]

    def read(state):  # C_t s_t per channel: [B, T', D, N] -> [B, T', D], the last T' steps' C
        steps = state.shape[1]
        return torch.einsum("bthpn,bthn->bthp", state.reshape(batch, steps, heads, P, N),
                            Ch[:, T - steps:]).reshape(batch, steps, heads * P)

    skip = u * mixer.D.repeat_interleave(P)  # D x_t, D per head
    return u, dt.repeat_interleave(P, dim=-1), B, C, z, torch.exp(dt * A), drive, read, skip


def head_scan(a, v):
    """s_t = a_t s_(t-1) + v_t with s_(-1) = 0 over dim 1, for a [B, T, heads] (one factor per head, as Mamba-2's
    exp(Δ_t A)) and v [B, T, heads, M]: ``recurrent.cell_scan``'s chunked scan (products and sums) with the factor
    broadcast over the head's M lanes instead of stored for each of them."""
    import math

    import torch

    batch, steps, heads, width = v.shape
    out = torch.empty_like(v)
    size = max(1, math.isqrt(steps))
    chunks = steps // size
    whole = chunks * size if chunks > 1 else 0
    if whole:
        ac = a[:, :whole].reshape(batch, chunks, size, heads, 1)
        vc = v[:, :whole].reshape(batch, chunks, size, heads, width)
        own = torch.empty_like(vc)
        own[:, :, 0] = vc[:, :, 0]
        for j in range(1, size):  # every chunk from a zero state
            torch.addcmul(vc[:, :, j], ac[:, :, j], own[:, :, j - 1], out=own[:, :, j])
        kept = torch.cumprod(ac, dim=2)  # each chunk's running product of its factors (per head: small)
        incoming = torch.zeros(batch, chunks, heads, width, dtype=v.dtype, device=v.device)
        for k in range(1, chunks):  # the state entering chunk k
            torch.addcmul(own[:, k - 1, -1], kept[:, k - 1, -1], incoming[:, k - 1], out=incoming[:, k])
        torch.addcmul(own, kept, incoming[:, :, None], out=out[:, :whole].view(batch, chunks, size, heads, width))
    prev = out[:, whole - 1] if whole else torch.zeros_like(v[:, 0])
    for t in range(whole, steps):
        prev = torch.addcmul(v[:, t], a[:, t, :, None], prev)
        out[:, t] = prev
    return out


def _edited_scan(decay, drive, on_state, on_s, channel, slow):
    """s_t = exp(Δ_t A) s_(t-1) + Δ_t B_t u_t one step at a time ([B, T, D, N]), each edit of the whole state
    ([B, D, N]) and then of each channel's slowest state ([B, D]) applied right after step t (``step_edit``, as the
    chunked scan applies them)."""
    import torch

    from seqviz.hf_mamba_scan import step_edit

    edit = step_edit(on_state, on_s, channel, slow) or (lambda state, t: state)
    state, steps = torch.zeros_like(drive[:, 0]), []
    for t in range(decay.shape[1]):
        state = edit(decay[:, t] * state + drive[:, t], t)
        steps.append(state)
    return torch.stack(steps, dim=1)


# ------------------------------------------------------------------ sampling, one token at a time
# Each block's recurrent state (its last conv inputs and s_t) is carried, with the same equations as
# mamba_block's scan: a token costs one step, not a re-read of the prompt.
def _block_step(block, h, conv, s):
    """One token through one ``MambaBlock``: h [1, H], conv [1, D, K-1] (its last inputs), s [1, D, N]."""
    import torch
    import torch.nn.functional as F

    mixer = block.mixer
    if is_mamba2(mixer):  # the block's own equations over the K-token window the convolution reads
        window = torch.cat([conv, mixer.in_proj(block.norm(h))[:, None]], 1)  # [1, K, projections]
        _u, _dt, _B, _C, z, per_head, drive, read, skip = _mamba2_inputs(mixer, window)
        s = per_head[:, -1].repeat_interleave(mixer.head_dim, -1)[..., None] * s + drive[:, -1]
        y = read(s[:, None])[:, 0] + skip[:, -1]  # C_t s_t at the last token
        return h + mixer.out_proj(mixer.norm(y, z[:, -1])), window[:, 1:], s
    x, z = mixer.in_proj(block.norm(h)).chunk(2, dim=-1)  # [1, D] each
    window = torch.cat([conv, x[..., None]], -1)  # [1, D, K]
    u = mixer.act((window * mixer.conv1d.weight[:, 0]).sum(-1) + mixer.conv1d.bias)
    step, B, C = selection(mixer, u)
    dt = F.softplus(mixer.dt_proj(step))  # [1, D]
    A = -torch.exp(mixer.A_log.float())
    s = torch.exp(dt[..., None] * A) * s + dt[..., None] * B[:, None, :] * u[..., None]
    y = (s * C[:, None, :]).sum(-1) + u * mixer.D
    return h + mixer.out_proj(y * F.silu(z)), window[..., 1:], s


def sample(lm, ids: list[int], n: int, temperature: float = 1.0, seed: int | None = 0) -> list[int]:
    """``n`` tokens after ``ids`` (temperature 0: the likeliest each step), deterministic for a seed; special
    tokens are never produced. A Mamba reads the prompt at once (``prefill``: each block's state
    after it), a Mamba-2 token by token; each new token then costs one step of each block, carrying its state."""
    import torch

    if not ids:
        raise ValueError("generation needs at least one prompt token")
    backbone, banned = lm.model.backbone, lm.banned()
    gen = generator(seed)
    cfg = lm.config
    k = backbone.layers[0].mixer.conv_kernel_size
    conv = [torch.zeros(1, k - 1, b.mixer.in_proj.out_features) if is_mamba2(b.mixer)  # its last projections
            else torch.zeros(1, cfg.channels, k - 1) for b in backbone.layers]
    state = [torch.zeros(1, cfg.channels, cfg.states) for _ in backbone.layers]

    def step(token: int):  # one token through every block, each carrying its state
        h = backbone.embeddings(torch.tensor([token]))
        for i, block in enumerate(backbone.layers):
            h, conv[i], state[i] = _block_step(block, h, conv[i], state[i])
        return h

    out: list[int] = []
    with torch.no_grad():
        if not any(is_mamba2(b.mixer) for b in backbone.layers):
            h, conv, state = prefill(backbone, torch.tensor([ids]))
        else:
            for token in ids:
                h = step(token)
        while len(out) < n:
            out.append(next_token(lm.model.lm_head(backbone.norm_f(h))[0], temperature, gen, banned))
            if len(out) < n:
                h = step(out[-1])
    return out


def prefill(backbone, ids):
    """A Mamba's blocks after reading ``ids`` [1, T] at once, as ``hf_mamba.sample`` carries them token by token:
    (the last token's output h [1, H], each block's convolution window, its last K − 1 inputs [1, D, K − 1] (zeros
    before the text), each block's state s_T [1, D, N])."""
    import torch.nn.functional as F

    h = backbone.embeddings(ids)
    windows, states = [], []
    for block in backbone.layers:
        mixer = block.mixer
        keep = mixer.conv_kernel_size - 1
        x = mixer.in_proj(block.norm(h[:, -keep:])).chunk(2, dim=-1)[0].transpose(1, 2)  # [1, D, <= K - 1]
        windows.append(F.pad(x, (keep - x.shape[-1], 0)))
        h, parts = mamba_block(block, h, frozenset({"last"}))
        states.append(parts["last"])
    return h[:, -1], windows, states


def unrolled(lm, ids, layer: int):
    """Block ``layer``'s scan for ids [1, T] as ``introspect.implicit.Parts``: a = exp(Δ A), b = Δ B x per channel
    and state, read C_t, skip D x_t, memory y_t = C_t s_t + D x_t (the scan output before the SiLU(z) gate)."""
    import torch

    from seqviz.introspect.implicit import Parts

    name = "embed" if layer == 0 else f"layers.{layer - 1}.h"
    trace = lm.trace(ids, names=[name, f"layers.{layer}.state"])
    block = lm.model.backbone.layers[layer]
    with torch.no_grad():
        _u, _dt, _B, C, _z, decay, drive, read, skip, _slow, _per_head = scan_inputs(block, trace[name])
        memory = read(trace[f"layers.{layer}.state"]) + skip
        D, N = decay.shape[2], decay.shape[3]
        if is_mamba2(block.mixer):  # channel d reads its head's group's C
            mixer = block.mixer
            group = torch.arange(D) // mixer.head_dim // (mixer.num_heads // mixer.n_groups)
            weights = C.reshape(C.shape[0], C.shape[1], mixer.n_groups, N)[:, :, group]
        else:
            weights = C[:, :, None, :].expand(-1, -1, D, -1)
    return Parts(decay[0].double(), drive[0].double(), weights[0].double(), skip[0].double(), memory[0].double(),
                 "state")
