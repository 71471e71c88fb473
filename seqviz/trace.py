"""The Trace: a read-only mapping from stable names to CPU tensors, and the name list."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import torch

# Per-token scalars have shape [batch, time]; everything else [batch, time, units].
COMMON_NAMES = ("tokens", "mask", "embed")
HEAD_NAMES = ("logits", "loss")
LAYER_NAMES = {
    "rnn": ("h", "preact"),
    "gru": ("h", "gates.reset", "gates.update", "gates.new"),
    "lstm": ("h", "c", "gates.input", "gates.forget", "gates.cell", "gates.output"),
}
GATE_NAMES = {
    "rnn": (),
    "gru": ("reset", "update", "new"),
    "lstm": ("input", "forget", "cell", "output"),
}


def trace_names(cell: str, n_layers: int) -> list[str]:
    """Every name a trace of a recurrent LM with this cell and depth holds, in order."""
    names = list(COMMON_NAMES)
    for i in range(n_layers):
        names += [f"layers.{i}.{leaf}" for leaf in LAYER_NAMES[cell]]
    return names + list(HEAD_NAMES)


class Trace(Mapping):
    """Named tensors of one model run. Read-only; tensors are detached CPU copies.

    ``texts`` holds the token strings per batch row (``None`` when the run started
    from ids without a tokenizer), so a view can label positions without the model.
    """

    def __init__(self, tensors: dict[str, torch.Tensor], tokens: list[list[str]] | None = None):
        self._tensors = {k: v.detach().to("cpu") for k, v in tensors.items()}
        self.token_strings = tokens

    def __getitem__(self, name: str) -> torch.Tensor:
        try:
            return self._tensors[name]
        except KeyError:
            raise KeyError(f"no {name!r} in this trace; it has: {', '.join(self._tensors)}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._tensors)

    def __len__(self) -> int:
        return len(self._tensors)

    def __repr__(self) -> str:
        shapes = ", ".join(f"{k}: {tuple(v.shape)}" for k, v in self._tensors.items())
        return f"Trace({shapes})"

    def lengths(self) -> torch.Tensor:
        """Valid length of each batch row, from the mask."""
        return self["mask"].sum(dim=1)
