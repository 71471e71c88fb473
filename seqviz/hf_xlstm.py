"""transformers xLSTM causal LMs (Beck et al. 2024; the "xLSTM 7B" architecture of Beck et al. 2025): a trace of the mLSTM.

An xLSTM checkpoint is a transformers folder (``config.json`` with ``model_type: xlstm``, ``model.safetensors``,
tokenizer files or seqviz's ``vocab.json``), opened by ``seqviz.hf_causal`` under its rules. transformers' xLSTM
has mLSTM blocks only (no sLSTM): each block is an RMSNorm, an mLSTM layer, a residual, an RMSNorm and a gated
feed-forward. The trace re-runs each mLSTM layer from its own weights step by step with transformers' recurrent
equations (``mlstm_recurrent_step_native``: the matrix memory C_t, the normaliser n_t and the stabiliser m_t), so
it shows the gates and the memory that the chunkwise kernel never materialises. With NH heads, DK key and DV value
dimensions per head and U = NH·DV units (a unit is one column of a head's C: one value channel)::

    layers.{i}.h             [B, T, H]       the residual stream after block i
    layers.{i}.q, .k         [B, T, NH·DK]   queries and keys (head by head)
    layers.{i}.v             [B, T, U]       values
    layers.{i}.gates.input   [B, T, U]       exp(ĩ_t − m_t), the stabilised exponential input gate (per head)
    layers.{i}.gates.forget  [B, T, U]       σ(f̃_t), the forget gate of the unstabilised C_t (per head)
    layers.{i}.gates.output  [B, T, U]       σ(õ_t), the output gate
    layers.{i}.m             [B, T, NH]      m_t = max(log σ(f̃_t) + m_(t−1), ĩ_t), the stabiliser
    layers.{i}.n             [B, T, NH·DK]   ñ_t = e^(log σ(f̃_t) + m_(t−1) − m_t) ñ_(t−1) + e^(ĩ_t − m_t) k_t
    layers.{i}.c             [B, T, U]       c_t = C̃_tᵀ q̂_t / (max(|ñ_tᵀ q̂_t|, e^(−m_t)) + ε), q̂ = q/√DK: h̃_t
    layers.{i}.C             [B, T, U, DK]   C̃_t = e^(log σ(f̃_t) + m_(t−1) − m_t) C̃_(t−1) + e^(ĩ_t − m_t) k_t v_tᵀ,
                                             unit-major (column j of head h is row h·DV + j; only when asked)

C̃ and ñ are C_t e^(−m_t) and n_t e^(−m_t) (the paper's eqs. 19-27 kept in range); m cancels in c. The gate
pre-activations are soft-capped (15·tanh(x/15)) as transformers does; the logits too (30·tanh(x/30)).
torch and transformers are imported inside the functions: importing this module costs neither.
"""

from __future__ import annotations

from dataclasses import dataclass

from seqviz.families.xlstm import LEAVES, ON_REQUEST
from seqviz.hf_causal import HFCausalLM

EDITABLE = ("h", "c", "C")  # block output [B, H], a unit's read-out [B, U], the memory [B, U, DK]


@dataclass(frozen=True)
class XLSTMShape:
    """An xLSTM's sizes under the recurrent LM's config names (what the pages read of ``model.config``)."""

    n_layers: int  # blocks; layers.{i}.h is the residual stream after block i
    d_embed: int  # the embedding's width (= the residual stream's)
    d_hidden: int  # width of layers.{i}.h
    vocab_size: int
    heads: int  # NH: one matrix memory and one pair of input/forget gates per head
    key_dim: int  # DK: a head's query/key width (rows of its C)
    value_dim: int  # DV: a head's value width (columns of its C)
    units: int  # U = NH·DV: columns of every head's C, the units its gates and read-out c are drawn on
    cell: str = "xlstm"
    tokenizer: str = "subword"  # transformers' pieces; seqviz's own vocab.json says char or word
    dropout: float = 0.0

    @classmethod
    def of(cls, hf_config) -> "XLSTMShape":
        """From an ``xLSTMConfig`` (or its config.json): the widths ``xLSTMLayer`` builds (hidden × factor,
        not the cache's rounded ``qk_dim``)."""
        hidden, heads = hf_config.hidden_size, hf_config.num_heads
        qk, v = int(hidden * hf_config.qk_dim_factor), int(hidden * hf_config.v_dim_factor)
        return cls(hf_config.num_hidden_layers, hidden, hidden, hf_config.vocab_size, heads, qk // heads, v // heads, v)


def read_shape(folder) -> XLSTMShape:
    """An xLSTM folder's ``XLSTMShape`` from its config.json alone (no torch, no transformers)."""
    from types import SimpleNamespace

    from seqviz.files import read_json

    config = read_json(folder / "config.json")
    defaults = {"hidden_size": config.get("embedding_dim") or 4096, "num_heads": 8, "qk_dim_factor": 0.5,
                "v_dim_factor": 1.0, "vocab_size": 50304}
    layers = config.get("num_hidden_layers") or config.get("num_blocks") or 32
    return XLSTMShape.of(SimpleNamespace(**{**defaults, **{k: v for k, v in config.items() if v is not None},
                                            "num_hidden_layers": layers}))


def xlstm_trace_names(n_layers: int) -> list[str]:
    """Every name an xLSTM trace can hold, in order (``names=None`` leaves out ``ON_REQUEST``)."""
    return ["tokens", "mask", "embed", *[f"layers.{i}.{leaf}" for i in range(n_layers) for leaf in LEAVES],
            "logits", "loss", "loss_mask"]


class XLSTMLM(HFCausalLM):
    """A transformers ``xLSTMForCausalLM`` and its tokenizer, answering with traces (its family is "xlstm")."""

    kinds, title = ("xlstm",), "xLSTM"

    @classmethod
    def classes(cls, kind: str):
        from transformers import xLSTMConfig, xLSTMForCausalLM

        return xLSTMConfig, xLSTMForCausalLM

    @classmethod
    def shape_of(cls, hf_config):
        return XLSTMShape.of(hf_config)

    @classmethod
    def architecture(cls, hf_config, shape) -> str:
        return (f"{shape.n_layers} mLSTM blocks, hidden {shape.d_hidden}, {shape.heads} heads x {shape.key_dim}x"
                f"{shape.value_dim} matrix memory")

    def trace_names(self) -> list[str]:
        return xlstm_trace_names(self.config.n_layers)

    def trace(self, inputs, names=None, mask=None, edits=None):
        """Run the model block by block and return the named tensors (``names=None``: all but C); the blocks above
        the highest one named are not run unless logits or loss are asked for.

        ``inputs`` as a recurrent LM's: a text, texts or id lists (right-padded), or an id tensor with an optional
        ``mask``. ``edits``: ``[(name, fn(state, t) -> state), ...]`` on ``layers.{i}.h`` (the block's output
        [B, H]: the blocks above read the edited one), ``layers.{i}.C`` (the memory [B, U, DK], unit-major) or
        ``layers.{i}.c`` ([B, U]: the memory's columns moved along q̂_t by the least change that makes them read the
        edited values, ``mlstm_cell``), applied right after step t, before step t + 1 reads the memory."""
        import torch

        from seqviz.hf_xlstm_cell import logits_of, xlstm_block
        from seqviz.models.edits import by_layer
        from seqviz.models.recurrent import next_token_loss
        from seqviz.trace import Trace, check_names, loss_mask

        available = self.trace_names()
        wanted = [n for n in available if n.split(".", 2)[-1] not in ON_REQUEST] if names is None \
            else check_names(names, available)
        edits = by_layer(edits, "xlstm", self.config.n_layers, leaves=EDITABLE)
        ids, mask, pieces = self.inputs(inputs, mask)
        head = bool({"logits", "loss", "loss_mask"} & set(wanted))
        top = self.config.n_layers - 1 if head else \
            max([int(n.split(".")[1]) for n in wanted if n.startswith("layers.")], default=-1)
        backbone = self.model.backbone
        out = {"tokens": ids, "mask": mask}
        with torch.no_grad():
            h = out["embed"] = backbone.embeddings(ids)
            for i, block in enumerate(backbone.blocks[: top + 1]):
                leaves = {n.split(".", 2)[2] for n in wanted if n.startswith(f"layers.{i}.")}
                h, parts, _state = xlstm_block(block, h, leaves, edits=edits.get(i))
                out.update({f"layers.{i}.{k}": v for k, v in parts.items()})
            if head:
                logits = logits_of(self.model, h)
                out.update(logits=logits, loss=next_token_loss(logits, ids, mask), loss_mask=loss_mask(mask))
        return Trace({k: out[k] for k in wanted}, pieces)

    def sample(self, ids: list[int], n: int, temperature: float = 1.0, seed: int | None = 0) -> list[int]:
        """``n`` token ids after ``ids`` (temperature 0: the likeliest each step), deterministic for a seed; special
        tokens are never produced. The prompt is read token by token, each block's (C, n, m) carried."""
        import torch

        from seqviz.hf_xlstm_cell import logits_of, xlstm_block

        if not ids:
            raise ValueError("generation needs at least one prompt token")
        backbone, banned = self.model.backbone, self.banned()
        gen = torch.Generator().manual_seed(seed) if seed is not None else None
        states: list = [None] * self.config.n_layers
        out: list[int] = []
        with torch.no_grad():
            for t in range(len(ids) + n):
                h = backbone.embeddings(torch.tensor([[ids[t] if t < len(ids) else out[-1]]]))
                for i, block in enumerate(backbone.blocks):
                    h, _parts, states[i] = xlstm_block(block, h, frozenset(), state=states[i])
                if t < len(ids) - 1:
                    continue
                last = logits_of(self.model, h)[0, -1].float()
                last[banned] = -float("inf")
                if temperature <= 0:
                    out.append(int(last.argmax()))
                else:
                    out.append(int(torch.multinomial(torch.softmax(last / temperature, -1), 1, generator=gen)))
                if len(out) == n:
                    break
        return out


def unrolled(lm, ids, layer: int):
    """Block ``layer``'s memory for ids [1, T] as ``introspect.implicit.Parts``, per unit (a column j of head h) and
    key row n: a_t = σ(f̃_t) e^(m_(t−1) − m_t), b_t = e^(ĩ_t − m_t) v_t[j] k_t[n] (C̃_t = a_t C̃_(t−1) + b_t), read
    q̂_t[n] / (max(|ñ_tᵀ q̂_t|, e^(−m_t)) + ε), memory c_t (so Σ_n read ⊙ C̃_t = c_t), no skip."""
    import torch

    from seqviz.introspect.implicit import Parts

    shape = lm.config
    names = ("q", "k", "v", "m", "n", "gates.forget", "gates.input", "c")
    trace = lm.trace(ids, names=[f"layers.{layer}.{n}" for n in names])
    q, k, v, m, n, f, i, c = (trace[f"layers.{layer}.{n}"][0].double() for n in names)
    T, NH, DK, DV = q.shape[0], shape.heads, shape.key_dim, shape.value_dim
    q, k, n, v = (x.reshape(T, NH, -1) for x in (q, k, n, v))
    f, i = f.reshape(T, NH, DV)[..., 0], i.reshape(T, NH, DV)[..., 0]  # one gate per head
    before = torch.cat([m.new_zeros(1, NH), m[:-1]])  # m_(−1) = 0, transformers' initial state
    a = f * torch.exp(before - m)  # [T, NH]
    qs = q * DK ** -0.5
    eps = lm.model.config.eps
    den = torch.maximum((qs * n).sum(-1).abs(), torch.exp(-m)) + eps  # [T, NH]

    def per_unit(x):  # [T, NH, DV, DK] -> [T, U, DK]
        return x.reshape(T, NH * DV, DK)

    b = per_unit(i[..., None, None] * v[..., :, None] * k[..., None, :])
    read = per_unit((qs / den[..., None])[:, :, None, :].expand(-1, -1, DV, -1))
    decay = per_unit(a[..., None, None].expand(-1, -1, DV, DK))
    return Parts(decay, b, read, torch.zeros_like(c), c, "C")
