"""The package's layout is its design: imports run one way, from the commands down to the model.

    entry (cli, console, completion, lintrunner) -> render -> commands -> edit (pipeline) -> facts
    -> read -> model (errors, model, dtypes, textedit, resources)

Walks every module of `mpsgen/` with `ast` (function-local and TYPE_CHECKING imports included) and
fails on an import against that order, on an import circle, on a module no layer owns, and on a
function-local import of an mpsgen module outside the entry layer (there it keeps `--help` fast;
anywhere else it would only hide a circle)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "mpsgen"

# Top to bottom. A module belongs to the layer that names it or a package above it (the package
# `mpsgen` itself names only its own __init__); it may import modules of its own layer (without a
# circle) and of the layers below.
LAYERS = (
    ("entry", ("mpsgen", "mpsgen.__main__", "mpsgen.console", "mpsgen.cli", "mpsgen.completion",
               "mpsgen.lintrunner")),
    ("render", ("mpsgen.render",)),
    ("commands", ("mpsgen.commands",)),
    ("edit", ("mpsgen.edit",)),
    ("facts", ("mpsgen.facts",)),
    ("read", ("mpsgen.read",)),
    ("model", ("mpsgen.errors", "mpsgen.model", "mpsgen.dtypes", "mpsgen.textedit", "mpsgen.resources")),
)


def module_files(package: Path = PACKAGE) -> dict[str, Path]:
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def layer_of(module: str) -> int | None:
    for rank, (_name, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if module == prefix or (prefix != "mpsgen" and module.startswith(prefix + ".")):
                return rank
    return None


class Import:
    def __init__(self, source: str, target: str, line: int, local: bool):
        self.source, self.target, self.line, self.local = source, target, line, local

    def __repr__(self) -> str:
        where = "function-local " if self.local else ""
        return f"{self.source}:{self.line}: {where}import of {self.target}"


def _visit(node: ast.AST, local: bool, found: list[tuple[ast.AST, bool]]) -> None:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            found.append((child, local))
        inner = local or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        _visit(child, inner, found)


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> list[Import]:
    """The mpsgen modules `module` imports, each at its line."""
    statements: list[tuple[ast.AST, bool]] = []
    _visit(ast.parse(path.read_text(encoding="utf-8")), False, statements)
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found = []
    for node, local in statements:
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        for name in names:
            if name == "mpsgen" or name.startswith("mpsgen."):
                while name not in modules:
                    name = name.rpartition(".")[0]
                if name != module:
                    found.append(Import(module, name, node.lineno, local))
    return found


def all_imports() -> list[Import]:
    modules = module_files()
    return [item for module, path in modules.items() for item in imports_of(module, path, modules)]


def circles(edges: list[Import]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    graph: dict[str, set[str]] = {}
    for edge in edges:
        graph.setdefault(edge.source, set()).add(edge.target)
        graph.setdefault(edge.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def strongconnect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph[node]):
            if successor not in index:
                strongconnect(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            strongconnect(node)
    return found


def test_every_module_has_a_layer():
    assert [m for m in module_files() if layer_of(m) is None] == []


def test_imports_run_down_the_layers():
    against = [edge for edge in all_imports() if layer_of(edge.target) < layer_of(edge.source)]
    assert against == [], "\n".join(
        f"{edge!r}: {LAYERS[layer_of(edge.source)][0]} may not import {LAYERS[layer_of(edge.target)][0]}"
        for edge in against)


def test_no_import_circle():
    assert circles(all_imports()) == []


def test_function_local_imports_only_in_the_entry_layer():
    local = [edge for edge in all_imports() if edge.local and layer_of(edge.source) != 0]
    assert local == []


def test_edit_decides_nothing_about_the_kernel():
    """An op's plan is decided once in facts/ (`mpsgen.facts.plan.plan_for`): edit/ imports neither
    the body sources nor the dtype and test-list rules, it writes the plan (issue 44)."""
    deciding = ("mpsgen.facts.bodies", "mpsgen.facts.rules")
    found = [edge for edge in all_imports() if edge.source.startswith("mpsgen.edit") and edge.target in deciding]
    assert found == []


def reached_from(starts: list[str], edges: list[Import]) -> dict[str, str]:
    """Every module the `starts` import, directly or through others: module -> the one importing it."""
    graph: dict[str, list[str]] = {}
    for edge in edges:
        graph.setdefault(edge.source, []).append(edge.target)
    seen = {start: "" for start in starts}
    todo = list(starts)
    while todo:
        module = todo.pop()
        for target in graph.get(module, ()):
            if target not in seen:
                seen[target] = module
                todo.append(target)
    return seen


def test_try_reads_no_plan():
    """try runs the functor as it stands: nothing on its path (`mpsgen.commands.tryop` and all it
    imports) is an edit/ module; the command supplies the hint that plans in memory."""
    tryop = [m for m in module_files() if m == "mpsgen.commands.tryop" or m.startswith("mpsgen.commands.tryop.")]
    reached = reached_from(tryop, all_imports())
    assert sorted(f"{m} (imported by {by})" for m, by in reached.items() if m.startswith("mpsgen.edit")) == []
    assert "mpsgen.facts.plan" not in reached


def test_each_folder_says_its_job_in_one_paragraph():
    for init in sorted(PACKAGE.rglob("__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert doc, f"{init.relative_to(PACKAGE.parent)} has no docstring"
        assert "\n\n" not in doc.strip(), f"{init.relative_to(PACKAGE.parent)}: its docstring is one paragraph"


# The checker itself: each rule fails on a package that breaks it.

def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = tmp_path / "mpsgen" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path / "mpsgen"


def _edges(package: Path) -> list[Import]:
    modules = module_files(package)
    return [item for module, path in modules.items() for item in imports_of(module, path, modules)]


def test_checker_finds_an_upward_import(tmp_path):
    package = _package(tmp_path, {"__init__.py": "", "read/__init__.py": "", "edit/__init__.py": "",
                                  "read/a.py": "from mpsgen.edit.b import x\n", "edit/b.py": "x = 1\n"})
    edge, = _edges(package)
    assert (edge.source, edge.target, edge.line) == ("mpsgen.read.a", "mpsgen.edit.b", 1)
    assert layer_of(edge.target) < layer_of(edge.source)


def test_checker_finds_a_circle_hidden_in_a_function(tmp_path):
    package = _package(tmp_path, {"__init__.py": "", "facts/__init__.py": "",
                                  "facts/a.py": "from mpsgen.facts import b\n",
                                  "facts/b.py": "def f():\n    from mpsgen.facts.a import y\n"})
    edges = _edges(package)
    assert circles(edges) == [["mpsgen.facts.a", "mpsgen.facts.b"]]
    assert [(e.source, e.local) for e in edges if e.local] == [("mpsgen.facts.b", True)]


def test_checker_follows_imports_through_other_modules(tmp_path):
    package = _package(tmp_path, {"__init__.py": "", "commands/__init__.py": "", "edit/__init__.py": "",
                                  "commands/a.py": "from mpsgen.commands import b\n",
                                  "commands/b.py": "from mpsgen.edit import c\n", "edit/c.py": "x = 1\n"})
    assert reached_from(["mpsgen.commands.a"], _edges(package)) == {
        "mpsgen.commands.a": "", "mpsgen.commands.b": "mpsgen.commands.a", "mpsgen.edit.c": "mpsgen.commands.b"}


def test_checker_reads_relative_imports(tmp_path):
    package = _package(tmp_path, {"__init__.py": "", "read/__init__.py": "", "read/a.py": "from . import b\n",
                                  "read/b.py": "from .a import z\n"})
    assert circles(_edges(package)) == [["mpsgen.read.a", "mpsgen.read.b"]]


@pytest.mark.parametrize("module, layer", [("mpsgen.cli", "entry"), ("mpsgen.render.text", "render"),
                                           ("mpsgen.commands.scan", "commands"), ("mpsgen.edit.pipeline", "edit"),
                                           ("mpsgen.facts.rules", "facts"), ("mpsgen.read.cpp", "read"),
                                           ("mpsgen.errors", "model"), ("mpsgen.unplaced", None)])
def test_layer_names(module, layer):
    rank = layer_of(module)
    assert (LAYERS[rank][0] if rank is not None else None) == layer
