"""The house keeps its shape: imports run one way, neither packages nor modules form a loop, modules
stay small.

Read from the source (``ast``), not by importing it, so a loop is caught even where Python's import
order would happen to tolerate it (an import inside a function, say). In the package graph a node is a
package (``agui_app.events``) or, for a module that sits directly in an app (``agui_app.process``), the
module itself; in the module graph every module is a node. Imports under ``if TYPE_CHECKING:`` are left
out: they never run.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
APPS = ("agui_app", "capabilities")
MAX_MODULE_LINES = 400


def modules() -> Iterator[tuple[str, Path]]:
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            yield ".".join(parts), path


def is_package(name: str) -> bool:
    return (ROOT / Path(*name.split("."))).is_dir()


def node_of(module: str) -> str:
    """The package a module belongs to; a module directly inside an app is a node of its own."""
    parts = module.split(".")
    if is_package(module):
        return module
    parent = ".".join(parts[:-1])
    return module if parent in APPS else parent


def type_checking_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def imported(module: str, path: Path) -> set[str]:
    """The first-party modules ``module`` imports (at any depth of its code)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    skip = type_checking_lines(tree)
    found: set[str] = set()
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:  # ``from agui_app.events import log`` imports a module
                candidate = f"{node.module}.{alias.name}"
                found.add(
                    candidate
                    if (ROOT / Path(*candidate.split("."))).with_suffix(".py").exists()
                    else node.module
                )
    return {name for name in found if name.split(".")[0] in APPS}


def package_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for module, path in modules():
        source = node_of(module)
        targets = {node_of(target) for target in imported(module, path)}
        graph.setdefault(source, set()).update(targets - {source})
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected component of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
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
            visit(node)
    return found


def module_graph() -> dict[str, set[str]]:
    """Module → the modules it imports (a package's ``__init__`` stands for the package)."""
    return {module: imported(module, path) - {module} for module, path in modules()}


def test_no_package_imports_itself_through_another() -> None:
    assert cycles(package_graph()) == []


def test_no_module_imports_itself_through_another() -> None:
    """Also inside one package: two modules that import each other (at any depth of their code)."""
    assert cycles(module_graph()) == []


def test_the_cycle_finder_finds_a_loop() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_capabilities_imports_nothing_from_agui_app() -> None:
    offenders = {
        module: sorted(t for t in imported(module, path) if t.startswith("agui_app"))
        for module, path in modules()
        if module.startswith("capabilities")
    }
    assert {module: found for module, found in offenders.items() if found} == {}


@pytest.mark.parametrize("package", ["agui_app.state", "capabilities.skills"])
def test_pure_libraries_import_no_django(package: str) -> None:
    for module, path in modules():
        if module.startswith(package):
            tree = ast.parse(path.read_text())
            names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
            names |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
            assert not any(
                name.split(".")[0] in ("django", "rest_framework", "channels") for name in names
            ), module


def test_the_layers_run_one_way() -> None:
    """Below every writer: state and events; selectors never import services; nothing imports the
    transports but the ASGI routing (``project.asgi``) and the app config, which registers the
    OpenAPI scheme of the API key."""
    graph = package_graph()
    assert not any(t.startswith("agui_app.services") for t in graph["agui_app.selectors"])
    for low in ("agui_app.state", "agui_app.events"):
        assert not {t for t in graph[low] if t.startswith(("agui_app.services", "agui_app.runtime"))}, low
    importers_of_transports = {
        source
        for source, targets in graph.items()
        if any(t.startswith("agui_app.transports") for t in targets)
        and not source.startswith("agui_app.transports")
    }
    assert importers_of_transports == {"agui_app.apps"}


def test_no_module_is_over_400_lines() -> None:
    long = {
        module: n
        for module, path in modules()
        if (n := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}
