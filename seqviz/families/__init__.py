"""The one table of recurrent families: everything a page or a view needs to know about RNN, GRU, LSTM, minGRU,
minLSTM, Mamba, Mamba-2 (and whatever registers next), so that none of them asks which model it holds.

Every family is one ``Family`` entry, written in the family's own module (``classic``, ``mamba``) and listed in
``MODULES``; ``of(config)`` finds a model's entry (``config.cell``, and ``config.heads`` for Mamba-2), ``register``
adds one (a test's toy family, a plug-in). Plain data, importable without torch: a page reads it before any
model loads. Strings marked ``N_`` are msgids; call ``_()`` on them where they are shown.

What an entry says (all of it read by views and pages through the entry, never through the name):

* its trace: the leaves each layer holds (``layers.{i}.<leaf>``), the signals a heat map offers, which are gates;
* its memory: the state a retention gate keeps (``memory``: c, h or s), the gate (``retention``: forget, update,
  decay) and the letter captions print (``symbol``: f, z, Ā), with a sentence on its convention;
* its recurrence in gated linear form where it has one, s_t = a_t ⊙ s_(t−1) + b_t (``linear``: which traced
  signals are a, b and the state; "Memory as attention" unrolls it);
* the word for a unit ("unit", "channel"), the states edits may target and how wide each is;
* ``has``: what the family offers (a memory to rank, W_hh, a tanh recurrence, ...), and ``why_not(need)``:
  the family's own sentence for what it lacks, which a page shows instead of a view that does not apply.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from types import MappingProxyType

from seqviz.text import N_, _

# What a view or a page may need of a family (``Family.has``), as its sentence says it:
NEEDS = {
    "memory": N_("a retention gate whose running product ranks units by how long they keep their state"),
    "retention_bias": N_("a bias of its own on the retention gate"),
    "recurrent_weights": N_("a recurrent weight matrix W_hh"),
    "tanh_recurrence": N_("a tanh recurrence h_t = tanh(W_hh h_(t−1) + W_xh x_t + b)"),
    "weight_groups": N_("gate weights stacked in PyTorch's layout"),
    "cell_path": N_("a cell state c beside h"),
    "written_jacobians": N_("seqviz's written-out backward step"),
    "linear_form": N_("a gated linear recurrence s_t = a_t ⊙ s_(t−1) + b_t"),
}
LACKS = N_("This view needs {what}, which a {title} does not have.")
STAND_IN = N_("{picked} has no {what}: this tab shows {used}. Pick another checkpoint in the sidebar to change it.")


def stand_in_note(picked: str, used: str, need: str) -> str:
    """What a tab says when it draws checkpoint ``used`` instead of the sidebar's ``picked``, which lacks
    ``need`` (one of ``NEEDS``)."""
    return _(STAND_IN).format(picked=picked, what=_(NEEDS[need]), used=used)
# Signals' squashing functions: a gate's range on every chart (a family's ``unbounded`` overrides).
SQUASH = {"input": "sigmoid", "forget": "sigmoid", "output": "sigmoid", "reset": "sigmoid", "update": "sigmoid",
          "cell": "tanh", "new": "tanh", "h": "tanh", "decay": "exp"}


@dataclass(frozen=True)
class Linear:
    """A family's recurrence in gated linear form, s_t = a_t ⊙ s_(t−1) + b_t, by traced names of one layer.

    ``decay`` is the trace leaf holding a_t; ``write`` is b_t, either a leaf or a product of leaves (the LSTM's
    i_t ⊙ g̃_t: ``("gates.input", "gates.cell")``), or "complement" products (GRU's (1 − z_t) ⊙ n_t: a leading
    ``"1-"`` on a leaf); ``state`` is s_t's leaf. Families whose write is not a product of traced leaves (Mamba's
    Δ_t·B_t·x_t summed over states) name a function ``"module:function"`` (``trace, layer -> (a, b, s)``)."""

    decay: str = ""
    write: tuple[str, ...] = ()
    state: str = ""
    function: str = ""  # "module:function": (model, ids [1, T], layer) -> ``introspect.implicit.Parts``
    edit: str = ""  # the trace edit that reaches s_t (``layers.{i}.<edit>``): ``state`` unless it says


@dataclass(frozen=True)
class Family:
    """One recurrent family: what its trace holds, what its memory is, what it offers and why not."""

    name: str  # config.cell: "lstm", "mamba" ... (Mamba-2's config.cell is "mamba"; ``of`` tells them apart)
    title: str  # how a title or a card writes it (a name, the same in every language)
    description: str  # msgid: one line, as the zoo and ``seqviz inspect`` say it
    leaves: tuple[str, ...]  # trace leaves of each layer (``layers.{i}.<leaf>``), in order
    signals: tuple[str, ...]  # what a heat map of it offers: the gates first, then the states
    on_request: tuple[str, ...] = ()  # leaves a trace holds only when named (a Mamba's [T, D, N] decay and state)
    gates: tuple[str, ...] = ()  # its gates, in its weight order (PyTorch's, or the projection's rows)
    mean_signals: tuple[str, ...] = ("h",)  # drawn per token under the text (bounded ones: one 0-1 axis)
    unbounded: tuple[str, ...] = ()  # signals SQUASH would bound but this family does not
    memory: str = "h"  # the state its retention keeps: c (LSTM), s (Mamba's slowest state), h otherwise
    retention: str | None = None  # the gate that multiplies the old state (None: a plain RNN)
    symbol: str = ""  # the retention's letter in captions: f, z, Ā
    retention_note: str = ""  # msgid: its convention, after the memory tab's caption ("" if none)
    unit: str = "unit"  # msgid: what one of its units is called ("unit", "channel")
    edit_states: tuple[str, ...] = ("h",)  # states an edit may target, the first one by default
    same_units: tuple[str, ...] = ()  # other states whose unit i is the memory's unit i (an LSTM's h and c)
    state_widths: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))  # leaf -> config field
    weight_groups: int = 0  # gate blocks stacked in its weights (RNN 1, GRU 3, LSTM 4); 0: not PyTorch's layout
    # the bias-shift what-if: (the layer's bias attribute, the retention's block in it, blocks), e.g. an nn.LSTM's
    # ("bias_hh_l0", 1, 4) for (i, f, g, o); None where the retention has no bias of its own
    retention_chunk: tuple[str, int, int] | None = None
    linear: Linear | None = None  # its recurrence as s_t = a_t ⊙ s_(t−1) + b_t (None: a tanh RNN has none)
    has: frozenset = frozenset()  # of NEEDS: what it offers
    why: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))  # need -> msgid, why it lacks it
    carried: str = "h"  # what its recurrence carries from step to step: the gradient page's ∂L_t/∂(·)_k
    gradient_note: str = ""  # msgid: what the gradient page's h_k is for it, where that is not h
    gradients: str = ""  # "module": its gradient_matrix/connectivity (autograd), "" for the written-out Jacobians
    loader: str = "recurrent_lm"  # seqviz.registry format that opens it
    colour: str = "#444444"  # its colour where families are compared
    colours: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))  # its own signals' colours

    def applies(self, need: str) -> bool:
        """Whether the family offers ``need`` (one of ``NEEDS``)."""
        if need not in NEEDS:
            raise KeyError(f"no need {need!r}; needs are {', '.join(NEEDS)}")
        return need in self.has

    def why_not(self, need: str, **values) -> str | None:
        """The family's own sentence for a ``need`` it lacks, translated, or None where it has it. ``values`` fill
        its placeholders (a Mamba's parameter count: ``n``); the generic sentence names the need and the family."""
        if self.applies(need):
            return None
        text = _(self.why.get(need, LACKS))
        try:
            return text.format(**{"what": _(NEEDS[need]), "title": self.title, **values})
        except (KeyError, IndexError, ValueError):  # a placeholder the caller did not fill: the sentence as written
            return text

    def kept_by(self) -> str:
        """The retention gate's signal name (forget, update, decay); ValueError with the family's sentence where
        it has none (a plain RNN)."""
        if self.retention is None:
            raise ValueError(self.why_not("memory"))
        return self.retention

    def ranks(self, state: str | None = None) -> bool:
        """Whether units of ``state`` (None: the memory) can be picked by how long the memory keeps them: the
        family has a memory, and the state's unit i is the memory's unit i (an LSTM's h; not a Mamba's h, whose
        units are the residual stream's, not its channels)."""
        return self.applies("memory") and (state or self.memory) in (self.memory, *self.same_units)

    def squash(self, signal: str) -> str | None:
        """How ``signal`` is bounded: "sigmoid", "tanh", "exp" (in (0, 1)) or None (unbounded)."""
        return None if signal in self.unbounded else SQUASH.get(signal)

    def state_width(self, config, leaf: str) -> int:
        """Units of the state ``leaf`` in a model of ``config``: the hidden size unless the entry says."""
        return int(getattr(config, self.state_widths.get(leaf, "d_hidden")))

    def layer_names(self, n_layers: int) -> list[str]:
        """Every per-layer trace name of a model of this family with ``n_layers`` layers, in order."""
        return [f"layers.{i}.{leaf}" for i in range(n_layers) for leaf in self.leaves]


# The shipped families' own modules, in name order: every module of this package (a new family is one more file
# here, listed by nothing else)
MODULES = tuple(f"{__name__}.{m.name}" for m in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name)
                if not m.name.startswith("_"))
_TABLE: dict[str, Family] = {}
_loaded = False


def register(family: Family) -> Family:
    """Add ``family`` to the table (replacing one of the same name) and return it: a family's module writes
    ``LSTM = register(Family(...))``; a test registers a toy family and ``unregister``s it."""
    _TABLE[family.name] = family
    return family


def unregister(name: str) -> None:
    """Remove a family (a test's toy family, when the test ends)."""
    _TABLE.pop(name, None)


def table() -> dict[str, Family]:
    """Every registered family by name: the shipped ones first, in ``MODULES`` order (whichever module a process
    happened to import first), then those registered at run time."""
    global _loaded
    if not _loaded:
        _loaded = True
        shipped = [entry for module in MODULES for entry in vars(importlib.import_module(module)).values()
                   if isinstance(entry, Family) and _TABLE.get(entry.name) is entry]
        rest = [entry for entry in _TABLE.values() if entry not in shipped]
        _TABLE.clear()
        _TABLE.update({entry.name: entry for entry in shipped + rest})
    return _TABLE


def get(name: str) -> Family:
    """The family named ``name``; KeyError naming the known ones."""
    families = table()
    if name not in families:
        raise KeyError(f"no recurrent family {name!r}; seqviz knows {', '.join(families)}")
    return families[name]


def of(config) -> Family:
    """The family of a recurrent LM (its config, or the model itself): ``config.family`` where the config
    tells variants of one cell apart (Mamba-2's is "mamba2"), else ``config.cell``."""
    config = getattr(config, "config", config)
    return get(getattr(config, "family", None) or config.cell)
