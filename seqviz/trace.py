"""The Trace: a read-only mapping from stable names to CPU tensors, and the name lists.

Shapes (B batch rows, T tokens, H units, V vocabulary) of a recurrent LM's trace:

    tokens          [B, T]      token ids (right-padded)
    mask            [B, T]      True at real tokens
    embed           [B, T, E]   the embedding fed to layer 0
    layers.{i}.h    [B, T, H]   hidden state after each token (and .c, .gates.*, .preact by cell)
    logits          [B, T, V]   next-token logits after each token
    loss            [B, T-1]    -log p(tokens[:, t+1] | tokens[:, :t+1]) in nats; 0 where a row is padded
    loss_mask       [B, T-1]    True where ``loss`` is a real prediction (both tokens present)

``loss`` has one value per prediction (the last token predicts nothing), so for one text
``trace["loss"].mean()`` is its mean loss, and ``trace.mean_loss()`` is right for padded batches too.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import MappingProxyType

import torch

# Per-token scalars have shape [batch, time]; everything else [batch, time, units].
COMMON_NAMES = ("tokens", "mask", "embed")
HEAD_NAMES = ("logits", "loss", "loss_mask")
def trace_names(cell: str, n_layers: int) -> list[str]:
    """Every name a trace of a recurrent LM with this cell and depth holds, in order (the family table's leaves)."""
    from seqviz.families import get

    return list(COMMON_NAMES) + get(cell).layer_names(n_layers) + list(HEAD_NAMES)


def walk(model, inputs, names=None, mask=None):
    """The trace of ``inputs`` one layer at a time: a ``Trace`` per layer that has a name asked for (``tokens``,
    ``mask`` and that layer's names; the first also the embedding, the last the head's names), each computed after
    the caller has let go of the one before, so a statistic over every layer of a long text or a large model holds
    one layer at a time (a trace of every layer of mamba-130m is 40 kB a token). Together they hold exactly
    ``model.trace(inputs, names=names, mask=mask)``. A model without a ``walk`` of its own is traced one layer
    at a time (its lower layers run again for each)."""
    own = getattr(model, "walk", None)
    if own is not None:
        yield from own(inputs, names, mask)
        return
    wanted = check_names(names, model.trace_names())
    layers = sorted({int(n.split(".")[1]) for n in wanted if n.startswith("layers.")})
    groups = [[n for n in wanted if n.startswith(f"layers.{i}.")] for i in layers] or [[]]
    groups[0] += [n for n in wanted if n in COMMON_NAMES]
    groups[-1] += [n for n in wanted if n in HEAD_NAMES]
    for group in groups:
        yield model.trace(inputs, names=["tokens", "mask", *group], mask=mask)


def check_names(names, available: list[str]) -> list[str]:
    """``names`` (None: all of ``available``) in ``available``'s order; ValueError naming any unknown one."""
    if names is None:
        return list(available)
    names = [names] if isinstance(names, str) else list(names)
    unknown = [n for n in names if n not in available]
    if unknown:
        raise ValueError(f"no trace name {', '.join(map(repr, unknown[:3]))}; this model has: {', '.join(available)}")
    wanted = set(names)
    return [n for n in available if n in wanted]


def loss_mask(mask: torch.Tensor) -> torch.Tensor:
    """[B, T-1]: where a next-token loss exists (this token and the next are both real)."""
    return mask[:, 1:] & mask[:, :-1]


class Trace(Mapping):
    """Named tensors of one model run. Read-only; tensors are detached CPU copies.

    ``token_strings`` holds the token strings per batch row (``None`` when the run started
    from ids without a tokenizer), so a view can label positions without the model.
    A trace is never changed after it is made: ``replace`` returns a new one.
    """

    def __init__(self, tensors: dict[str, torch.Tensor], tokens: list[list[str]] | None = None):
        self._tensors = MappingProxyType({k: v.detach().to("cpu") for k, v in tensors.items()})
        self._tokens = None if tokens is None else tuple(tuple(row) for row in tokens)

    def __getstate__(self) -> dict:  # a mappingproxy does not pickle (st.cache_data stores traces by pickling)
        return {**self.__dict__, "_tensors": dict(self._tensors)}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update({**state, "_tensors": MappingProxyType(state["_tensors"])})

    @property
    def token_strings(self) -> list[list[str]] | None:
        return None if self._tokens is None else [list(row) for row in self._tokens]

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
        return f"{type(self).__name__}({shapes})"

    def lengths(self) -> torch.Tensor:
        """Valid length of each batch row, from the mask."""
        return self["mask"].sum(dim=1)

    def mean_loss(self) -> float:
        """Mean loss over the real predictions of every row (nats per token)."""
        loss = self["loss"]
        valid = self["loss_mask"] if "loss_mask" in self else self["target.mask"]
        return float(loss[valid].double().mean()) if bool(valid.any()) else float("nan")
