"""The house rules of the code base that a reader relies on: checked, not just written down."""

import ast
import sys
from pathlib import Path

from conftest import REPO

HEART = REPO / "workflow" / "heart"


def _module_name(path: Path) -> str:
    return ".".join(("heart", *path.relative_to(HEART).with_suffix("").parts)).removesuffix(".__init__")


def heart_imports() -> dict[str, set[str]]:
    """Module -> the heart modules it imports (at the top or inside a function alike)."""
    modules = {_module_name(p): p for p in HEART.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("heart"):
                named = {f"{node.module}.{a.name}" for a in node.names}
                deps |= (named & modules.keys()) or {node.module}
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names if a.name.startswith("heart.")}
        graph[name] = (deps & modules.keys()) - {name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(node, path):
        state[node] = 1
        for dep in sorted(graph[node]):
            if state.get(dep) == 1:
                return path[path.index(dep):] + [dep]
            if dep not in state and (cycle := visit(dep, path + [dep])):
                return cycle
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node, [node])):
            return cycle
    return None


def test_no_import_cycle_in_heart():
    graph = heart_imports()
    assert {"heart.atomic", "heart.tableio", "heart.provenance", "heart.llm"} <= graph.keys()
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph))


def test_the_cycle_finder_finds_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_leaf_helpers_import_nothing_of_the_package():
    assert heart_imports()["heart.atomic"] == set()


def test_no_module_shadows_the_standard_library():
    top = {p.stem for p in HEART.glob("*.py") if p.stem != "__init__"} | {p.parent.name for p in HEART.glob("*/__init__.py")}
    assert {"tableio", "figures"} <= top
    shadowing = top & set(sys.stdlib_module_names)
    assert not shadowing, shadowing


def test_scripts_import_heart_without_touching_sys_path():
    for script in sorted((REPO / "workflow" / "scripts").glob("*.py")):
        assert "sys.path" not in script.read_text(), script.name
