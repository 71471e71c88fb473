"""Edits of a recurrent state in the middle of a run: ``model.trace(inputs, edits=[(name, fn), ...])``.

TransformerLens's ``run_with_hooks(fwd_hooks=[(name, fn)])`` for recurrences: ``name`` is a state of the
trace (``layers.{i}.h``; ``layers.{i}.c`` for an LSTM) and ``fn(state, t) -> state`` (state [B, H]) is
applied right after step t computes that state, before it feeds step t + 1 and the layer above, so
everything downstream in time and depth is recomputed (``stepped_layer``). Editing an
LSTM's c_t changes c_{t+1} onwards; h_t = o_t tanh(c_t) was already computed from the unedited c_t.

The ready-made edits (ablate, clamp, patch) each set chosen units to given values over a span of
steps and return the ``(name, fn)`` pair the trace takes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

Edit = tuple[str, Callable[[torch.Tensor, int], torch.Tensor]]


def state_names(cell: str, n_layers: int, leaves: Sequence[str] | None = None) -> list[str]:
    """The names an edit may target: every layer's h, and an LSTM's c (the states a step hands on); a Mamba
    block's output h [B, H], its channels' slowest states s [B, D] and its whole state [B, D, N]; ``leaves``
    where a family's module says them (its entry's ``edit_states``)."""
    if leaves is None:
        leaves = ("h", "c") if cell == "lstm" else ("h", "s", "state") if cell == "mamba" else ("h",)
    return [f"layers.{i}.{leaf}" for i in range(n_layers) for leaf in leaves]


def by_layer(edits, cell: str, n_layers: int, leaves: Sequence[str] | None = None) -> dict[int, dict[str, list]]:
    """``edits`` checked and grouped: layer -> leaf ("h" / "c" ...) -> the functions in the order given."""
    allowed = state_names(cell, n_layers, leaves)
    grouped: dict[int, dict[str, list]] = {}
    for item in edits or ():
        if not (isinstance(item, tuple | list) and len(item) == 2):
            raise ValueError("an edit is a pair (name, fn); got " + repr(item)[:60])
        name, fn = item
        if name not in allowed:
            raise ValueError(f"no state {name!r} to edit; this model's states are: {', '.join(allowed)}")
        if not callable(fn):
            raise ValueError(f"the edit of {name} is not a function fn(state, t) -> state")
        layer, leaf = int(name.split(".")[1]), name.split(".", 2)[2]
        grouped.setdefault(layer, {}).setdefault(leaf, []).append(fn)
    return grouped


def stepped_layer(step, x: torch.Tensor, width: int, edits: dict[str, list], lstm: bool = False, start: int = 0,
                  state: tuple | None = None):
    """(h, c) [B, T, H] of one layer run one step at a time through its plain cell ``step`` (x [B, In], state)
    -> state (``recurrent.layer_step``), each edit applied to its state right after the step that computes
    it, so step t + 1 and the layer above read the edited state; c is None but for an LSTM. About 30 us a
    step on the 2-core CPU (H = 256), the edits included. ``x`` may hold the steps from ``start`` on, read
    from ``state`` (h, c), the state after step start - 1 (zeros: None); the edits see each step's own t."""
    h = x.new_zeros(x.shape[0], width) if state is None else state[0]
    c = (h if state is None else state[1]) if lstm else None
    on_h, on_c = edits.get("h", ()), edits.get("c", ())
    hs, cs = [], []
    for j in range(x.shape[1]):
        t = start + j
        if c is None:
            h = step(x[:, j], h)
        else:
            h, c = step(x[:, j], (h, c))
            for fn in on_c:
                c = _edited(fn, c, t, "c")
            cs.append(c)
        for fn in on_h:
            h = _edited(fn, h, t, "h")
        hs.append(h)
    return torch.stack(hs, dim=1), torch.stack(cs, dim=1) if cs else None


def _edited(fn, state: torch.Tensor, t: int, leaf: str) -> torch.Tensor:
    new = fn(state, t)
    if not isinstance(new, torch.Tensor) or new.shape != state.shape:
        raise ValueError(f"an edit of {leaf} returned {getattr(new, 'shape', type(new).__name__)} at step {t}; "
                         f"it must return the state's shape {tuple(state.shape)}")
    return new


class SetUnits:
    """fn(state, t): the chosen units of the state set to ``values`` at each step of ``span``, the rest kept.

    ``values`` is [U] (one value per chosen unit, every step) or [T', U] (row t + ``offset`` at step t:
    a patch from another text). A new tensor is returned; the state passed in is left as it was.
    """

    def __init__(self, units: Sequence[int], values: torch.Tensor, span: tuple[int, int] | None = None,
                 offset: int = 0):
        self.units = torch.as_tensor(list(units), dtype=torch.long)
        if self.units.numel() == 0:
            raise ValueError("choose at least one unit to edit")
        if int(self.units.min()) < 0:
            raise ValueError(f"units are numbered from 0; got {int(self.units.min())}")
        self.values = torch.as_tensor(values, dtype=torch.float32)
        if self.values.shape[-1] != self.units.numel() or self.values.dim() not in (1, 2):
            raise ValueError(f"{self.units.numel()} units need values [U] or [T, U]; got {tuple(self.values.shape)}")
        self.span, self.offset = _span(span), int(offset)

    def __call__(self, state: torch.Tensor, t: int) -> torch.Tensor:
        if self.span is not None and not self.span[0] <= t < self.span[1]:
            return state
        if int(self.units.max()) >= state.shape[-1]:
            raise ValueError(f"unit {int(self.units.max())} is out of range: the state has {state.shape[-1]} units")
        if self.values.dim() == 1:
            value = self.values
        elif 0 <= t + self.offset < len(self.values):
            value = self.values[t + self.offset]
        else:
            return state  # the other text has no step aligned with this one
        return state.index_copy(-1, self.units, value.to(state.dtype).expand(*state.shape[:-1], -1))


def _span(span) -> tuple[int, int] | None:
    if span is None:
        return None
    start, stop = (int(s) for s in span)
    if stop <= start or start < 0:
        raise ValueError(f"a span is (start, stop) with 0 <= start < stop; got ({start}, {stop})")
    return start, stop


def ablate(name: str, units: Sequence[int], span: tuple[int, int] | None = None,
           means: torch.Tensor | None = None) -> Edit:
    """Switch ``units`` of state ``name`` off over ``span`` (None: every step): set to 0, or to ``means``
    [H] (each unit's mean over a reference text, ``unit_means``: off without leaving its usual range)."""
    units = list(units)
    values = torch.zeros(len(units)) if means is None else torch.as_tensor(means, dtype=torch.float32)[units]
    return name, SetUnits(units, values, span)


def clamp(name: str, units: Sequence[int], value: float, span: tuple[int, int] | None = None) -> Edit:
    """Hold ``units`` of state ``name`` at ``value`` over ``span``."""
    units = list(units)
    return name, SetUnits(units, torch.full((len(units),), float(value)), span)


def patch(name: str, source, units: Sequence[int] | None = None, span: tuple[int, int] | None = None,
          offset: int = 0, row: int = 0) -> Edit:
    """Copy ``units`` (None: all) of state ``name`` from another run: at step t of ``span`` the state of
    ``source`` (a trace holding ``name``, row ``row``, or a tensor [T', H]) at step t + ``offset``."""
    states = source[name][row] if not isinstance(source, torch.Tensor) else source
    if states.dim() != 2:
        raise ValueError(f"a patch's source is [T, H]; got {tuple(states.shape)}")
    units = list(range(states.shape[1])) if units is None else list(units)
    if units and max(units) >= states.shape[1]:
        raise ValueError(f"unit {max(units)} is out of range: the source has {states.shape[1]} units")
    return name, SetUnits(units, states[:, units], span, offset)


def unit_means(trace, name: str) -> torch.Tensor:
    """Each unit's mean of state ``name`` over a trace's real tokens (its ``mask``): [H]."""
    values, mask = trace[name], trace["mask"]
    return values[mask].double().mean(0).float()
