"""lucidrains' minLM (PyPI ``mingru-pytorch``) as a recurrent LM: a user's state dict opened with its conventions
read from the keys (``lucid_minlm_keys``), a trace of every block, sampling, and its gradients by autograd.

A block (``minGRU_pytorch.minLM``) is x ← x + conv(x) (causal depthwise, when enable_conv), x ← x +
to_out(cell(RMSNorm(x))), x ← x + FF(RMSNorm(x)); the logits are to_logits(RMSNorm(x)). The cell is seqviz's own
minGRU or minLSTM (``models.minimal``, Feng et al. 2024), its weights mapped into seqviz's convention, so its
scan is the same log-space scan (Heinsen 2023) minLM runs. Trace, per block::

    layers.{i}.h       [B, T, I]    the cell's state h_t (I = dim · expansion): what to_out reads
    layers.{i}.gates.* [B, T, I]    minGRU: update z = σ(−gate) (the share kept), new g(h̃); minLSTM: input i′,
                                    forget f′, cell g(h̃)
    layers.{i}.stream  [B, T, dim]  the residual stream after the block (what the next block reads)
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from seqviz.files import read_json
from seqviz.lucid_minlm_keys import NOT_INFERRED, MinLMConfig, conventions, layout, to_seqviz
from seqviz.models.minimal import MINIMAL
from seqviz.pretrained import Pretrained
from seqviz.trace import Trace, check_names, loss_mask, trace_names

CELLS = {"minlm": "mingru", "minlm_lstm": "minlstm"}  # family -> seqviz's cell of the same equations


class Block(nn.Module):
    """One minLM block: [conv], RMSNorm → cell → to_out, RMSNorm → feed-forward, each added to the stream."""

    def __init__(self, cfg: MinLMConfig):
        super().__init__()
        dim, k = cfg.d_embed, cfg.conv_kernel
        self.conv = nn.Sequential(nn.Conv1d(dim, dim, k, groups=dim), nn.Conv1d(dim, dim, 1)) if k else None
        self.norm, self.ff_norm = nn.RMSNorm(dim, eps=cfg.rms_eps), nn.RMSNorm(dim, eps=cfg.rms_eps)
        self.cell = MINIMAL[CELLS[cfg.cell]](dim, cfg.d_hidden)
        self.to_out = nn.Linear(cfg.d_hidden, dim, bias=False) if cfg.out_proj else nn.Identity()
        self.ff = nn.Sequential(nn.Linear(dim, cfg.d_ff), nn.GELU(), nn.Linear(cfg.d_ff, dim))

    def mixed(self, x: torch.Tensor) -> torch.Tensor:
        """x + causal conv(x) [B, T, dim] (x itself without a conv): left padding only, as minLM pads."""
        if self.conv is None:
            return x
        k = self.conv[0].kernel_size[0]
        return x + self.conv(F.pad(x.transpose(1, 2), (k - 1, 0))).transpose(1, 2)

    def forward(self, x, leaves=(), prefix="", edits=(), nudge=None):
        """(the stream after the block, {name: tensor}); ``edits`` [fn(h, t)] or ``nudge`` [B, T, I] added to b_t
        (the gradient's leaf) run the recurrence step by step."""
        x = self.mixed(x)
        u = self.norm(x)
        if edits or nudge is not None:
            log_a, log_b = self.cell.coefficients(u)
            h = stepped(log_a.exp(), log_b.exp() + (0 if nudge is None else nudge), edits)
        else:
            h = self.cell(u)[0]
        x = x + self.to_out(h)
        x = x + self.ff(self.ff_norm(x))
        parts = {f"{prefix}h": h, f"{prefix}stream": x}
        if any(leaf.startswith("gates.") for leaf in leaves):
            parts.update(self.cell.signals(u, prefix.rstrip(".")))
        return x, parts


def stepped(a: torch.Tensor, b: torch.Tensor, edits=()) -> torch.Tensor:
    """h_t = a_t ⊙ h_(t−1) + b_t over dim 1, one step at a time (autograd follows it), each edit fn(h, t) applied
    right after step t."""
    from seqviz.models.edits import _edited

    h, out = torch.zeros_like(b[:, 0]), []
    for t, (a_t, b_t) in enumerate(zip(a.unbind(1), b.unbind(1))):
        h = a_t * h + b_t
        for fn in edits:
            h = _edited(fn, h, t, "h")
        out.append(h)
    return torch.stack(out, 1)


class MinLM(Pretrained, nn.Module):
    """A lucidrains minLM (minGRU or minLSTM blocks), opened from its state dict or a seqviz folder."""

    model_type = "recurrent_lm"  # what a page asks for: the recurrent-LM pages open it (its family: config.cell)
    config_class = MinLMConfig
    no_snapshots = "a minLM state dict keeps no training snapshots"

    def __init__(self, config: MinLMConfig, tokenizer=None, card: dict | None = None):
        nn.Module.__init__(self)
        self.config, self.tokenizer, self.card = config, tokenizer, dict(card or {})
        self.embed = nn.Embedding(config.vocab_size, config.d_embed)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layers))
        self.norm = nn.RMSNorm(config.d_embed, eps=config.rms_eps)
        self.head = nn.Linear(config.d_embed, config.vocab_size, bias=False)

    # ------------------------------------------------------------- files
    @classmethod
    def _from_pretrained(cls, path: Path, snapshot=None) -> "MinLM":
        from seqviz.checkpoints import materialize, read_weights
        from seqviz.lucid_minlm_keys import read_tokenizer

        if path.is_dir() and (path / "config.json").is_file():  # a folder seqviz wrote (save_pretrained)
            config = MinLMConfig.read(path / "config.json")
            weights = path / "model.safetensors"
            tensors, tokenizer = read_weights(weights), read_tokenizer(path, {}, None, config.vocab_size, "")
            card = read_json(path / "card.json") if (path / "card.json").is_file() else {}
        else:
            from seqviz.plain import find_files

            weights, spec_path = find_files(path)
            spec = read_json(spec_path) if spec_path is not None else {}
            tensors = read_weights(weights)
            info = layout({k: tuple(v.shape) for k, v in tensors.items()}, spec_path or weights)
            said = conventions(info)
            tokenizer = read_tokenizer(weights.parent, spec, spec_path, info["vocab_size"], said[0], weights)
            config = MinLMConfig.of(info, tokenizer.kind, spec.get("rms_eps"))
            tensors = to_seqviz(tensors, info)
            card = {"name": weights.stem, "source": "lucidrains minLM state dict (mingru-pytorch)",
                    "architecture": said[0], "conventions": said, "not_inferred": list(NOT_INFERRED)}
        with torch.device("meta"):
            skeleton = cls(config, tokenizer)
        model = materialize(skeleton, tensors, weights)
        model.tokenizer = tokenizer
        model.card = {**card, "path": str(path), "parameters": model.num_parameters()}
        return model.eval().requires_grad_(False)

    def _save_pretrained(self, folder: Path) -> MinLMConfig:
        from safetensors.torch import save_file

        (folder / "vocab.json").write_text(json.dumps(self.tokenizer.to_dict(), ensure_ascii=False))
        save_file({k: v.contiguous() for k, v in self.state_dict().items()}, str(folder / "model.safetensors"))
        return self.config

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def trace_names(self) -> list[str]:
        return trace_names(self.config.cell, self.config.n_layers)

    def describe(self) -> dict:
        cfg = self.config
        return {"model_type": self.model_type, "family": "lucidrains minLM (mingru-pytorch)", "cell": cfg.cell,
                "layers": cfg.n_layers, "stream": cfg.d_embed, "hidden": cfg.d_hidden, "feed_forward": cfg.d_ff,
                "conv_kernel": cfg.conv_kernel, "parameters": self.num_parameters(), "vocab_size": cfg.vocab_size,
                "config": asdict(cfg), "trace_names": self.trace_names()}  # the card: conventions, not_inferred

    # ------------------------------------------------------------- running
    def _ids(self, inputs):
        """(ids [B, T], mask [B, T], pieces or None) of a text, texts, id lists or an id tensor (``read_inputs``)."""
        from seqviz.data.tokenizers import read_inputs

        return read_inputs(self.tokenizer, inputs, "minLM")
    def run(self, x: torch.Tensor, start: int = 0, nudge: torch.Tensor | None = None) -> torch.Tensor:
        """Logits [B, T, V] from the stream entering block ``start``; ``nudge`` is added to that block's b_t."""
        for i, block in enumerate(self.blocks[start:]):
            x = block(x, nudge=nudge if i == 0 else None)[0]
        return self.head(self.norm(x))

    def trace(self, inputs, names=None, mask=None, edits=None):
        """The named tensors of a run (``names=None``: all). ``edits``: [(layers.{i}.h, fn(h, t) -> h)], applied
        right after step t computes h_t, before step t + 1, to_out and the blocks above read it."""
        from seqviz.models.edits import by_layer
        from seqviz.models.recurrent import next_token_loss

        wanted = check_names(names, self.trace_names())
        edited = by_layer(edits, self.config.cell, self.config.n_layers)
        ids, auto, pieces = self._ids(inputs)
        mask = auto if mask is None else mask.bool().reshape(ids.shape)
        if int(ids.max()) >= self.config.vocab_size or int(ids.min()) < 0:
            raise ValueError(f"token ids must lie in [0, {self.config.vocab_size})")
        out = {"tokens": ids, "mask": mask}
        with torch.no_grad():
            x = out["embed"] = self.embed(ids)
            for i, block in enumerate(self.blocks):
                leaves = [n.split(".", 2)[2] for n in wanted if n.startswith(f"layers.{i}.")]
                x, parts = block(x, leaves, f"layers.{i}.", edited.get(i, {}).get("h", ()))
                out.update(parts)
            logits = out["logits"] = self.head(self.norm(x))
            out.update(loss=next_token_loss(logits, ids, mask), loss_mask=loss_mask(mask))
        return Trace({k: out[k] for k in wanted}, pieces)

    def _step(self, token: int, conv: list, h: list) -> torch.Tensor:
        """One token through every block, carrying each block's last conv inputs and state h; its logits [V]."""
        x = self.embed(torch.tensor([token]))  # [1, dim]
        for i, block in enumerate(self.blocks):
            if block.conv is not None:  # the conv reads the last k inputs: the window carried, no padding
                window = torch.cat([conv[i], x[..., None]], -1)
                x, conv[i] = x + block.conv(window)[..., -1], window[..., 1:]
            h[i] = block.cell.step(block.norm(x), h[i])
            x = x + block.to_out(h[i])
            x = x + block.ff(block.ff_norm(x))
        return self.head(self.norm(x))[0]

    def sample(self, ids: list[int], n: int, temperature: float = 1.0, seed: int | None = 0) -> list[int]:
        """``n`` token ids after ``ids`` (temperature 0: the likeliest), step by step with each block's state;
        special tokens never."""
        if not ids:
            raise ValueError("generation needs at least one prompt token")
        cfg, gen = self.config, torch.Generator().manual_seed(seed) if seed is not None else None
        conv = [torch.zeros(1, cfg.d_embed, max(cfg.conv_kernel - 1, 0)) for _ in self.blocks]
        h = [torch.zeros(1, cfg.d_hidden) for _ in self.blocks]
        out: list[int] = []
        with torch.no_grad():
            for t in range(len(ids) + n - 1):
                logits = self._step(ids[t] if t < len(ids) else out[-1], conv, h)
                if t < len(ids) - 1:
                    continue
                logits[list(getattr(self.tokenizer, "special_ids", []))] = -float("inf")
                out.append(int(logits.argmax()) if temperature <= 0 else
                           int(torch.multinomial(torch.softmax(logits / temperature, -1), 1, generator=gen)))
        return out


# ------------------------------------------------------------------ gradients (the family entry names this module)
def gradient_matrix(lm: MinLM, ids: torch.Tensor, layer: int = -1, wrt: str = "h", rows: int = 16) -> np.ndarray:
    """G[t, k] = ‖∂L_t/∂h^layer_k‖₂ for k ≤ t (NaN above), the total derivative through every later step: a zero
    leaf added to b_k of block ``layer``'s recurrence; rows t = 0..T−2, as ``introspect.gradients`` for seqviz's
    cells. The losses are batched as rows (row r backpropagates L_(t_r) only)."""
    if wrt != "h":
        raise ValueError("a minLM's gradient is taken with respect to its blocks' state h")
    T, layer = ids.shape[1], layer % lm.config.n_layers
    if T < 2:
        raise ValueError("need at least two tokens: a loss needs a next token")
    name = "embed" if layer == 0 else f"layers.{layer - 1}.stream"
    x = lm.trace(ids, names=[name])[name].detach()
    G = np.full((T - 1, T), np.nan)
    with torch.enable_grad():
        for lo in range(0, T - 1, rows):
            t = torch.arange(lo, min(lo + rows, T - 1))
            leaf = x.new_zeros(len(t), T, lm.config.d_hidden).requires_grad_(True)
            logits = lm.run(x.expand(len(t), -1, -1), layer, leaf)
            logp = torch.log_softmax(logits[torch.arange(len(t)), t], -1)
            (g,) = torch.autograd.grad(-logp[torch.arange(len(t)), ids[0, t + 1]].sum(), leaf)
            G[t.numpy()] = g.double().norm(dim=-1).numpy()
    t_idx, k_idx = np.indices(G.shape)
    G[k_idx > t_idx] = np.nan
    return G


def connectivity(lm: MinLM, ids: torch.Tensor, target: int) -> np.ndarray:
    """‖∂ logit_target[ids[target+1]] / ∂x_k‖ for every input embedding x_k, k ≤ target (Distill 2019)."""
    t = min(target, ids.shape[1] - 1)
    x = lm.embed(ids[:, : t + 1]).detach()
    with torch.enable_grad():
        x.requires_grad_(True)
        logits = lm.run(x)[0, t]
        nxt = ids[0, t + 1] if t + 1 < ids.shape[1] else logits.argmax()
        (g,) = torch.autograd.grad(logits[nxt], x)
    return g[0].norm(dim=1).numpy()
