"""Every name a benchmark imports exists: a benchmark runs rarely, so a module moved under it (appkit.memory became
seqviz.background) would otherwise be found only by the next person who measures."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((ROOT / "benchmarks").glob("*.py"))
OPTIONAL = {"playwright"}  # the browser benchmarks' driver: a dev requirement, present where they run


def imports(script: Path) -> list[tuple[str, str | None]]:
    """(module, name or None) of every absolute import in ``script``, at any depth (most are inside functions)."""
    found = []
    for node in ast.walk(ast.parse(script.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found += [(node.module, alias.name) for alias in node.names]
    return found


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.stem for s in SCRIPTS])
def test_every_name_a_benchmark_imports_exists(script):
    for module, name in imports(script):
        if module.split(".")[0] in OPTIONAL:
            continue
        found = importlib.import_module(module)
        if name is not None and name != "*":
            assert hasattr(found, name) or importlib.util.find_spec(f"{module}.{name}") is not None, \
                f"{script.name}: {module} has no {name}"


def test_the_check_sees_imports_inside_functions(tmp_path):
    script = tmp_path / "bench.py"
    script.write_text("def main():\n    from appkit.memory import release_freed_memory\n", encoding="utf-8")
    assert imports(script) == [("appkit.memory", "release_freed_memory")]
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("appkit.memory")
