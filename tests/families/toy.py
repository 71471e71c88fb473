"""A toy family, for tests only: a diagonal linear recurrence h_t = a ⊙ h_(t−1) + b ⊙ x_t with a readout.

Everything seqviz needs to show it is here and nowhere else: its model (``ToyLM``: trace, sample, save, load),
its format row (``seqviz.registry``), its family entry (``seqviz.families``) and its gradients (autograd on the
unrolled recurrence: ``gradient_matrix``, ``connectivity``). ``installed()`` registers both rows and removes
them afterwards; a test that opens every recurrent-LM page on it proves that a family needs no page or view edit.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from seqviz import families, registry
from seqviz.config import JsonConfig
from seqviz.data.tokenizers import Tokenizer
from seqviz.families import Family, Linear
from seqviz.files import CheckpointError, read_json
from seqviz.pretrained import Pretrained
from seqviz.trace import Trace, check_names, loss_mask

LEAVES = ("h", "gates.decay", "drive")


@dataclass
class ToyConfig(JsonConfig):
    """A toy recurrent LM under LMConfig's names (what the pages read)."""

    cell: str = "toy"
    n_layers: int = 2
    d_embed: int = 8
    d_hidden: int = 8  # = d_embed: b ⊙ x_t needs x_t as wide as h
    dropout: float = 0.0
    tokenizer: str = "char"
    vocab_size: int = 0

    model_type = "toy_lm"


class ToyLM(Pretrained, nn.Module):
    """embedding -> n_layers of h_t = a ⊙ h_(t−1) + b ⊙ x_t (a = sigmoid(α), per unit) -> linear readout."""

    model_type = "recurrent_lm"  # what a page asks for
    config_class = ToyConfig
    no_snapshots = "a toy keeps no snapshots"

    def __init__(self, config: ToyConfig, tokenizer: Tokenizer, card: dict | None = None):
        nn.Module.__init__(self)
        self.config, self.tokenizer, self.card = config, tokenizer, dict(card or {})
        self.embed = nn.Embedding(config.vocab_size, config.d_hidden)
        self.alpha = nn.Parameter(torch.randn(config.n_layers, config.d_hidden) + 1.5)
        self.beta = nn.Parameter(torch.randn(config.n_layers, config.d_hidden))
        self.out = nn.Linear(config.d_hidden, config.vocab_size)

    # ------------------------------------------------------------- files
    @classmethod
    def _from_pretrained(cls, path: Path, snapshot=None) -> ToyLM:
        from safetensors.torch import load_file

        config = ToyConfig(**{k: v for k, v in read_json(path / "config.json").items()
                              if k in ToyConfig.__dataclass_fields__})
        tokenizer = Tokenizer.from_dict(read_json(path / "vocab.json"))
        model = cls(config, tokenizer, read_json(path / "card.json") if (path / "card.json").is_file() else {})
        try:
            model.load_state_dict(load_file(path / "model.safetensors"))
        except RuntimeError as e:
            raise CheckpointError(path, f"weights do not fit the config: {e}") from None
        return model.eval().requires_grad_(False)

    def _save_pretrained(self, folder: Path) -> ToyConfig:
        import json

        from safetensors.torch import save_file

        (folder / "vocab.json").write_text(json.dumps(self.tokenizer.to_dict()))
        save_file({k: v.contiguous() for k, v in self.state_dict().items()}, folder / "model.safetensors")
        return self.config

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def trace_names(self) -> list[str]:
        from seqviz.trace import trace_names

        return trace_names("toy", self.config.n_layers)

    def describe(self) -> dict:
        return {"model_type": self.model_type, "cell": "toy", "layers": self.config.n_layers,
                "hidden": self.config.d_hidden, "parameters": self.num_parameters(),
                "trace_names": self.trace_names()}

    # ------------------------------------------------------------- running
    def layer(self, i: int, x: torch.Tensor, nudge: torch.Tensor | None = None, edits=()):
        """(h, a, drive) [B, T, H] of layer ``i``: h_t = a ⊙ h_(t−1) + b ⊙ x_t (+ nudge_t), one step at a time."""
        a, drive = torch.sigmoid(self.alpha[i]), self.beta[i] * x
        h, hs = x.new_zeros(x.shape[0], x.shape[2]), []
        for t in range(x.shape[1]):
            h = a * h + drive[:, t] + (0 if nudge is None else nudge[:, t])
            for fn in edits:
                h = fn(h, t)
            hs.append(h)
        return torch.stack(hs, 1), a.expand_as(drive), drive

    def _ids(self, inputs):
        from seqviz.data.tokenizers import read_inputs

        return read_inputs(self.tokenizer, inputs, "toy")

    def trace(self, inputs, names=None, mask=None, edits=None):
        """The named tensors of a run: embed [B, T, H], layers.{i}.h / gates.decay / drive [B, T, H], logits
        [B, T, V], loss and loss_mask [B, T − 1]. ``edits``: [(layers.{i}.h, fn(state, t) -> state)]."""
        from seqviz.models.edits import by_layer
        from seqviz.models.recurrent import next_token_loss

        wanted = check_names(names, self.trace_names())
        edited = by_layer(edits, "toy", self.config.n_layers)
        ids, auto, pieces = self._ids(inputs)
        mask = auto if mask is None else mask.bool().reshape(ids.shape)
        out = {"tokens": ids, "mask": mask}
        with torch.no_grad():
            h = out["embed"] = self.embed(ids)
            for i in range(self.config.n_layers):
                h, a, drive = self.layer(i, h, edits=edited.get(i, {}).get("h", ()))
                out.update({f"layers.{i}.h": h, f"layers.{i}.gates.decay": a, f"layers.{i}.drive": drive})
            logits = out["logits"] = self.out(h)
            out.update(loss=next_token_loss(logits, ids, mask), loss_mask=loss_mask(mask))
        return Trace({k: out[k] for k in wanted}, pieces)

    def sample(self, ids: list[int], n: int, temperature: float = 1.0, seed: int | None = 0) -> list[int]:
        """``n`` token ids after ``ids`` (temperature 0: the likeliest), never a special token."""
        if not ids:
            raise ValueError("generation needs at least one prompt token")
        gen = torch.Generator().manual_seed(seed or 0)
        out = list(ids)
        for _ in range(n):
            logits = self.trace([out], names=["logits"])["logits"][0, -1].clone()
            logits[list(self.tokenizer.special_ids)] = -float("inf")
            nxt = int(logits.argmax()) if temperature <= 0 else \
                int(torch.multinomial(torch.softmax(logits / temperature, -1), 1, generator=gen))
            out.append(nxt)
        return out[len(ids):]


# ------------------------------------------------------------------ gradients (Family.gradients names this module)
def _from(lm, h: torch.Tensor, start: int, nudge: torch.Tensor | None = None) -> torch.Tensor:
    """Logits from the stream entering layer ``start``, that layer's state nudged by ``nudge``."""
    for i in range(start, lm.config.n_layers):
        h = lm.layer(i, h, nudge if i == start else None)[0]
    return lm.out(h)


def gradient_matrix(lm, ids: torch.Tensor, layer: int = -1, wrt: str = "h", rows: int = 16) -> np.ndarray:
    """G[t, k] = ‖∂L_t/∂h^layer_k‖₂ (the total derivative through later steps: a zero nudge of h_k), k ≤ t."""
    T, layer = ids.shape[1], layer % lm.config.n_layers
    if T < 2:
        raise ValueError("need at least two tokens: a loss needs a next token")
    x = lm.trace(ids, names=["embed", *[f"layers.{i}.h" for i in range(lm.config.n_layers)]])
    below = x["embed"] if layer == 0 else x[f"layers.{layer - 1}.h"]
    G = np.full((T - 1, T), np.nan)
    with torch.enable_grad():
        for t in range(T - 1):
            nudge = below.new_zeros(1, T, lm.config.d_hidden).requires_grad_(True)
            logp = torch.log_softmax(_from(lm, below, layer, nudge)[0, t], -1)
            (g,) = torch.autograd.grad(-logp[ids[0, t + 1]], nudge)
            G[t, : t + 1] = g[0, : t + 1].norm(dim=-1).numpy()
    return G


def connectivity(lm, ids: torch.Tensor, target: int) -> np.ndarray:
    """‖∂ logit_target[next] / ∂x_k‖ for every input embedding x_k, k ≤ target."""
    t = min(target, ids.shape[1] - 1)
    x = lm.embed(ids[:, : t + 1]).detach()
    with torch.enable_grad():
        x.requires_grad_(True)
        logits = _from(lm, x, 0)[0, t]
        nxt = ids[0, t + 1] if t + 1 < ids.shape[1] else logits.argmax()
        (g,) = torch.autograd.grad(logits[nxt], x)
    return g[0].norm(dim=1).numpy()


# ------------------------------------------------------------------ the two rows
FORMAT = registry.Family("toy_lm", "recurrent_lm", "tests.families.toy:ToyLM", "a toy diagonal linear recurrence")
TOY = Family(
    name="toy", title="Toy", description="a diagonal linear recurrence h_t = a ⊙ h_(t−1) + b ⊙ x_t",
    leaves=LEAVES, signals=("decay", "h"), gates=("decay",), mean_signals=("decay",), unbounded=("h",),
    memory="h", retention="decay", symbol="a", linear=Linear(decay="gates.decay", write=("drive",), state="h"),
    has=frozenset({"memory", "linear_form"}), gradients="tests.families.toy", carried="h", loader="toy_lm", colour="#888888")


@contextlib.contextmanager
def installed():
    """The toy's format and family rows registered for the duration (then removed)."""
    registry.register(FORMAT)
    families.register(TOY)
    try:
        yield TOY
    finally:
        families.unregister(TOY.name)
        registry.unregister(FORMAT.name)


def build(seed: int = 0, alphabet: str = "abcdefghij klmnopqrstuvwxyz.,\nTHE") -> ToyLM:
    """A 2-layer toy with random weights over ``alphabet`` (+ specials)."""
    torch.manual_seed(seed)
    tok = Tokenizer.train("char", alphabet)
    return ToyLM(ToyConfig(vocab_size=len(tok)), tok).eval().requires_grad_(False)
