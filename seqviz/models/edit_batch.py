"""Several edited runs of the same texts as one batch: ``edited_traces(model, plain, [edits_a, edits_b, ...])``.

The views weigh an edit against the same edit of k random units (five draws): six edited runs of the same
texts. Stacked on the batch dimension (row r * B + b: text b under edit set r, each set's functions applied
to its own rows by ``Rows``) they are one step-by-step pass instead of six, and it starts where an edit can
first act: the layers below the lowest edited one, and every step before the edits' first, are read from
``plain`` (the unedited trace with every name, which the caller keeps), its state there handed on to the
first step recomputed. The rows equal one ``model.trace(inputs, edits=set)`` each, to float32 rounding.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from seqviz.models.edits import Edit, SetUnits, _edited, by_layer, stepped_layer
from seqviz.trace import Trace

HEAD = ("logits", "loss")


class Rows:
    """fn(state, t): row block r of the state ([R * block, H]) edited by ``fns[r]`` (that set's functions for
    this state, in order; [] leaves the block as it is). When every function is a ``SetUnits`` of constant
    values over one span, the blocks are edited at once (one ``where`` a step); outside every span, not at all."""

    def __init__(self, fns: Sequence[list], block: int, leaf: str):
        self.fns, self.block, self.leaf = [list(f) for f in fns], int(block), leaf
        every = [fn for f in self.fns for fn in f]
        self.spans = {fn.span for fn in every} if all(isinstance(fn, SetUnits) for fn in every) else None
        self.at_once = self.spans is not None and len(self.spans) == 1 and all(
            len(f) <= 1 for f in self.fns) and all(fn.values.dim() == 1 for fn in every)
        self._where = None  # (mask, values) [R * block, H], made at the first step (the width is known then)

    def __call__(self, state: torch.Tensor, t: int) -> torch.Tensor:
        if self.spans is not None and None not in self.spans and not any(a <= t < b for a, b in self.spans):
            return state
        if self.at_once and state.dim() == 2:
            mask, values = self._where if self._where is not None else self._masks(state)
            return torch.where(mask, values, state)
        parts = []
        for r, fns in enumerate(self.fns):
            part = state[r * self.block:(r + 1) * self.block]
            for fn in fns:
                part = _edited(fn, part, t, self.leaf)
            parts.append(part)
        return torch.cat(parts)

    def _masks(self, state: torch.Tensor):
        width = state.shape[-1]
        mask = torch.zeros(len(self.fns), width, dtype=torch.bool)
        values = torch.zeros(len(self.fns), width, dtype=state.dtype)
        for r, fns in enumerate(self.fns):
            for fn in fns:
                if int(fn.units.max()) >= width:
                    raise ValueError(f"unit {int(fn.units.max())} is out of range: the state has {width} units")
                mask[r, fn.units], values[r, fn.units] = True, fn.values.to(state.dtype)
        self._where = (mask.repeat_interleave(self.block, 0).to(state.device),
                       values.repeat_interleave(self.block, 0).to(state.device))
        return self._where


def first_step(fn) -> int:
    """The first step at which ``fn`` may change a state: its span's start for a ``SetUnits``, its own
    ``first_step`` attribute where it has one (a knockout of token j: j), else 0."""
    if isinstance(fn, SetUnits):
        return fn.span[0] if fn.span is not None else 0
    return int(getattr(fn, "first_step", 0))


BATCH_BYTES = 256 << 20  # about what one batch of edited rows may hold (``seqviz.budget.trace_bytes`` of a row)


@torch.no_grad()
def edited_traces(model, plain: Trace, edit_sets: Sequence[list[Edit]], names: Sequence[str] = HEAD) -> list[Trace]:
    """One trace per edit set of ``plain``'s inputs (``plain``: ``model.trace`` of them, with tokens and mask; seqviz's
    own cells read every name of it, traced again where it lacks one), run as batches of as many sets as
    ``BATCH_BYTES`` holds (all of them for the shipped models; five rows of mamba-130m's 190 tokens).
    ``names``: of tokens, mask, logits, loss, loss_mask and layers.{i}.h."""
    from seqviz import budget

    rows = max(1, BATCH_BYTES // max(1, budget.trace_bytes(model, plain["tokens"].numel(), layers=1)))
    if len(edit_sets) > rows:
        return [run for lo in range(0, len(edit_sets), rows)
                for run in edited_traces(model, plain, edit_sets[lo:lo + rows], names)]
    return _batch(model, plain, edit_sets, names)


def _batch(model, plain: Trace, edit_sets: Sequence[list[Edit]], names: Sequence[str]) -> list[Trace]:
    """``edited_traces`` of one batch of edit sets."""
    from seqviz.models.recurrent import RecurrentLM, layer_step

    if not isinstance(model, RecurrentLM):  # the batched restart below reads seqviz's own layers; others edit inside
        return _tiled(model, plain, edit_sets, names)  # their own trace (a transformers Mamba, a registered family)
    if any(n not in plain for n in model.trace_names()):  # a trace of one layer (a large model's, seqviz.views.traced)
        plain = Trace(dict(model.trace(plain["tokens"], mask=plain["mask"])), plain.token_strings)
    cfg, sets = model.config, [by_layer(s, model.config.cell, model.config.n_layers) for s in edit_sets]
    allowed = {"tokens", "mask", "logits", "loss", "loss_mask", *(f"layers.{i}.h" for i in range(cfg.n_layers))}
    if not sets or set(names) - allowed:
        raise ValueError(f"edited_traces needs edit sets and names of {', '.join(sorted(allowed))}; got {list(names)}")
    rows, (block, steps) = len(sets), plain["tokens"].shape
    edited = sorted(set().union(*sets))
    lowest = edited[0] if edited else cfg.n_layers
    start = min((first_step(fn) for s in sets for leaves in s.values() for fns in leaves.values() for fn in fns),
                default=steps)
    start = min(start, steps - 1)  # at least the last step recomputed: one code path
    device = model.embed.weight.device

    def tiled(tensor):
        return tensor.repeat(rows, *([1] * (tensor.dim() - 1)))

    out = {k: tiled(plain[k]) for k in ("tokens", "mask", "loss_mask")}
    for i in range(min(lowest, cfg.n_layers)):
        out[f"layers.{i}.h"] = tiled(plain[f"layers.{i}.h"])
    x = tiled(plain["embed"] if lowest == 0 else plain[f"layers.{lowest - 1}.h"])[:, start:].to(device)
    for i in range(lowest, cfg.n_layers):
        rnn, lstm = model.layers[i], cfg.cell == "lstm"
        state = _state_before(plain, i, start, lstm, tiled, device)
        if i in edited:
            edits = {leaf: [Rows([s.get(i, {}).get(leaf, []) for s in sets], block, leaf)]
                     for leaf in ("h", "c") if any(leaf in s.get(i, {}) for s in sets)}
            x = stepped_layer(layer_step(cfg.cell, rnn), x, rnn.hidden_size, edits, lstm, start, state)[0]
        else:
            x = _fused_from(rnn, x, state)
        out[f"layers.{i}.h"] = torch.cat([tiled(plain[f"layers.{i}.h"][:, :start]).to(device), x], dim=1)
    if set(HEAD) & set(names):
        from seqviz.models.recurrent import next_token_loss

        logits = model.head(x)  # [R * B, T - start, V]
        ids, mask = out["tokens"].to(device), out["mask"].to(device)
        out["logits"] = torch.cat([tiled(plain["logits"][:, :start]).to(device), logits], dim=1)
        out["loss"] = torch.cat([tiled(plain["loss"][:, :start]).to(device),
                                 next_token_loss(logits, ids[:, start:], mask[:, start:])], dim=1)
    return [Trace({k: out[k][r * block:(r + 1) * block] for k in names}, plain.token_strings) for r in range(rows)]


def _state_before(plain: Trace, layer: int, start: int, lstm: bool, tiled, device):
    """The state after step start - 1 of one layer, as ``plain`` holds it ((h, c) [R * B, H]; c None but for an
    LSTM), or None at step 0 (zeros)."""
    if start == 0:
        return None
    h = tiled(plain[f"layers.{layer}.h"][:, start - 1]).to(device)
    return h, tiled(plain[f"layers.{layer}.c"][:, start - 1]).to(device) if lstm else None


def _fused_from(rnn, x: torch.Tensor, state) -> torch.Tensor:
    """h [B, T, H] of an unedited layer from its input and the state before its first step (None: zeros), as
    ``recurrent._layer_output`` runs it: the fused kernel, or a minimal cell's ``cell_scan``, where the state
    before enters as a_0 h_{-1} added to b_0."""
    from seqviz.models.minimal import MinimalCell
    from seqviz.models.recurrent import _layer_output, cell_scan

    if state is None:
        return _layer_output(rnn, x)
    h0, c0 = state
    if isinstance(rnn, MinimalCell):
        log_a, log_b = rnn.coefficients(x)
        a, b = log_a.exp(), log_b.exp()
        b[:, 0] += a[:, 0] * h0
        return cell_scan(a, b)
    return rnn(x, (h0[None].contiguous(), c0[None].contiguous()) if c0 is not None else h0[None].contiguous())[0]


def _tiled(model, plain: Trace, edit_sets: Sequence[list[Edit]], names: Sequence[str]) -> list[Trace]:
    """``edited_traces`` of a family that edits inside its own trace (a transformers Mamba, any family whose model
    takes ``trace(..., edits=)``): the inputs tiled
    once per edit set and traced once, each state's edits applied to their own rows (``Rows``)."""
    if not edit_sets:
        raise ValueError("edited_traces needs edit sets")
    rows, block = len(edit_sets), plain["tokens"].shape[0]
    targets = sorted({name for s in edit_sets for name, _fn in s})
    edits = [(name, Rows([[fn for n, fn in s if n == name] for s in edit_sets], block, name.split(".", 2)[2]))
             for name in targets]
    tiled = model.trace(plain["tokens"].repeat(rows, 1), names=list(names), mask=plain["mask"].repeat(rows, 1),
                        edits=edits)
    return [Trace({k: tiled[k][r * block:(r + 1) * block] for k in names}, plain.token_strings) for r in range(rows)]
