"""The code reads as the pipeline: each folder imports only the folders below it, lazy and `TYPE_CHECKING`
imports and the package root included, and the pure folders touch no Spark, file, process or network."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "delta_sync"

# Lowest first: a module may import its own folder and the folders before it, nothing after.
LAYERS = (
    "delta_sync.version",  # stamped on saved plans, the engine's key and the GitHub side
    "delta_sync.model",  # the state model, errors, the Catalog port
    "delta_sync.sql",  # SQL texts without an engine
    "delta_sync.planning",  # two states -> actions, statements, hazards
    "delta_sync.specs",  # spec files and the project file -> the desired model
    "delta_sync.planfile",  # saved plans
    "delta_sync.render",  # plans -> text, JSON, SQL, Markdown
    "delta_sync.spark",  # the adapters: the only folder that imports pyspark, py4j or delta
    "delta_sync.review",  # the review and apply, on the Catalog port
    "delta_sync.cli",  # the command line
    "delta_sync.processes",  # programs of their own: the warm engine, spark-submit's driver
    "delta_sync.github",  # the GitHub side: the version and the standard library only
    "delta_sync",  # the public API (`__all__`) and `__main__`
)
PURE = ("delta_sync.model", "delta_sync.sql", "delta_sync.planning", "delta_sync.render")
# What a pure folder may not import: Spark, processes, the network, the file system's changes.
IMPURE = (
    "pyspark",
    "py4j",
    "delta",
    "subprocess",
    "socket",
    "shutil",
    "signal",
    "fcntl",
    "multiprocessing",
    "threading",
    "urllib.request",
    "http",
    "tempfile",
)


def _module(path: Path, package: Path = PACKAGE) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Every module's imports of the package, the root `delta_sync` included; outside ones as written."""
    modules = {_module(p, package) for p in package.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for path in package.rglob("*.py"):
        name = _module(path, package)
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):  # function-level and TYPE_CHECKING imports count
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for a in node.names:
                    full = f"{node.module}.{a.name}"
                    found.add(full if full in modules else node.module)
            elif isinstance(node, ast.ImportFrom):
                raise AssertionError(f"{name}: a relative import; write it from delta_sync")
        graph[name] = found - {name}
    return graph


def layer(module: str) -> int:
    """The index of the longest entry of LAYERS that holds `module`; the package root holds only itself and
    `__main__`, so a module left directly in delta_sync/ must be given a layer."""
    if module in ("delta_sync", "delta_sync.__main__"):
        return LAYERS.index("delta_sync")
    for index, prefix in enumerate(LAYERS[:-1]):
        if module == prefix or module.startswith(prefix + "."):
            return index
    raise AssertionError(f"{module} is in no layer: add its folder to LAYERS")


def upward(graph: dict[str, set[str]]) -> list[str]:
    """Each import of a folder above the importer's own, as 'importer -> imported'."""
    wrong = []
    for name, found in sorted(graph.items()):
        for other in sorted(found):
            if (other == "delta_sync" or other.startswith("delta_sync.")) and layer(other) > layer(name):
                wrong.append(f"{name} -> {other}")
    return wrong


def cycle(graph: dict[str, set[str]]) -> list[str]:
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in graph:
                continue
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return []

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return []


def test_every_folder_imports_only_the_folders_below_it() -> None:
    graph = imports()
    assert {"delta_sync", "delta_sync.version", "delta_sync.spark"} <= graph.keys()
    assert upward(graph) == []


def test_no_import_cycle_the_package_root_included() -> None:
    graph = imports()
    assert cycle(graph) == [], " -> ".join(cycle(graph))


@pytest.mark.parametrize("folder", PURE)
def test_pure_folders_touch_no_spark_process_or_network(folder: str) -> None:
    graph = imports()
    found = {
        f"{name} -> {other}"
        for name, imported in graph.items()
        if name == folder or name.startswith(folder + ".")
        for other in imported
        if any(other == bad or other.startswith(bad + ".") for bad in IMPURE)
    }
    assert found == set()


def test_the_checks_catch_what_they_are_for(tmp_path: Path) -> None:
    """A lower folder importing a higher one, lazily or only for types, and a circle through the root, are found."""
    package = tmp_path / "delta_sync"
    for folder in ("model", "planning", "review"):
        (package / folder).mkdir(parents=True)
        (package / folder / "__init__.py").write_text("")
    (package / "__init__.py").write_text("from delta_sync.version import __version__\n")
    (package / "version.py").write_text("__version__ = '0'\n")
    (package / "model" / "state.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from delta_sync.planning.planner import Plan\n"
    )
    (package / "planning" / "planner.py").write_text("def plan():\n    from delta_sync.review import api\n")
    (package / "review" / "api.py").write_text("from delta_sync import __version__\n")
    graph = imports(package)
    assert upward(graph) == [
        "delta_sync.model.state -> delta_sync.planning.planner",
        "delta_sync.planning.planner -> delta_sync.review.api",
        "delta_sync.review.api -> delta_sync",
    ]
    assert cycle(graph) == []
    (package / "version.py").write_text("import delta_sync\n__version__ = '0'\n")
    assert cycle(imports(package)) == ["delta_sync", "delta_sync.version", "delta_sync"]
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set()}) == []
