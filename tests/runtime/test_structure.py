"""The shape of the package, read from its source with ``ast``: the layers and the directions
allowed between them (docs/architecture.md), no import cycle anywhere in ``src/chokaq``
(``TYPE_CHECKING`` blocks and imports inside functions included), and the worker's runtime parts
take narrow collaborators instead of the whole ``Worker``."""

from __future__ import annotations

import ast
from pathlib import Path

import chokaq

PACKAGE = Path(chokaq.__file__).resolve().parent
# The parts of the worker runtime that must not be handed the Worker (docs/architecture.md):
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


def _imports(name: str, path: Path, known: set[str]) -> list[tuple[int, str]]:
    """Every import of one of the package's modules in ``name``'s file, anywhere in it (module
    level, ``TYPE_CHECKING`` blocks, function bodies), as (line, module). ``from x import y``
    counts as importing ``x.y`` when that is a module, else ``x``."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[tuple[int, str]] = []
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
                found.append((node.lineno, target))
    return found


def _imported(name: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules that ``name`` imports, anywhere in its file."""
    return {target for _, target in _imports(name, path, known)}


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


# The layers, lowest first, stated once (docs/architecture.md draws them). A unit is a top-level
# module or subpackage of chokaq. A module may import its own unit, any unit of a lower layer and
# the other units of its own group; never a higher layer, and never a sibling group of its own
# layer (the client never imports the worker runtime; one face never imports another).
LAYERS: tuple[tuple[str, tuple[tuple[str, ...], ...]], ...] = (
    (
        "values",
        (
            (
                "errors",
                "ids",
                "encoding",
                "models",
                "limits",
                "serializer",
                "payloads",
                "argument_checks",
                "outcomes",
                "context",
                "logs",
                "rates",
                "periodic",
                "policies",
                "settings",
                "batches",
            ),
        ),
    ),
    ("storage", (("storage",),)),
    # Siblings: the worker runtime, and the client (enqueue handles, results, waits and the
    # shapes both faces render).
    (
        "runtime and client",
        (("runtime",), ("handles", "portal", "results", "streams", "waits", "views")),
    ),
    # The composition root: App declares handlers, enqueues and builds workers, so it (and what
    # instruments a worker: health, metrics, HTTP, OpenTelemetry, the test helpers) sees both.
    ("app", (("", "app", "health", "metrics", "otel", "http", "testing", "demo"),)),
    ("faces", (("cli",), ("deck",))),
    # Framework adapters embed a face (FastAPI mounts The Deck; Django's command loads the app
    # the way the CLI does).
    # Porting layers (Celery's calling conventions) translate to the App's API, as contrib
    # adapts a web framework; the two never import each other.
    ("contrib", (("contrib",), ("compat",))),
    ("entry", (("__main__",),)),
)
# Arrows allowed against the map, each with its reason; an entry no longer used fails too.
EXCEPTIONS: dict[tuple[str, str], str] = {
    ("chokaq.cli.deck", "deck"): "`chokaq deck` launches The Deck",
    ("chokaq.cli.demo", "deck"): "`chokaq demo` opens The Deck it serves",
}


def _unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _places() -> dict[str, tuple[int, int]]:
    """Each unit's (layer index, group index)."""
    return {
        unit: (layer, group)
        for layer, (_, groups) in enumerate(LAYERS)
        for group, units in enumerate(groups)
        for unit in units
    }


def _arrow(importer: str, imported: str) -> str:
    def label(unit: str) -> str:
        layer = LAYERS[_places()[unit][0]][0]
        return f"{unit or 'chokaq'} ({layer})"

    return f"{label(_unit(importer))} -> {label(_unit(imported))}"


def wrong_arrows(
    modules: dict[str, Path], exceptions: dict[tuple[str, str], str]
) -> tuple[list[str], set[tuple[str, str]]]:
    """The imports against ``LAYERS`` as "file:line: arrow" lines, and the exceptions used."""
    places = _places()
    known = set(modules)
    problems: list[str] = []
    used: set[tuple[str, str]] = set()
    for name, path in sorted(modules.items()):
        source = _unit(name)
        if source not in places:
            problems.append(f"{path}: {name} is in no layer (add its unit to LAYERS)")
            continue
        for line, target in _imports(name, path, known):
            unit = _unit(target)
            if unit == source:
                continue
            (from_layer, from_group), (to_layer, to_group) = places[source], places[unit]
            if to_layer < from_layer or (to_layer == from_layer and to_group == from_group):
                continue
            if (name, unit) in exceptions:
                used.add((name, unit))
                continue
            where = path.relative_to(PACKAGE.parent) if path.is_relative_to(PACKAGE) else path
            problems.append(f"{where}:{line}: {name} imports {target}: {_arrow(name, target)}")
    return problems, used


def test_every_import_follows_the_layers() -> None:
    problems, used = wrong_arrows(_modules(), EXCEPTIONS)
    assert problems == [], "imports against the layers (see docs/architecture.md):\n" + "\n".join(
        problems
    )
    assert used == set(EXCEPTIONS), f"exceptions no longer used: {set(EXCEPTIONS) - used}"


def test_the_layer_rule_names_file_line_and_arrow(tmp_path: Path) -> None:
    (tmp_path / "chokaq" / "cli").mkdir(parents=True)
    handles, cli = tmp_path / "chokaq" / "handles.py", tmp_path / "chokaq" / "cli" / "stats.py"
    handles.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from .runtime.worker import Worker\n"
    )
    cli.write_text("def f() -> None:\n    from ..deck.views import dump\n")
    (tmp_path / "w.py").write_text("")
    (tmp_path / "v.py").write_text("")
    modules = {
        "chokaq.handles": handles,
        "chokaq.cli.stats": cli,
        "chokaq.runtime.worker": tmp_path / "w.py",
        "chokaq.deck.views": tmp_path / "v.py",
    }
    problems, _ = wrong_arrows(modules, {})
    assert [p.split(": ", 1)[0].rsplit("/", 1)[-1] for p in problems] == [
        "stats.py:2",
        "handles.py:3",
    ]
    assert problems[0].endswith("cli (faces) -> deck (faces)")
    assert problems[1].endswith("handles (runtime and client) -> runtime (runtime and client)")
    # Upward arrows fail as sideways ones do; downward ones pass.
    cli.write_text("from ..runtime.worker import Worker\n")
    handles.write_text("from .cli.stats import f\n")
    problems, _ = wrong_arrows(modules, {})
    assert len(problems) == 1 and "handles (runtime and client) -> cli (faces)" in problems[0]
