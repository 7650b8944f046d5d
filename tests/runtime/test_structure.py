"""The shape of the package, read from its source with ``ast``: no import cycle anywhere in
``src/chokaq`` (``TYPE_CHECKING`` blocks and imports inside functions included), and the
worker's runtime parts take narrow collaborators instead of the whole ``Worker``."""

from __future__ import annotations

import ast
from pathlib import Path

import chokaq

PACKAGE = Path(chokaq.__file__).resolve().parent
# The parts of the worker runtime that must not be handed the Worker (DESIGN.md, "One seam"):
# every runtime module but the worker itself, and the health checks.
PARTS = (
    *sorted(
        str(p.relative_to(PACKAGE))
        for p in (PACKAGE / "runtime").glob("*.py")
        if p.name not in ("__init__.py", "worker.py")
    ),
    "health.py",
)


def _module_name(path: Path) -> str:
    parts = ["chokaq", *path.relative_to(PACKAGE).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _imported(name: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules that ``name`` imports, anywhere in its file. ``from x import y``
    counts as importing ``x.y`` when that is a module, else ``x``."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            targets = [
                f"{source}.{alias.name}" if f"{source}.{alias.name}" in known else source
                for alias in node.names
            ]
        else:
            continue
        for target in targets:
            # Importing a.b.c runs a, a.b and a.b.c; only the module itself is an edge here,
            # since a package importing its own submodules is not a cycle worth reporting.
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: _imported(name, path, known) for name, path in modules.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as ``[a, b, ..., a]``, or None (an iterative depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for root in sorted(graph):
        if state.get(root):
            continue
        path = [root]
        stack = [iter(sorted(graph[root]))]
        state[root] = 1
        while stack:
            child = next(stack[-1], None)
            if child is None:
                state[path.pop()] = 2
                stack.pop()
                continue
            if state.get(child) == 1:
                return [*path[path.index(child) :], child]
            if not state.get(child):
                state[child] = 1
                path.append(child)
                stack.append(iter(sorted(graph.get(child, ()))))
    return None


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycle(graph) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_the_graph_sees_relative_type_checking_and_function_imports() -> None:
    graph = import_graph()
    # Relative imports at module level and inside a TYPE_CHECKING block or a function body.
    assert "chokaq.settings" in graph["chokaq.app"]
    assert "chokaq.storage" in graph["chokaq.runtime.finalizer"]
    assert "chokaq.cli.worker" in graph["chokaq.cli"]  # imported inside _register()


def test_no_import_cycle_in_the_package() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def _worker_mentions_and_foreign_privates(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    problems: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == "Worker":
            problems.append(f"line {node.lineno}: names Worker")
        elif isinstance(node, ast.ImportFrom) and any(a.name == "Worker" for a in node.names):
            problems.append(f"line {node.lineno}: imports Worker")
        elif isinstance(node, ast.Constant) and node.value == "Worker":
            problems.append(f"line {node.lineno}: names Worker in a string annotation")
        elif (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
        ):
            problems.append(f"line {node.lineno}: reads {ast.unparse(node)}")
    return problems


def test_runtime_parts_take_narrow_collaborators() -> None:
    assert {"runtime/heartbeat.py", "runtime/executor.py", "runtime/report.py"} <= set(PARTS)
    problems = {
        part: found
        for part in PARTS
        if (found := _worker_mentions_and_foreign_privates(PACKAGE / part))
    }
    assert problems == {}


def test_the_part_rule_catches_a_worker_and_a_private_member(tmp_path: Path) -> None:
    sample = tmp_path / "part.py"
    sample.write_text(
        "from .worker import Worker\n"
        "def f(worker: 'Worker', self) -> None:\n"
        "    worker._done()\n"
        "    self._fine = 1\n"
    )
    found = _worker_mentions_and_foreign_privates(sample)
    assert [p.split(":")[0] for p in found] == ["line 1", "line 2", "line 3"]
