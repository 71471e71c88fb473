"""Every view declared once, beside its function: ``@declare(...)`` records what every consumer reads of it.

pytest's fixtures and click's commands are the pattern: the function carries its metadata, the framework
enumerates. A view's declaration holds its version (the key of its shipped results: a chart whose shape changes
bumps it, and ``seqviz precompute`` recomputes that view only), its defaults (its signature's), the model it
reads (a ``seqviz.registry`` model type) and the family needs it has (``seqviz.families.NEEDS``: where a family
lacks one, ``why_not`` is the family's own sentence), its facts as a ``TypedDict`` (the names captions and lesson
templates may quote: a lesson quoting another is refused when the lessons load), the choices its shipped results
cover (``ships``) and its ``seqviz figure`` name and options (``Figure``). Pages, lesson steps, ``seqviz figure``,
``seqviz precompute`` and the HTML export all call the declared function itself; ``views()`` lists them.

Importing this module, like the view modules, costs neither torch nor Altair.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import NotRequired, TypedDict, get_origin, get_type_hints

from typing_extensions import NoExtraItems

# The view modules, in the order ``views()`` lists their views (each registers its views when imported).
MODULES = ("seqviz.views.language", "seqviz.views.trajectories", "seqviz.views.gates", "seqviz.views.implicit",
           "seqviz.views.gradients", "seqviz.views.exposure", "seqviz.views.interventions", "seqviz.views.attention", "seqviz.views.decoding",
           "seqviz.views.pairs", "seqviz.views.word2vec")
TEXT_KINDS = ("text", "ids", "texts", "words")  # how a figure's or a lesson's text becomes the view's first choice


class NoFacts(TypedDict):
    """The facts of a view whose captions quote nothing of it."""


@dataclass(frozen=True)
class Figure:
    """How ``seqviz figure NAME`` draws a view: its text (``text`` kind of ``TEXT_KINDS``: the string, its token ids,
    several texts' ids split at '---' lines, words to label), the options the command line names (option ->
    the view's choice; a choice's default is the view's own unless ``defaults`` says), the facts its footnote
    quotes (label -> a template over the facts: ``{"perplexity": "{perplexity:.2f}"}``) and the text it draws
    when given none."""

    name: str  # the figure's name on the command line (a page's name)
    text: str = "text"  # one of TEXT_KINDS
    choice: str = "text"  # the view's choice the text goes to
    options: Mapping[str, str] = field(default_factory=dict)  # command-line option -> the view's choice
    defaults: Mapping[str, object] = field(default_factory=dict)  # option -> the figure's default, where not the view's
    quotes: Mapping[str, str] = field(default_factory=dict)  # footnote label -> a template over the view's facts
    default_text: str | None = None  # None: seqviz.figures.HAMLET; "held-out": the checkpoint's first held-out pair
    required: tuple[str, ...] = ()  # options the figure cannot draw without (a reference translation)
    compared: str = ""  # the choice that takes ((name, model),) of the figure's own model (a comparison's legend)


@dataclass(frozen=True)
class Declared:
    """One view as declared: the function and everything a consumer reads of it."""

    fn: Callable
    version: int = 1  # bumped when the chart's shape changes: shipped results of another version are not read
    model: str | None = "recurrent_lm"  # the seqviz.registry model type it reads (None: no model, or data only)
    needs: tuple[str, ...] = ()  # of seqviz.families.NEEDS: a family lacking one does not get this view
    facts: type | None = None  # a TypedDict of the facts it returns (None: not declared yet)
    ships: Callable | None = None  # (model, peers, folder) -> [choices]: what its shipped results cover
    figure: Figure | None = None  # its `seqviz figure` entry

    @property
    def name(self) -> str:
        """The view's name: its module (under seqviz.views) and function, ``gates.heat_map``."""
        return f"{self.fn.__module__.removeprefix('seqviz.views.')}.{self.fn.__qualname__}"

    @property
    def key(self) -> str:
        """The name its shipped results are kept under: the qualified function, ``@version`` from 2 on."""
        return f"{self.fn.__module__}.{self.fn.__qualname__}" + (f"@{self.version}" if self.version != 1 else "")

    @property
    def defaults(self) -> dict:
        """Every choice with a default, as the signature gives it (after the model)."""
        params = list(inspect.signature(self.fn).parameters.values())[1:]
        return {p.name: p.default for p in params if p.default is not inspect.Parameter.empty}

    @property
    def choices(self) -> tuple[str, ...]:
        """Every choice the view takes (after the model), in order."""
        return tuple(list(inspect.signature(self.fn).parameters)[1:])

    def fact_names(self) -> frozenset[str] | None:
        """The facts it declares (None: undeclared)."""
        return None if self.facts is None else frozenset(get_type_hints(self.facts))

    def check(self, facts: Mapping) -> None:
        """ValueError unless ``facts`` (what the view returned) hold every fact its type requires and none it does not
        name (a type with ``extra_items``, PEP 728, takes others: a family's own signals)."""
        if self.facts is None:
            raise ValueError(f"{self.name} declares no facts")
        required, optional = fact_keys(self.facts)
        missing = sorted(required - set(facts))
        closed = getattr(self.facts, "__extra_items__", NoExtraItems) is NoExtraItems
        unknown = sorted(set(facts) - required - optional) if closed else []
        if missing or unknown:
            raise ValueError(f"{self.name} returned facts its {self.facts.__name__} does not describe: "
                             + "; ".join(f"{what} {', '.join(keys)}" for what, keys in (("missing", missing),
                                                                                      ("not declared", unknown)) if keys))

    def applies(self, family) -> bool:
        """Whether the view applies to a model of ``family`` (a ``seqviz.families.Family``)."""
        return all(family.applies(need) for need in self.needs)

    def why_not(self, family) -> str | None:
        """The family's own sentence for the first need it lacks, or None where the view applies."""
        return next((family.why_not(need) for need in self.needs if not family.applies(need)), None)


def fact_keys(facts: type) -> tuple[frozenset[str], frozenset[str]]:
    """(required, optional) keys of a facts ``TypedDict``: its ``NotRequired[...]`` fields read from its hints (under
    ``from __future__ import annotations`` Python 3.11 cannot see them when the class is made), ``total=False``."""
    hints = get_type_hints(facts, include_extras=True)
    optional = set(facts.__optional_keys__) | {k for k, v in hints.items() if get_origin(v) is NotRequired}
    return frozenset(hints) - optional, frozenset(optional)


_VIEWS: dict[Callable, Declared] = {}
_loaded = False


def declare(*, version: int = 1, model: str | None = "recurrent_lm", needs: tuple[str, ...] = (),
            facts: type | None = None, ships: Callable | None = None, figure: Figure | None = None):
    """Register the decorated view function with its declaration (``fn.declared``); the function is returned as is."""
    if figure is not None and figure.text not in TEXT_KINDS:
        raise ValueError(f"a figure's text is one of {', '.join(TEXT_KINDS)}, not {figure.text!r}")

    def mark(fn):
        if fn in _VIEWS:
            raise ValueError(f"{fn.__qualname__} is declared twice")
        fn.declared = _VIEWS[fn] = Declared(fn, version, model, tuple(needs), facts, ships, figure)
        return fn
    return mark


def declared(fn) -> Declared:
    """The declaration of view ``fn``; ValueError for a function that is not a declared view."""
    found = getattr(fn, "declared", None)
    if found is None:
        raise ValueError(f"{getattr(fn, '__qualname__', fn)!r} is not a declared view (seqviz.views.registry.declare)")
    return found


def views() -> tuple[Declared, ...]:
    """Every declared view, module by module in ``MODULES`` order (the modules imported on first call)."""
    global _loaded
    if not _loaded:
        for module in MODULES:
            importlib.import_module(module)
        _loaded = True
    return tuple(_VIEWS.values())


def named(name: str) -> Declared:
    """The view called ``name`` (``gates.heat_map``); ValueError naming the known ones."""
    found = {d.name: d for d in views()}
    if name not in found:
        raise ValueError(f"no view {name!r}; known: {', '.join(sorted(found))}")
    return found[name]


def figures() -> Mapping[str, Declared]:
    """Every view with a ``seqviz figure`` entry, by its figure name."""
    return MappingProxyType({d.figure.name: d for d in views() if d.figure is not None})


def shipped_with(model_type: str, family=None) -> list[Declared]:
    """The views whose results a checkpoint of ``model_type`` (of ``family``, a recurrent one) ships."""
    return [d for d in views() if d.ships is not None and d.model == model_type
            and (family is None or d.applies(family))]
