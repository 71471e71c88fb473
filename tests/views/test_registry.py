"""The view registry: every view a page, a lesson step, ``seqviz figure`` and ``seqviz precompute`` use is the one
declared function (``seqviz.views.registry``), and what a declaration says holds of the function."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from seqviz.lessons import lessons
from seqviz.views import registry

ROOT = Path(__file__).resolve().parents[2]
CALLS = {"view", "view_of_path", "view_of_data"}  # appkit.models' one cache: the calls that draw a view


def page_views(path: Path) -> list[tuple[str, object]]:
    """(the call as written, the function object) of every view a page draws through the cache, resolved through
    the page's own imports (``from seqviz.views import gates as views`` ... ``cm.view(views.heat_map, ...)``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("seqviz.views"):
            for alias in node.names:
                name = f"{node.module}.{alias.name}"
                try:
                    modules[alias.asname or alias.name] = importlib.import_module(name)
                except ModuleNotFoundError:  # a function imported by name
                    modules[alias.asname or alias.name] = getattr(importlib.import_module(node.module), alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("seqviz.views") and alias.asname:
                    modules[alias.asname] = importlib.import_module(alias.name)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args:
            called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            first = node.args[0]
            if called in CALLS and isinstance(first, ast.Attribute) and isinstance(first.value, ast.Name) \
                    and first.value.id in modules:
                found.append((ast.unparse(first), getattr(modules[first.value.id], first.attr)))
            elif called in CALLS and isinstance(first, ast.Name) and first.id in modules:
                found.append((first.id, modules[first.id]))
    return found


def declared_functions() -> set:
    return {d.fn for d in registry.views()}


def test_names_are_unique_and_each_function_declared_once():
    names = [d.name for d in registry.views()]
    assert len(names) == len(set(names))
    assert all(d.fn.declared is d for d in registry.views())
    with pytest.raises(ValueError, match="declared twice"):
        registry.declare()(registry.views()[0].fn)


@pytest.mark.parametrize("page", sorted((ROOT / "pages").glob("*.py")), ids=lambda p: p.stem)
def test_each_view_a_page_draws_is_the_declared_function(page):
    for written, fn in page_views(page):
        assert fn in declared_functions(), f"{page.name}: {written} is not a declared view"


def test_the_pages_draw_through_the_registry():
    drawn = {fn for page in (ROOT / "pages").glob("*.py") for _, fn in page_views(page)}
    assert len(drawn) >= 50  # the walk above sees the pages' views (not an empty match)


def test_each_figure_is_a_declared_view_of_its_model_type():
    from seqviz import figures

    for name, d in registry.figures().items():
        assert d.fn in declared_functions() and figures.declared_figure(name) is d
        assert d.model in ("recurrent_lm", "seq2seq", "word2vec")
        assert set(d.figure.options.values()) <= set(d.choices), name  # every option is one of the view's choices
        assert d.figure.choice in d.choices, name


def test_each_lesson_step_names_a_declared_view_or_an_adapter():
    from seqviz.lessons.load import VIEW_NAMES

    for lesson in lessons().values():
        for step in lesson.steps:
            if step.view in VIEW_NAMES:
                continue  # an adapter of seqviz.lessons.views, not yet a declared view
            d = registry.named(step.view)
            assert d.fn in declared_functions()
            assert step.choice in d.choices, (lesson.id, step.title)


def test_precompute_ships_declared_views_only():
    for d in registry.views():
        if d.ships is not None:
            assert d.model in ("recurrent_lm", "seq2seq"), d.name  # a results.json of that model type holds them


def test_needs_are_the_family_tables():
    from seqviz.families import NEEDS, get

    for d in registry.views():
        assert set(d.needs) <= set(NEEDS), d.name
    rnn, lstm = get("rnn"), get("lstm")
    memory = registry.declared(importlib.import_module("seqviz.views.gates").memory_product)
    assert memory.applies(lstm) and not memory.applies(rnn) and memory.why_not(rnn) == rnn.why_not("memory")


def test_facts_declared_are_typed_records():
    for d in registry.views():
        if d.facts is not None:
            assert d.fact_names() or d.facts is registry.NoFacts, d.name  # NoFacts: its captions quote nothing
