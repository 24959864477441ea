"""The package's import graph, read from its own source with `ast`: no circles, and no module
imports one from a higher layer of the data flow (docs/design.md, "Layers").

Every ``import`` and ``from ... import`` counts, at module level or inside a function, relative
or absolute; an import under ``if TYPE_CHECKING:`` does not (it never runs). ``from pkg import
name`` is an import of ``pkg`` and, when ``name`` is a submodule, of ``pkg.name`` as well.
"""

from __future__ import annotations

import ast
import fnmatch
from pathlib import Path

import pytest

PKG = "pytest_agentfloor"
ROOT = Path(__file__).resolve().parent.parent / PKG

#: the layers, lowest first: a module may import its own layer and those below it, never above.
#: A module's layer is the first pattern (fnmatch on the dotted name without the package) it matches.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("foundation", ("", "config", "context", "render", "matching", "nodeids", "runinfo", "reportdir", "shard",
                    "hookspec", "junit", "progress", "kindspec", "trajectory", "report.format", "report.args", "locking", "casefiles", "versions", "masking",
                    "harness_repairs", "handoffs", "jsontext", "memo")),
    ("case data", ("suite", "suite.schema", "suite.predicates", "suite.loader", "suite.table", "suite.calibration", "protocol",
                   "sandbox", "sandbox.*", "kinds", "pressure", "pressure.cell", "pressure.catalogue",
                   "pressure.encoding", "pressure.menu", "pressure.family", "pressure.compiler", "pressure.routes",
                   "pressure.frontier", "callsite",
                   "callsite.schema", "callsite.policies")),
    ("play", ("providers", "providers.*", "local", "local.*", "episode", "probe", "capture", "capture.config", "capture.upstream",
              "capture.wire", "capture.sites", "capture.redact", "capture.store", "capture.proxy")),
    ("grading", ("grading", "grading.*", "callsite.parsers", "callsite.graders", "callsite.guard")),
    ("records", ("results",)),
    ("judge and statistics", ("judge", "judge.*", "corpus", "stats", "stats.*", "callsite.stats", "pressure.repairs",
                              "pressure.repairs.*")),
    ("reports", ("report", "report.*", "gate", "plan", "compare", "regrade", "capture.cases", "capture.review",
                 "capture.prelabel",
                 "callsite.routing")),
    ("case kinds", ("suite.kind", "callsite.kind", "callsite.tables", "pressure.kind", "pressure.tables",
                    "pressure.repair_tables",
                    "capture.replay")),
    ("pytest", ("plugin", "items", "options", "runstate", "session", "prefetch", "scope", "optionsdoc", "byo", "__main__",
                "capture.command")),
]

#: the packages of the built-in plug-in kinds (the ladder's kind class sits in suite/kind.py, over the
#: core's case data): the core, the layers up to CORE_TOP, imports none of them. What the core needs
#: of a kind's data it reads through kindspec's protocols (kindspec.EpisodePressure)
KIND_PACKAGES: tuple[str, ...] = ("callsite", "pressure")
CORE_TOP = "play"
#: core modules that still import a kind package, and why (each one is a debt, not a pattern)
KIND_IMPORTS_ALLOWED: dict[str, set[str]] = {}


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports_of(name: str, source: str, is_package: bool, modules: set[str]) -> set[str]:
    """The package modules `name` imports anywhere in `source` (TYPE_CHECKING blocks left out)."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for stmt in child.orelse:
                    visit_one(stmt)
                continue
            visit_one(child)

    def visit_one(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == PKG)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] == PKG:
                found.add(target)
                found.update(f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in modules)
        visit(node)

    visit(ast.parse(source))
    return {m for m in found if m in modules and m != name}


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    files = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    return {m: imports_of(m, p.read_text(encoding="utf-8"), p.name == "__init__.py", set(files))
            for m, p in files.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each as one concrete circle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(_circle(graph, set(comp)))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return out


def _circle(graph: dict[str, set[str]], comp: set[str]) -> list[str]:
    """A shortest path from the component's first module back to itself, for the message."""
    start = min(comp)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & comp):
                if w == start:
                    return paths[v] + [start]
                if w not in paths:
                    paths[w] = paths[v] + [w]
                    nxt.append(w)
        frontier = nxt
    raise AssertionError("a component without a circle")  # pragma: no cover


def layer_of(module: str) -> int:
    short = module.removeprefix(PKG).removeprefix(".")
    for n, (_, patterns) in enumerate(LAYERS):
        if any(fnmatch.fnmatchcase(short, p) for p in patterns):
            return n
    raise KeyError(module)


def short(module: str) -> str:
    return module.removeprefix(PKG + ".")


def in_kind_package(module: str) -> bool:
    return any(short(module) == k or short(module).startswith(k + ".") for k in KIND_PACKAGES)


def core_kind_imports(graph: dict[str, set[str]], allowed: dict[str, set[str]] | None = None) -> list[str]:
    """`core module -> kind module` for each import of a kind package from the core (layers up to CORE_TOP)."""
    top = [name for name, _ in LAYERS].index(CORE_TOP)
    allowed = KIND_IMPORTS_ALLOWED if allowed is None else allowed
    return [f"{short(m)} -> {short(t)}" for m, targets in sorted(graph.items())
            if not in_kind_package(m) and layer_of(m) <= top
            for t in sorted(targets) if in_kind_package(t) and short(t) not in allowed.get(short(m), set())]


# -- the checker on small graphs of its own ---------------------------------------------------
def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / PKG
    for rel, text in {"__init__.py": "", **files}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_every_kind_of_import_counts_and_type_checking_ones_do_not(tmp_path: Path) -> None:
    root = _package(tmp_path, {
        "a.py": "from .b import x\n",
        "b.py": "def f():\n    import pytest_agentfloor.c\n",
        "c.py": "from . import d\n",
        "d.py": "from .sub import e\n",
        "sub/__init__.py": "",
        "sub/e.py": "from ..a import y\n",
        "f.py": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import y\n"
                 "else:\n    from . import g\n"),
        "g.py": "",
    })
    graph = import_graph(root)
    assert graph[f"{PKG}.a"] == {f"{PKG}.b"}
    assert graph[f"{PKG}.b"] == {f"{PKG}.c"}  # function-level, absolute
    assert graph[f"{PKG}.c"] == {PKG, f"{PKG}.d"}  # `from . import d`: the package and the submodule
    assert graph[f"{PKG}.d"] == {f"{PKG}.sub", f"{PKG}.sub.e"}
    assert graph[f"{PKG}.sub.e"] == {f"{PKG}.a"}  # relative, two levels up
    assert graph[f"{PKG}.f"] == {PKG, f"{PKG}.g"}  # the TYPE_CHECKING branch is no import; its else is
    found = cycles(graph)
    assert len(found) == 1
    assert found[0][0] == found[0][-1] == f"{PKG}.a" and set(found[0]) == {f"{PKG}.{m}" for m in "abcd"} | {
        f"{PKG}.sub.e"}


def test_a_core_module_importing_a_kind_package_is_named(tmp_path: Path) -> None:
    root = _package(tmp_path, {
        "episode.py": "def f():\n    from .pressure.menu import full_menu\n",
        "suite/__init__.py": "", "suite/schema.py": "from ..kindspec import EpisodePressure\n", "kindspec.py": "",
        "pressure/__init__.py": "", "pressure/menu.py": "from ..suite.schema import x\n",
        "plugin.py": "from .pressure import menu\n",  # above the core: a kind may be wired in there
    })
    assert core_kind_imports(import_graph(root), allowed={}) == ["episode -> pressure.menu"]


def test_a_package_without_circles_has_none(tmp_path: Path) -> None:
    root = _package(tmp_path, {"a.py": "from . import b\n", "b.py": "import os\n"})
    assert cycles(import_graph(root)) == []


# -- the package ------------------------------------------------------------------------------
GRAPH = import_graph()


def test_no_import_circles() -> None:
    found = cycles(GRAPH)
    assert not found, "import circles: " + "; ".join(" -> ".join(short(m) for m in c) for c in found)


def test_every_module_has_a_layer() -> None:
    missing = []
    for m in GRAPH:
        try:
            layer_of(m)
        except KeyError:
            missing.append(short(m))
    assert not missing, f"modules in no layer of LAYERS (add them where they sit in docs/design.md): {missing}"


def test_no_module_imports_a_higher_layer() -> None:
    wrong = [f"{short(m)} ({LAYERS[layer_of(m)][0]}) imports {short(t)} ({LAYERS[layer_of(t)][0]})"
             for m, targets in sorted(GRAPH.items()) for t in sorted(targets) if layer_of(t) > layer_of(m)]
    assert not wrong, "imports against the data flow:\n" + "\n".join(wrong)


def test_the_core_imports_no_kind_package() -> None:
    """The episode loop, the case schema and everything under them know a kind's data only through
    kindspec's protocols: a kind package imported there is a kind baked into the core."""
    wrong = core_kind_imports(GRAPH)
    assert not wrong, "the core imports a kind package (hand it over through kindspec instead):\n" + "\n".join(wrong)
    stale = {m: t for m, t in KIND_IMPORTS_ALLOWED.items() if not t & {short(x) for x in GRAPH.get(f"{PKG}.{m}", ())}}
    assert not stale, f"allowed kind imports that no longer exist (drop them from KIND_IMPORTS_ALLOWED): {stale}"


def test_the_kind_registry_imports_no_kind() -> None:
    """Kinds are plug-ins: the registry knows the kind protocol and how to read a TOML file, nothing else."""
    assert {short(m) for m in GRAPH[f"{PKG}.kinds"]} <= {"casefiles", "kindspec", "suite", "suite.loader"}


def test_the_report_primitives_import_no_writer() -> None:
    writers = {f"{PKG}.report.{w}" for w in ("files", "html", "markdown", "terminal", "cli", "viewer", "tables")}
    for bottom in ("report.format", "report.sections"):
        assert not GRAPH[f"{PKG}.{bottom}"] & writers, bottom


@pytest.mark.parametrize("layer", [name for name, _ in LAYERS])
def test_the_layers_are_named_in_the_design(layer: str) -> None:
    design = (ROOT.parent / "docs" / "design.md").read_text(encoding="utf-8")
    assert layer in design
