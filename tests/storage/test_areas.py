"""One storage vocabulary (docs/architecture.md, "Storage areas"): each area is one group module
of the seam (``storage/<area>.py``), one mixin module in each driver (``storage/<driver>/
<area>.py``) and one SQL file in each driver (``storage/<driver>/sql/<area>.sql``). These tests
read the package and fail when an area exists in one place and not the others, when the two
drivers' mixins of an area offer different operations, and when a named block sits in a file
whose module does not run it (so that a query's place is known before it is written)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import chokaq.storage
from chokaq.storage.backend import Backend
from chokaq.storage.driver import Driver
from chokaq.storage.group import OperationGroup
from chokaq.storage.postgres.driver import PostgresDriver
from chokaq.storage.sqlfile import includes, load_blocks
from chokaq.storage.sqlite.driver import SQLiteDriver

STORAGE = Path(chokaq.storage.__file__).resolve().parent
DRIVERS = {"postgres": PostgresDriver, "sqlite": SQLiteDriver}
# A driver's modules that are no area: what every area's mixin stands on.
SUPPORT = {"__init__", "driver", "connection", "rows", "notify"}
# SQL files that are no area: each holds what the support module of its name runs.
SQL_SUPPORT = {"postgres": {"connection", "notify"}, "sqlite": {"connection"}}
# Blocks run by a module other than the one their file is named after, with the reason.
RUN_ELSEWHERE = {
    # The fence every write under leadership opens with, run by PostgresCore._fence.
    ("postgres", "leadership_fence"): "connection",
    # The LISTEN statement driver.py hands to the notifier it builds.
    ("postgres", "listen"): "driver",
}
# Names built from a pillar (``f"{pillar.value}_list"``) start with one of these.
PILLARS = ("hot", "archive", "dlq")
MAX_SQL_LINES = 600


def _stem(cls: type) -> str:
    return cls.__module__.rpartition(".")[2]


def _seam_areas() -> dict[str, type]:
    return {_stem(base): base for base in Backend.__bases__ if base is not OperationGroup}


def _mixins(driver: type) -> dict[str, type]:
    return {_stem(base): base for base in driver.__bases__}


def _blocks(driver: str) -> dict[str, tuple[str, str]]:
    """Every named block of the driver's SQL files: name -> (file stem, body)."""
    return load_blocks(f"chokaq.storage.{driver}")


def _literals(path: Path) -> set[str]:
    """The string constants of a module, but those of its ``__all__`` (whose function names
    may equal a block's name without running it)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "__all__" for target in node.targets
        ):
            skipped |= {id(child) for child in ast.walk(node.value)}
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in skipped
    }


def _runs(name: str, literals: set[str]) -> bool:
    """Whether a module with these string constants runs the block ``name``: by its name, or
    by a name it builds from a pillar or a named prefix and a constant suffix (``f"{pillar.
    value}_count_upto"``, ``_NAMES[pillar] + "_ids"``)."""
    if name in literals:
        return True
    for suffix in literals:
        if suffix.startswith("_") and len(suffix) > 3 and name.endswith(suffix):
            head = name[: -len(suffix)]
            if head in PILLARS or ("_" in head and head in literals):
                return True
    return False


def test_every_area_is_a_seam_group_a_mixin_of_each_driver_and_an_sql_file_of_each() -> None:
    areas = set(_seam_areas())
    assert areas >= {"jobs", "claims", "dlq", "reads", "maintenance", "leadership"}
    for driver, cls in DRIVERS.items():
        modules = {path.stem for path in (STORAGE / driver).glob("*.py")} - SUPPORT
        sql = {path.stem for path in (STORAGE / driver / "sql").glob("*.sql")}
        assert set(_mixins(cls)) == areas, f"{driver}/driver.py's mixins"
        assert modules == areas, f"{driver}/*.py"
        assert sql - SQL_SUPPORT[driver] == areas, f"{driver}/sql/*.sql"
    groups = {path.stem for path in STORAGE.glob("*.py")}
    assert areas <= groups


@pytest.mark.parametrize("driver", sorted(DRIVERS))
def test_each_mixin_is_named_after_its_driver_and_area(driver: str) -> None:
    prefix = {"postgres": "Postgres", "sqlite": "SQLite"}[driver]
    for area, mixin in _mixins(DRIVERS[driver]).items():
        assert mixin.__name__.startswith(prefix), (area, mixin.__name__)


def test_both_drivers_offer_the_same_operations_in_each_area() -> None:
    # A method with a default in the contract (a no-op where a capability is missing, as
    # jobs_hot_tidy without row versions) may be left out by a driver that lacks it.
    defaults = {
        name
        for name, value in vars(Driver).items()
        if callable(value) and not getattr(value, "__isabstractmethod__", False)
    }
    contract = {name for name in vars(Driver) if not name.startswith("_")}
    postgres, sqlite = _mixins(PostgresDriver), _mixins(SQLiteDriver)
    for area in _seam_areas():
        offered = {}
        for driver, mixin in (("postgres", postgres[area]), ("sqlite", sqlite[area])):
            public = {name for name in vars(mixin) if not name.startswith("_")}
            assert public <= contract, f"{driver} {area}: not in the Driver contract"
            offered[driver] = public - defaults
        assert offered["postgres"] == offered["sqlite"], area


@pytest.mark.parametrize("driver", sorted(DRIVERS))
def test_every_block_is_run_by_the_module_its_file_is_named_after(driver: str) -> None:
    blocks = _blocks(driver)
    literals = {path.stem: _literals(path) for path in (STORAGE / driver).glob("*.py")}
    misplaced = []
    for name, (stem, _) in blocks.items():
        if name.startswith("fragment_"):
            continue
        runner = RUN_ELSEWHERE.get((driver, name), stem)
        if not _runs(name, literals[runner]):
            misplaced.append(f"{stem}.sql: {name} (not run by {driver}/{runner}.py)")
    assert not misplaced


@pytest.mark.parametrize("driver", sorted(DRIVERS))
def test_every_fragment_is_included(driver: str) -> None:
    blocks = _blocks(driver)
    included = {name for _, body in blocks.values() for name in includes(body)}
    unused = {name for name in blocks if name.startswith("fragment_")} - included
    assert not unused


@pytest.mark.parametrize("driver", sorted(DRIVERS))
def test_no_sql_file_is_over_the_size_limit(driver: str) -> None:
    for path in (STORAGE / driver / "sql").glob("*.sql"):
        lines = path.read_text(encoding="utf-8").count("\n")
        assert lines <= MAX_SQL_LINES, f"{path.name}: {lines} lines (split it by a clear rule)"
