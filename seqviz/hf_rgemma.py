"""transformers RecurrentGemma causal LMs (Griffin and Hawk, De et al. 2024): safe loading and a trace of the RG-LRU.

A RecurrentGemma checkpoint is a transformers folder (``config.json`` with ``model_type: recurrent_gemma``,
``model.safetensors``, optionally tokenizer files or seqviz's vocab.json), opened as every transformers causal LM
is (``hf_causal.HFCausalLM``: safetensors only, checked on the meta device first). Its blocks follow the config's
``block_types`` (Griffin: recurrent, recurrent, attention, repeated; Hawk: recurrent only).

seqviz's layers are its recurrent blocks, in order (``layers.{i}`` is the i-th RG-LRU block, whatever attention
blocks lie between); each local-attention block is ``attention.{j}``. The trace re-runs every block from its own
weights with transformers' equations (``hf_rgemma_blocks``), one named tensor per quantity (W = lru_width)::

    embed                        [B, T, H]   √H · E[token] (√H rounded to bfloat16): the stream entering block 0
    layers.{i}.h                 [B, T, H]   the residual stream after recurrent block i (its MLP included)
    layers.{i}.x                 [B, T, W]   x_t, the RG-LRU's input (W_x u_t through the causal convolution)
    layers.{i}.gates.input       [B, T, W]   i_t = σ(W_x x_t + b_x), the input gate
    layers.{i}.gates.recurrence  [B, T, W]   r_t = σ(W_a x_t + b_a), the recurrence gate
    layers.{i}.gates.forget      [B, T, W]   a_t = σ(Λ)^(c·r_t), c = 8: the decay, the RG-LRU's forget gate
    layers.{i}.gates.output      [B, T, W]   GeLU(W_y u_t), the gate branch the state is multiplied by
    layers.{i}.write             [B, T, W]   b_t = √(1 − a_t²) ⊙ i_t ⊙ x_t (b_0 = i_0 ⊙ x_0: the reset)
    layers.{i}.s                 [B, T, W]   s_t = a_t ⊙ s_(t−1) + b_t, the RG-LRU's state: its memory
    attention.{j}.h              [B, T, H]   the residual stream after local-attention block j
    attention.{j}.weights        [B, heads, T, T]  its attention weights (0 outside the window; only when asked)

u_t is the block's RMS-normalised input; the block adds W_out (s_t ⊙ GeLU(W_y u_t)) to the stream, then its MLP.
The logits are soft-capped as transformers' (30 tanh(z / 30)). torch is imported inside the functions.
"""

from __future__ import annotations

from dataclasses import dataclass

from seqviz.families.rgemma import ATTENTION_LEAVES, LEAVES, ON_REQUEST
from seqviz.hf_causal import HFCausalLM


@dataclass(frozen=True)
class RGemmaShape:
    """A RecurrentGemma's sizes under the recurrent LM's config names (what the pages read of ``model.config``)."""

    n_layers: int  # its recurrent blocks: layers.{i}.h is the residual stream after the i-th
    d_embed: int  # the embedding's width (= the residual stream's)
    d_hidden: int  # width of layers.{i}.h: the residual stream, hidden_size
    vocab_size: int  # rows of the embedding
    channels: int  # W, lru_width: the RG-LRU's channels (x, gates, write, s per channel)
    heads: int  # attention heads, and the RG-LRU's gate blocks
    window: int  # attention_window_size: the tokens a local-attention block reads
    blocks: tuple[str, ...] = ()  # every block in order, "recurrent" or "attention"
    cell: str = "rglru"  # its entry in the family table
    tokenizer: str = "subword"  # a transformers tokenizer's pieces
    dropout: float = 0.0

    @classmethod
    def of(cls, hf_config) -> "RGemmaShape":
        types = list(hf_config.block_types)
        blocks = tuple((types * hf_config.num_hidden_layers)[: hf_config.num_hidden_layers])  # as transformers'
        return cls(blocks.count("recurrent"), hf_config.hidden_size, hf_config.hidden_size, hf_config.vocab_size,
                   hf_config.lru_width or hf_config.hidden_size, hf_config.num_attention_heads,
                   hf_config.attention_window_size, blocks)

    @property
    def attention_blocks(self) -> int:
        return self.blocks.count("attention")


def read_shape(folder) -> RGemmaShape:
    """A RecurrentGemma folder's ``RGemmaShape`` from its config.json alone (no torch, no transformers), with
    transformers' defaults for what the file leaves out."""
    from types import SimpleNamespace

    from seqviz.files import read_json

    defaults = {"num_hidden_layers": 26, "hidden_size": 2560, "vocab_size": 256000, "lru_width": None,
                "num_attention_heads": 10, "attention_window_size": 2048,
                "block_types": ("recurrent", "recurrent", "attention")}
    return RGemmaShape.of(SimpleNamespace(**{**defaults, **read_json(folder / "config.json")}))


def outputs(shape: RGemmaShape) -> list[str]:
    """The trace name of the residual stream after each block, in transformers' order (layers.{i}.h of the i-th
    recurrent block, attention.{j}.h of the j-th local-attention block)."""
    return [name for name in trace_names(shape) if name.endswith(".h")]


def trace_names(shape: RGemmaShape) -> list[str]:
    """Every name a RecurrentGemma trace can hold, in block order (``names=None`` leaves out ``ON_REQUEST``)."""
    names, counts = ["tokens", "mask", "embed"], {"recurrent": 0, "attention": 0}
    for kind in shape.blocks:
        prefix, leaves = ("layers", LEAVES) if kind == "recurrent" else ("attention", ATTENTION_LEAVES)
        names += [f"{prefix}.{counts[kind]}.{leaf}" for leaf in leaves]
        counts[kind] += 1
    return names + ["logits", "loss", "loss_mask"]


class RecurrentGemmaLM(HFCausalLM):
    """A transformers ``RecurrentGemmaForCausalLM`` and its tokenizer, answering with traces."""

    kinds = ("recurrent_gemma",)
    title = "RecurrentGemma"

    @classmethod
    def classes(cls, kind: str):
        from transformers import RecurrentGemmaConfig, RecurrentGemmaForCausalLM

        return RecurrentGemmaConfig, RecurrentGemmaForCausalLM

    @classmethod
    def shape_of(cls, hf_config) -> RGemmaShape:
        return RGemmaShape.of(hf_config)

    @classmethod
    def architecture(cls, hf_config, shape) -> str:
        return (f"{len(shape.blocks)} blocks ({shape.n_layers} RG-LRU, {shape.attention_blocks} local attention over "
                f"{shape.window} tokens), hidden {shape.d_hidden}, {shape.channels} channels, {shape.heads} heads")

    def trace_names(self) -> list[str]:
        return trace_names(self.config)

    def describe(self) -> dict:
        return {**super().describe(), "blocks": list(self.config.blocks)}

    def sample(self, ids: list[int], n: int, temperature: float = 1.0, seed: int | None = 0) -> list[int]:
        """``n`` token ids after ``ids``, one token at a time with each block's state (``sample``)."""
        return sample(self, ids, n, temperature, seed)

    def trace(self, inputs, names=None, mask=None, edits=None):
        """Run the model block by block and return the named tensors (``names=None``: all but attention weights).

        ``inputs`` as a recurrent LM's: a text, texts or id lists (right-padded), or an id tensor with an optional
        ``mask``. ``edits``: ``[(name, fn(state, t) -> state), ...]`` (``seqviz.models.edits``) on ``layers.{i}.s``
        (the RG-LRU's state [B, W]: applied right after step t, so the block's output at t, step t + 1 and the
        blocks above read it) or ``layers.{i}.h`` (the block's output [B, H])."""
        import torch

        from seqviz import hf_rgemma_blocks as blocks
        from seqviz.models.recurrent import next_token_loss
        from seqviz.trace import Trace, check_names, loss_mask

        available = self.trace_names()
        wanted = [n for n in available if n.rsplit(".", 1)[-1] not in ON_REQUEST] if names is None \
            else check_names(names, available)
        edits = edits_by_layer(edits, self.config.n_layers)
        ids, mask, pieces = self.inputs(inputs, mask)
        model = self.model.model
        out = {"tokens": ids, "mask": mask}
        with torch.no_grad():
            h = model.embed_tokens(ids)
            h = out["embed"] = h * model.normalizer.type(h.dtype)  # √H, rounded to bfloat16 as transformers' is
            counts = {"recurrent": 0, "attention": 0}
            for block, kind in zip(model.layers, self.config.blocks):
                i = counts[kind]
                counts[kind] += 1
                if kind == "recurrent":
                    leaves = {n.split(".", 2)[2] for n in wanted if n.startswith(f"layers.{i}.")}
                    h, parts = blocks.recurrent_block(block, h, leaves, edits=edits.get(i))
                    out.update({f"layers.{i}.{k}": v for k, v in parts.items()})
                else:
                    h, w = blocks.attention_block(block, h, weights=f"attention.{i}.weights" in wanted)
                    out.update({f"attention.{i}.h": h, f"attention.{i}.weights": w})
            logits = head(self.model, h)
            out.update(logits=logits, loss=next_token_loss(logits, ids, mask), loss_mask=loss_mask(mask))
        return Trace({k: out[k] for k in wanted}, pieces)


def head(lm_model, h):
    """Soft-capped logits [B, T, V] from the last block's stream: cap · tanh(W RMSNorm(h) / cap)."""
    import torch

    cap = lm_model.config.logits_soft_cap
    return torch.tanh(lm_model.lm_head(lm_model.model.final_norm(h)) / cap) * cap


def edits_by_layer(edits, n_layers: int) -> dict[int, dict[str, list]]:
    """``edits`` checked and grouped: recurrent layer -> leaf (the entry's edit states: s, h) -> functions, in order."""
    from seqviz.families.rgemma import RGLRU
    from seqviz.models.edits import by_layer

    return by_layer(edits, RGLRU.name, n_layers, RGLRU.edit_states)


def stepper(lm):
    """``step(token, t) -> logits [V]``: one token at position t through every block, carrying each recurrent
    block's convolution inputs and state s and each attention block's keys and values inside its window (call
    it for t = 0, 1, 2 ... in order)."""
    import torch

    from seqviz import hf_rgemma_blocks as blocks

    model, cfg = lm.model.model, lm.config
    states = []
    for block, kind in zip(model.layers, cfg.blocks):
        t = block.temporal_block
        states.append((torch.zeros(1, t.conv1d_width - 1, cfg.channels), torch.zeros(1, cfg.channels))
                      if kind == "recurrent" else (torch.zeros(1, t.num_key_value_heads, 0, t.head_dim),) * 2)

    def step(token: int, t: int):
        with torch.no_grad():
            h = model.embed_tokens(torch.tensor([[token]]))
            h = h * model.normalizer.type(h.dtype)
            for k, (block, kind) in enumerate(zip(model.layers, cfg.blocks)):
                if kind == "recurrent":
                    h, *states[k] = blocks.recurrent_step(block, h, *states[k], first=t == 0)
                else:
                    h, *states[k] = blocks.attention_step(block, h, *states[k], position=t)
            return head(lm.model, h)[0, -1].float()
    return step


def sample(lm, ids: list[int], n: int, temperature: float = 1.0, seed: int | None = 0) -> list[int]:
    """``n`` tokens after ``ids`` (temperature 0: the likeliest each step), deterministic for a seed; special tokens
    are never produced. The prompt is read token by token (``stepper``): a token costs one step of each block."""
    import torch

    if not ids:
        raise ValueError("generation needs at least one prompt token")
    step, banned = stepper(lm), lm.banned()
    gen = torch.Generator().manual_seed(seed) if seed is not None else None
    out: list[int] = []
    for t in range(len(ids) + n):
        last = step(ids[t] if t < len(ids) else out[-1], t)
        if t < len(ids) - 1:
            continue
        last[banned] = -float("inf")
        out.append(int(last.argmax()) if temperature <= 0 else
                   int(torch.multinomial(torch.softmax(last / temperature, -1), 1, generator=gen)))
        if len(out) == n:
            break
    return out
