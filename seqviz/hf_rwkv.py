"""transformers RWKV-4 causal LMs (Peng et al. 2023): safe loading and a trace of the WKV recurrence.

An RWKV checkpoint is a transformers folder (``config.json`` with ``model_type: rwkv``, ``model.safetensors``,
optionally tokenizer files, or seqviz's ``vocab.json``); it loads through ``RwkvForCausalLM`` under the same rules
as a Mamba (``seqviz.hf_mamba``: safetensors only, no remote code, the weights checked against the config first).

The trace re-runs each block from its own weights with transformers' equations (``RwkvBlock``; the WKV of
``rwkv_linear_attention_cpu``), one named tensor per quantity (H the residual stream, C channels)::

    layers.{i}.h             [B, T, H]  the residual stream after block i (= transformers' hidden_states[i])
    layers.{i}.k             [B, T, C]  k_t, the time mix's key (token-shifted input, W_k)
    layers.{i}.v             [B, T, C]  v_t, its value
    layers.{i}.gates.decay   [B, T, C]  e^(−w), w = exp(time_decay): what each channel keeps per token (fixed)
    layers.{i}.gates.output  [B, T, C]  σ(r_t), the receptance: the output gate on WKV_t
    layers.{i}.s             [B, T, C]  a_t = e^(−w) ⊙ a_(t−1) + e^(k_t) ⊙ v_t, the numerator: the memory
    layers.{i}.den           [B, T, C]  b_t = e^(−w) ⊙ b_(t−1) + e^(k_t), the denominator
    layers.{i}.wkv           [B, T, C]  WKV_t = (a_(t−1) + e^(u+k_t) v_t) / (b_(t−1) + e^(u+k_t)), u = time_first

(Peng et al. 2023: the WKV operator in its recurrent, RNN-mode form.) WKV_t is an attention over every earlier token
with weights e^(−(t−1−j)w + k_j) (the current token's boosted by u), kept as two linear recurrences: the decay e^(−w)
is the same at every token, a forget gate fixed per channel, so a channel with time_decay nearest −∞ remembers
longest. a_t and b_t are traced at their real scale (transformers keeps them as a·e^p with a running maximum p, so
that e^k never overflows; ``wkv_scan`` does too and multiplies out only what is traced): a key above ~88 would
overflow float32. The channel mix is σ(r'_t) ⊙ W_v relu(W_k x'_t)². torch and transformers are imported inside the
functions: importing this module costs neither.
"""

from __future__ import annotations

from dataclasses import dataclass

from seqviz.families.rwkv import RWKV
from seqviz.hf_causal import HFCausalLM


@dataclass(frozen=True)
class RwkvShape:
    """An RWKV's sizes under the recurrent LM's config names (what the pages read of ``model.config``)."""

    n_layers: int  # blocks; layers.{i}.h is the residual stream after block i
    d_embed: int  # the embedding's width (= the residual stream's)
    d_hidden: int  # width of layers.{i}.h: hidden_size
    vocab_size: int
    channels: int  # C, attention_hidden_size: the WKV's channels (k, v, decay, s per channel)
    ffn: int  # the channel mix's width, intermediate_size
    states: int = 1  # one numerator per channel (what ``mamba_gradients``' rows are sized by)
    cell: str = "rwkv"  # its entry in the family table (``seqviz.families.rwkv``)
    tokenizer: str = "subword"  # a transformers tokenizer's pieces (seqviz's own vocab.json: its kind)
    dropout: float = 0.0

    @classmethod
    def of(cls, hf_config) -> "RwkvShape":
        hidden = hf_config.hidden_size
        return cls(hf_config.num_hidden_layers, hidden, hidden, hf_config.vocab_size,
                   hf_config.attention_hidden_size or hidden, hf_config.intermediate_size or 4 * hidden)


class RwkvLM(HFCausalLM):
    """A transformers ``RwkvForCausalLM`` and its tokenizer (if the folder has one), answering with traces."""

    kinds, title = ("rwkv",), "RWKV"

    @classmethod
    def classes(cls, kind: str):
        from transformers import RwkvConfig, RwkvForCausalLM

        return RwkvConfig, RwkvForCausalLM

    @classmethod
    def shape_of(cls, hf_config) -> RwkvShape:
        return RwkvShape.of(hf_config)

    @classmethod
    def architecture(cls, hf_config, shape) -> str:
        return (f"{hf_config.num_hidden_layers} layers, hidden {hf_config.hidden_size}, {shape.channels} channels, "
                f"feed-forward {shape.ffn}")

    def trace_names(self) -> list[str]:
        return ["tokens", "mask", "embed", *RWKV.layer_names(self.config.n_layers), "logits", "loss", "loss_mask"]

    def sample(self, ids: list[int], n: int, temperature: float = 1.0, seed: int | None = 0) -> list[int]:
        """``n`` token ids after ``ids``, each block's state carried from token to token (``sample``)."""
        return sample(self, ids, n, temperature, seed)

    def trace(self, inputs, names=None, mask=None, edits=None):
        """Run the model block by block and return the named tensors (``names=None``: all; otherwise only what
        ``names`` asks is computed, the blocks above the highest asked for not at all).

        ``inputs`` as a recurrent LM's: a text, texts or id lists (right-padded), or an id tensor with an optional
        ``mask``. ``edits``: ``[(name, fn(state, t) -> state), ...]`` (``seqviz.models.edits``) on ``layers.{i}.h``
        (the block's output [B, H]: the blocks above read the edited one) or ``layers.{i}.s`` (the numerator
        a_t [B, C], at its real scale), applied right after step t computes it, before step t + 1 reads it."""
        import torch

        from seqviz.models.recurrent import next_token_loss
        from seqviz.trace import Trace, check_names, loss_mask

        available = self.trace_names()
        wanted = check_names(names, available)
        edits = by_layer(edits, self.config.n_layers)
        ids, mask, pieces = self.inputs(inputs, mask)
        leaves = {i: frozenset(n.split(".", 2)[2] for n in wanted if n.startswith(f"layers.{i}."))
                  for i in range(self.config.n_layers)}
        head = {"logits", "loss"} & set(wanted)
        top = self.config.n_layers if head else max([i + 1 for i, got in leaves.items() if got] + [0])
        out = {"tokens": ids, "mask": mask}
        with torch.no_grad():
            out["embed"] = self.model.rwkv.embeddings(ids)
            h, found = blocks(self, out["embed"], 0, leaves, edits, last=top)
            out.update(found)
            if head:
                logits = self.model.head(self.model.rwkv.ln_out(h))
                out.update(logits=logits, loss=next_token_loss(logits, ids, mask))
            out["loss_mask"] = loss_mask(mask)
        return Trace({k: out[k] for k in wanted}, pieces)


def by_layer(edits, n_layers: int) -> dict[int, dict[str, list]]:
    """``edits`` checked and grouped: layer -> leaf (``RWKV.edit_states``: "s", "h") -> functions in order."""
    allowed = [f"layers.{i}.{leaf}" for i in range(n_layers) for leaf in RWKV.edit_states]
    grouped: dict[int, dict[str, list]] = {}
    for item in edits or ():
        if not (isinstance(item, tuple | list) and len(item) == 2):
            raise ValueError("an edit is a pair (name, fn); got " + repr(item)[:60])
        name, fn = item
        if name not in allowed:
            raise ValueError(f"no state {name!r} to edit; this model's states are: {', '.join(allowed)}")
        if not callable(fn):
            raise ValueError(f"the edit of {name} is not a function fn(state, t) -> state")
        grouped.setdefault(int(name.split(".")[1]), {}).setdefault(name.split(".", 2)[2], []).append(fn)
    return grouped


def read_shape(folder) -> RwkvShape:
    """An RWKV folder's ``RwkvShape`` from its config.json alone (no torch, no transformers)."""
    from types import SimpleNamespace

    from seqviz.files import read_json

    config = read_json(folder / "config.json")
    return RwkvShape.of(SimpleNamespace(**{"attention_hidden_size": None, "intermediate_size": None, **config}))


def shift(x, prev=None):
    """x_(t−1) beside x_t ([B, T, H]): RWKV's token shift; before the first token ``prev`` [B, H] (None: zeros, as
    transformers' ``nn.ZeroPad2d``)."""
    import torch

    first = torch.zeros_like(x[:, :1]) if prev is None else prev[:, None]
    return torch.cat([first, x[:, :-1]], 1)


def wkv_scan(time_decay, time_first, k, v, state=None, on_s=(), start=0):
    """WKV_t over dim 1 of k, v [B, T, C], one step at a time (autograd follows it), as transformers'
    ``rwkv_linear_attention_cpu``: the numerator and denominator kept as (a, b, p), the real state a·e^p.

    ``state``: (a, b, p) [B, C] each before the first step (None: empty). ``on_s``: edits fn(s, t) -> s of the real
    numerator [B, C], applied right after step ``start + j`` computes it. Returns (WKV [B, T, C], (a, b, p) [B, T, C]
    each: every step's state)."""
    import torch

    w, u = -torch.exp(time_decay.float()), time_first.float()
    zero = torch.zeros_like(k[:, 0], dtype=torch.float32)
    a, b, p = (zero, zero, zero - 1e38) if state is None else state
    out, states = [], []
    for j, (k_t, v_t) in enumerate(zip(k.float().unbind(1), v.float().unbind(1))):
        q = torch.maximum(p, u + k_t)
        e1, e2 = torch.exp(p - q), torch.exp(u + k_t - q)
        out.append((e1 * a + e2 * v_t) / (e1 * b + e2))
        q = torch.maximum(p + w, k_t)
        e1, e2 = torch.exp(p + w - q), torch.exp(k_t - q)
        a, b, p = e1 * a + e2 * v_t, e1 * b + e2, q
        if on_s:
            a = _edited_numerator(a, p, on_s, start + j)
        states.append((a, b, p))
    return torch.stack(out, 1).to(k.dtype), tuple(torch.stack(s, 1) for s in zip(*states))


def _edited_numerator(a, p, fns, t):
    """The stored numerator a after the edits of its real value a·e^p at step t."""
    import torch

    from seqviz.models.edits import _edited

    scale = torch.exp(p)
    s = kept = a * scale
    for fn in fns:
        s = _edited(fn, s, t, "s")
    return a if s is kept else s / scale  # untouched (outside an edit's span): a as it was, not a rounded copy


def _mixed(x, prev, mix):
    return x * mix + shift(x, prev) * (1 - mix)


def time_mix(att, x, carry=None, on_s=(), start=0):
    """RWKV-4's time mixing of a block's normalised input x [B, T, H] (``carry``: the input before it [B, H] and
    the WKV state (a, b, p), None at the start): (output, {k, v, r, wkv, a, b, p}, the carry after it)."""
    import torch

    prev, state = carry or (None, None)
    k = att.key(_mixed(x, prev, att.time_mix_key))
    v = att.value(_mixed(x, prev, att.time_mix_value))
    r = torch.sigmoid(att.receptance(_mixed(x, prev, att.time_mix_receptance)))
    wkv, (a, b, p) = wkv_scan(att.time_decay, att.time_first, k, v, state, on_s, start)
    parts = {"k": k, "v": v, "r": r, "wkv": wkv, "a": a, "b": b, "p": p}
    return att.output(r * wkv), parts, (x[:, -1], (a[:, -1], b[:, -1], p[:, -1]))


def channel_mix(ffn, x, prev=None):
    """RWKV-4's channel mixing of x [B, T, H] (``prev``: the input before it [B, H]): σ(r'_t) ⊙ W_v relu(k'_t)²."""
    import torch

    k = torch.square(torch.relu(ffn.key(_mixed(x, prev, ffn.time_mix_key))))
    r = torch.sigmoid(ffn.receptance(_mixed(x, prev, ffn.time_mix_receptance)))
    return r * ffn.value(k)


def rwkv_block(block, h, leaves=frozenset(), edits=None, carry=None, start=0):
    """One ``RwkvBlock`` from its weights: (the residual stream after it, {leaf: tensor} for ``leaves``, its carry).

    ``carry`` (None at the first token): (time mix's last input, its (a, b, p), channel mix's last input), what a
    step hands the next (``sample``); ``start``: the first step's index (the edits see it). ``edits``: leaf ("h",
    "s") -> [fn(state, t) -> state], applied right after step t computes that state."""
    import torch

    edits = edits or {}
    if block.layer_id == 0:
        h = block.pre_ln(h)
    att_carry, ffn_prev = (None, None) if carry is None else (carry[:2], carry[2])
    x = block.ln1(h)
    out, parts, att_carry = time_mix(block.attention, x, att_carry, edits.get("s", ()), start)
    h = h + out
    x = block.ln2(h)
    h = h + channel_mix(block.feed_forward, x, ffn_prev)
    if edits.get("h"):
        from seqviz.models.edits import _edited

        h = torch.stack([_edited_all(_edited, edits["h"], h[:, j], start + j) for j in range(h.shape[1])], 1)
    found = {}
    if leaves:
        scale = torch.exp(parts["p"])  # the real state: a·e^p, b·e^p
        decay = torch.exp(-torch.exp(block.attention.time_decay.float()))
        found = {"h": h, "k": parts["k"], "v": parts["v"], "gates.decay": decay.expand_as(parts["k"]),
                 "gates.output": parts["r"], "wkv": parts["wkv"]}
        found.update({"s": parts["a"] * scale, "den": parts["b"] * scale} if leaves & {"s", "den"} else {})
    return h, {k: v for k, v in found.items() if k in leaves}, (*att_carry, x[:, -1])


def _edited_all(edited, fns, state, t):
    for fn in fns:
        state = edited(fn, state, t, "h")
    return state


def blocks(lm, h, first: int = 0, leaves=None, edits=None, nudge=None, last=None):
    """The residual stream h [B, T, H] entering block ``first`` through every block from there, as transformers'
    ``RwkvModel`` runs them (halved after every ``rescale_every``-th block once its eval mode has rescaled the
    weights): (the stream after the last block, {f"layers.{i}.{leaf}": tensor}). ``nudge`` [B, T, C] is added to
    block ``first``'s numerator at every step (``introspect.rwkv_gradients``: a zero leaf there is ∂L/∂a); ``last``:
    the block to stop before (None: all). ``leaves``: block -> its leaves to keep."""
    rwkv, out = lm.model.rwkv, {}
    every = lm.model.config.rescale_every if rwkv.layers_are_rescaled else 0
    for i in range(first, len(rwkv.blocks) if last is None else last):
        layer_edits = dict((edits or {}).get(i, {}))
        if nudge is not None and i == first:
            layer_edits["s"] = [*layer_edits.get("s", ()), lambda s, t: s + nudge[:, t]]
        h, parts, _carry = rwkv_block(rwkv.blocks[i], h, leaves.get(i, frozenset()) if leaves else frozenset(),
                                      layer_edits)
        if every > 0 and (i + 1) % every == 0:
            h = h / 2  # what the next block reads, and transformers' hidden_states[i]
            parts = {**parts, "h": h} if "h" in parts else parts
        out.update({f"layers.{i}.{k}": v for k, v in parts.items()})
    return h, out


def sample(lm, ids: list[int], n: int, temperature: float = 1.0, seed: int | None = 0) -> list[int]:
    """``n`` tokens after ``ids`` (temperature 0: the likeliest each step), deterministic for a seed; special
    tokens are never produced. The prompt is read in one pass, then each token one step, carrying each block's
    state (its last inputs and (a, b, p))."""
    import torch

    if not ids:
        raise ValueError("generation needs at least one prompt token")
    rwkv, banned = lm.model.rwkv, (lm.tokenizer.special_ids if lm.tokenizer is not None else [])
    gen = torch.Generator().manual_seed(seed) if seed is not None else None
    every = lm.model.config.rescale_every if rwkv.layers_are_rescaled else 0
    carry: list = [None] * len(rwkv.blocks)
    out: list[int] = []
    with torch.no_grad():
        x = torch.tensor([list(ids)])
        while len(out) < n:
            h = rwkv.embeddings(x)
            for i, block in enumerate(rwkv.blocks):
                h, _parts, carry[i] = rwkv_block(block, h, carry=carry[i])
                if every > 0 and (i + 1) % every == 0:
                    h = h / 2
            last = lm.model.head(rwkv.ln_out(h[:, -1]))[0].float()
            last[banned] = -float("inf")
            if temperature <= 0:
                out.append(int(last.argmax()))
            else:
                out.append(int(torch.multinomial(torch.softmax(last / temperature, -1), 1, generator=gen)))
            x = torch.tensor([[out[-1]]])
    return out


def unrolled(lm, ids, layer: int):
    """Block ``layer``'s numerator for ids [1, T] as ``introspect.implicit.Parts``: a = e^(−w), b = e^(k_t) v_t per
    channel (in float64: e^k may overflow float32), memory a_t as traced, no read-out, no skip."""
    import torch

    from seqviz.introspect.implicit import Parts

    names = [f"layers.{layer}.{leaf}" for leaf in ("k", "v", "gates.decay", "s")]
    trace = lm.trace(ids, names=names)
    k, v, decay, s = (trace[name][0].double() for name in names)
    return Parts(decay[..., None], (torch.exp(k) * v)[..., None], None, torch.zeros_like(s), s, "s")
