"""The house rules of the code base that a reader relies on: checked, not just written down."""

import ast
import sys
from pathlib import Path

from support import REPO

HEART = REPO / "workflow" / "heart"


def _module_name(path: Path) -> str:
    return ".".join(("heart", *path.relative_to(HEART).with_suffix("").parts)).removesuffix(".__init__")


def imports_of(path: Path, modules) -> set[str]:
    """The heart modules (of ``modules``) that the file at ``path`` imports, at the top or inside a function."""
    deps = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("heart"):
            named = {f"{node.module}.{a.name}" for a in node.names}
            deps |= (named & modules) or {node.module}
        elif isinstance(node, ast.Import):
            deps |= {a.name for a in node.names if a.name.startswith("heart.")}
    return deps & modules


def heart_imports() -> dict[str, set[str]]:
    """Module -> the heart modules it imports."""
    modules = {_module_name(p): p for p in HEART.rglob("*.py")}
    return {name: imports_of(path, modules.keys()) - {name} for name, path in modules.items()}


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


RULES = REPO / "workflow" / "rules"
#: packages that serve no rule file: the test and rehearsal support (SIMULATED data, the provider simulator)
#: and the stand-alone command-line tools
NOT_A_STAGE = {"simulation", "tools"}
#: "no module over ~500 lines": one that runs more than a tenth over says why in its docstring, in a
#: paragraph that starts "Longer than 500 lines:"
MAX_LINES = 550


def test_no_import_cycle_in_heart():
    graph = heart_imports()
    assert {"heart.common.atomic", "heart.common.tableio", "heart.common.provenance",
            "heart.llm.engine"} <= graph.keys()
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph))


def test_the_cycle_finder_finds_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_leaf_helpers_import_nothing_of_the_package():
    assert heart_imports()["heart.common.atomic"] == set()


def _package(module: str) -> str:
    return module.split(".")[1] if module.count(".") else ""


def test_every_rule_file_has_its_package_and_every_package_its_rule_file():
    """rules/<stage>.smk and heart/<stage>/ are found by the same word (common.smk: heart/common/)."""
    stages = {p.stem for p in RULES.glob("*.smk")}
    packages = {p.parent.name for p in HEART.glob("*/__init__.py")}
    assert "judging" in stages and "common" in packages
    assert stages - packages == set(), "a rule file without its package"
    assert packages - stages - NOT_A_STAGE == set(), "a package without its rule file"


def test_the_library_lives_in_its_stage_packages():
    """No module but the package's own __init__ at the top of heart/: each belongs to a stage."""
    assert [p.name for p in HEART.glob("*.py")] == ["__init__.py"]


def test_common_imports_no_stage_and_no_stage_imports_the_simulation():
    """heart.common is the ground floor (every stage may use it, it uses none); the simulation is test and
    rehearsal support, which the workflow's own code never imports."""
    graph = heart_imports()
    for module, deps in graph.items():
        if _package(module) == "common":
            assert {_package(d) for d in deps} <= {"common", ""}, (module, deps)
        if _package(module) != "simulation":
            assert not [d for d in deps if _package(d) == "simulation"], module
    modules = graph.keys()
    for script in sorted((REPO / "workflow" / "scripts").glob("*.py")):
        assert not [d for d in imports_of(script, modules) if _package(d) == "simulation"], script.name


def test_no_module_over_500_lines_without_its_reason():
    long = {}
    for path in sorted(HEART.rglob("*.py")):
        n = len(path.read_text().splitlines())
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        if n > MAX_LINES and "Longer than 500 lines:" not in doc:
            long[str(path.relative_to(HEART))] = n
    assert not long, long


def test_a_module_docstring_says_what_the_module_does_and_links_its_method_page():
    """At most 30 lines: definitions, choices and worked examples live in docs/methods/ (STYLE.md)."""
    long = {}
    for path in sorted(HEART.rglob("*.py")):
        body = ast.parse(path.read_text()).body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            n = body[0].end_lineno - body[0].lineno + 1
            if n > 30:
                long[str(path.relative_to(HEART))] = n
    assert not long, long


#: "no function over ~80 lines": its code, the docstring not counted (a public function's numpydoc Parameters,
#: Returns and Raises are its documentation, not its length to read)
MAX_FUNCTION_LINES = 80


def test_no_function_over_80_lines_of_code():
    long = {}
    for path in sorted(HEART.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                first = node.body[0]
                if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                        and isinstance(first.value.value, str)):
                    lines -= first.end_lineno - first.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long[f"{path.relative_to(HEART)}:{node.name}"] = lines
    assert not long, long


def test_no_module_shadows_the_standard_library():
    names = ({p.stem for p in HEART.rglob("*.py") if p.stem != "__init__"}
             | {p.parent.name for p in HEART.rglob("*/__init__.py")})
    assert {"tableio", "figures", "stats"} <= names
    shadowing = names & set(sys.stdlib_module_names)
    assert not shadowing, shadowing


def test_the_tests_follow_the_packages():
    """tests/<package>/test_<module>.py for the library; tests/workflow/ for whole-workflow runs and plans."""
    tests = REPO / "tests"
    packages = {p.parent.name for p in HEART.glob("*/__init__.py")}
    assert not list(tests.glob("test_*.py")), "a test file outside its package's folder"
    folders = {p.parent.relative_to(tests).as_posix() for p in tests.rglob("test_*.py")}
    assert folders - packages == {"workflow"}, folders - packages


def test_scripts_import_heart_without_touching_sys_path():
    for script in sorted((REPO / "workflow" / "scripts").glob("*.py")):
        assert "sys.path" not in script.read_text(), script.name
