"""No import circles inside ``seqviz/``, counting imports made inside functions.

A lazy import hides a circle from Python but not from a reader: the two modules still need each
other. Every ``import``/``from ... import`` of a seqviz module anywhere in a file is an edge
(``from seqviz.x import y`` is ``seqviz.x.y`` when that is a module, else ``seqviz.x``); the
graph must have no cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "seqviz"

# The one known circle, kept until seqviz/word2vec/formats.py (whose parser is being rewritten, so it
# is not edited meanwhile) stops importing WordVectors from vectors.py: WordVectors.from_pretrained and
# save_pretrained still reach formats.py's readers and writer.
KNOWN = {("seqviz.word2vec.vectors", "seqviz.word2vec.formats")}


def module_name(path: Path, root: Path = PACKAGE) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, modules: set[str], root: Path = PACKAGE) -> set[str]:
    """The seqviz modules a file imports, anywhere in it."""
    here = module_name(path, root)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from . import x, from ..y import z
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
    return {m for m in found if m in modules and m != here}


def import_graph() -> dict[str, set[str]]:
    files = sorted(PACKAGE.rglob("*.py"))
    modules = {module_name(p) for p in files}
    return {module_name(p): imports_of(p, modules) for p in files}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One shortest cycle through each strongly connected group of modules (Tarjan), as a -> ... -> a."""
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(group)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [_shortest_cycle(graph, group) for group in groups]


def _shortest_cycle(graph, group: set[str]) -> list[str]:
    start = min(group)
    paths, seen = [[start]], {start}
    while paths:  # breadth first, inside the group, back to start
        path = paths.pop(0)
        for w in sorted(graph[path[-1]] & group):
            if w == start:
                return path + [start]
            if w not in seen:
                seen.add(w)
                paths.append(path + [w])
    raise AssertionError(group)


def test_seqviz_has_no_import_cycle():
    graph = import_graph()
    for a, b in KNOWN:
        assert b in graph[a], f"{a} no longer imports {b}: delete that exception from KNOWN"
        graph[a] = graph[a] - {b}
    found = cycles(graph)
    assert not found, "import cycles:\n" + "\n".join(" -> ".join(c) for c in found)


def test_the_cycle_finder_finds_a_lazy_import(tmp_path):
    graph = {"seqviz.a": {"seqviz.b"}, "seqviz.b": {"seqviz.c"}, "seqviz.c": {"seqviz.a"}, "seqviz.d": {"seqviz.a"}}
    assert cycles(graph) == [["seqviz.a", "seqviz.b", "seqviz.c", "seqviz.a"]]
    (tmp_path / "seqviz").mkdir()
    source = "import os\nfrom seqviz.b import thing\n\ndef f():\n    from . import c\n    import seqviz.d\n"
    (tmp_path / "seqviz" / "a.py").write_text(source)
    modules = {"seqviz", "seqviz.a", "seqviz.b", "seqviz.c", "seqviz.d"}
    found = imports_of(tmp_path / "seqviz" / "a.py", modules, root=tmp_path / "seqviz")
    assert found == {"seqviz.b", "seqviz.c", "seqviz.d"}
