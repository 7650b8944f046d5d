"""Options and helpers shared by the commands that read or change a store.

Every such command takes ``--app module:attr`` and/or ``--database URL`` plus ``--schema``; this
module defines them once, loads the App they name (``load_app``), opens it around a coroutine,
parses the operator-friendly values (job ids, failure reasons, relative times, rates) the job,
DLQ, purge, queue and limits commands accept, and writes the audit line (``ADMIN_COMPLETED``)
of the commands that change something.
"""

from __future__ import annotations

import asyncio
import functools
import getpass
import importlib
import logging
import os
import re
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, fields
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar, cast

import click
from click.core import ParameterSource
from rich.console import Console

from ..app import URL_VARIABLE, App
from ..errors import ConfigurationError, ValidationError
from ..ids import is_job_id
from ..limits import MAX_BULK_CAP, MAX_TIME, MIN_TIME
from ..logs import PlainFormatter, default_level, logger
from ..models import FailureReason, JobFilter, JobStatus
from ..rates import check_rate
from ..storage import UNSET, check_url

__all__ = [
    "CLEAR_WORDS",
    "DEFAULT_CAP",
    "Matching",
    "Store",
    "actor_option",
    "cap_options",
    "console",
    "database_option",
    "filter_summary",
    "job_id_argument",
    "job_ids",
    "load_app",
    "logged",
    "make_app",
    "matching_options",
    "parse_job_id",
    "parse_reason",
    "parse_when",
    "rate_option",
    "run_with_app",
    "schema_option",
    "store_options",
]

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

# What an operator may write to clear a limit (``--max-workers none``, ``--rate off``).
CLEAR_WORDS = ("none", "off", "clear", "-")
# How many jobs a command acting by filter touches unless --cap says otherwise.
DEFAULT_CAP = 100


# Rich lays a console that is not a terminal out at 80 columns (or $COLUMNS), which cut ids and
# errors short in ``| grep`` and ``> file``. Piped, tables take the width their cells need:
# this is only a ceiling, as a table that does not expand is as wide as its content.
PIPED_WIDTH = 1_000_000


def console() -> Console:
    """A rich console on stdout: plain text when not a terminal (as under tests and pipes), and
    then no line is cut or wrapped to fit a width (a table is as wide as its cells need)."""
    out = Console(highlight=False, soft_wrap=False)
    if out.is_terminal:
        return out
    return Console(highlight=False, soft_wrap=False, width=PIPED_WIDTH)


def schema_option(fn: F) -> F:
    """Add ``--schema`` (default ``$CHOKAQ_SCHEMA``, else the App's, else ``chokaq``)."""
    return click.option(
        "--schema",
        envvar="CHOKAQ_SCHEMA",
        show_envvar=True,
        default=None,
        help="Schema (PostgreSQL) or table prefix (SQLite); default chokaq.",
    )(fn)


def _database(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """``--database``'s value, or None (the App's URL). An empty or blank one is a usage error
    naming the option or ``CHOKAQ_DATABASE_URL``, whichever gave it, before anything is
    opened: click reads an empty variable as unset, which let the App's URL (or a new
    ``./chokaq.db``) be used without a word."""
    from_env = ctx.get_parameter_source(param.name or "") is ParameterSource.ENVIRONMENT
    if value is None:
        if os.environ.get(URL_VARIABLE) != "":
            return None  # left out, and the variable unset: the App's URL
        value, from_env = "", True
    try:
        return check_url(URL_VARIABLE, value)
    except ConfigurationError as exc:
        if from_env:  # click's own prefix names the option; say which source gave the value
            raise click.BadParameter(f"{exc}, or unset it") from None
        reason = str(exc).removeprefix(f"{URL_VARIABLE}: ")
        raise click.BadParameter(f"{reason}, or leave --database out") from None


def database_option(help: str) -> Callable[[F], F]:
    """Add ``--database`` (default ``$CHOKAQ_DATABASE_URL``), refusing an empty URL."""
    return click.option(
        "--database", envvar=URL_VARIABLE, show_envvar=True, callback=_database, help=help
    )


def _bundled(name: str, make: Callable[..., Any], params: tuple[str, ...]) -> Callable[[F], F]:
    """Hand a command the values of the options ``params`` (those it has) as one argument,
    ``name=make(**values)``; the options are added above this decorator."""

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def command(*args: Any, **kwargs: Any) -> Any:
            given = {param: kwargs.pop(param) for param in params if param in kwargs}
            return fn(*args, **{name: make(**given)}, **kwargs)

        return cast(F, command)

    return decorate


@dataclass(frozen=True, slots=True)
class Store:
    """The store a command works on, as its ``--app``, ``--database`` and ``--schema`` named
    it (each None when left out)."""

    app_spec: str | None = None
    database: str | None = None
    schema: str | None = None

    def app(self, *, existing: bool = False) -> App:
        """The App on this store; ``existing`` as for ``make_app``."""
        return make_app(self.app_spec, self.database, self.schema, existing=existing)


def store_options(fn: F) -> F:
    """Add ``--app``, ``--database`` and ``--schema`` to a command, which receives the three as
    one ``store: Store`` argument."""
    fn = _bundled("store", Store, ("app_spec", "database", "schema"))(fn)
    fn = schema_option(fn)
    fn = database_option("Database URL (sqlite:///path or postgresql://...); overrides the App's.")(
        fn
    )
    return click.option("--app", "app_spec", help="An App as module:attribute.")(fn)


def actor_option(fn: F) -> F:
    """Add ``--actor`` (recorded on DLQ and queue changes; default ``cli:<user>``)."""
    return click.option(
        "--actor", default=None, help="Who is acting (recorded); default cli:<login>."
    )(fn)


def actor_name(actor: str | None) -> str:
    if actor:
        return actor
    try:
        return f"cli:{getpass.getuser()}"
    except Exception:
        return "cli"


def load_app(spec: str | None, database: str | None = None) -> App:
    """Import ``module:attribute`` (an ``App`` or a callable returning one); with no spec, a bare
    App on ``--database`` / ``CHOKAQ_DATABASE_URL``."""
    if not spec:
        return App(database)
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise click.BadParameter(f"expected module:attribute, got {spec!r}", param_hint="--app")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise click.BadParameter(
            f"cannot import {module_name!r}: {exc}", param_hint="--app"
        ) from None
    try:
        target: Any = getattr(module, attr)
    except AttributeError:
        raise click.BadParameter(
            f"{module_name!r} has no attribute {attr!r}", param_hint="--app"
        ) from None
    if callable(target) and not isinstance(target, App):
        target = target()
    if not isinstance(target, App):
        raise click.BadParameter(f"{spec!r} is not a chokaq.App", param_hint="--app")
    if database is not None:
        target.configure(url=database)
    return target


def logged(fn: F) -> F:
    """Run a command with chokaq's log lines on stderr (plain, INFO and up unless
    ``--log-level`` said otherwise), so that its audit line is seen. The handler writes to the
    stderr of the moment and is removed afterwards; a host that configured the ``chokaq``
    logger itself keeps only its own handlers."""

    @functools.wraps(fn)
    def command(*args: Any, **kwargs: Any) -> Any:
        if logger.handlers:
            return fn(*args, **kwargs)
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(PlainFormatter())
        level = logger.level
        logger.setLevel(default_level())
        logger.addHandler(handler)
        try:
            return fn(*args, **kwargs)
        finally:
            logger.removeHandler(handler)
            logger.setLevel(level)

    return command  # type: ignore[return-value]


def make_app(
    app_spec: str | None, database: str | None, schema: str | None, *, existing: bool = False
) -> App:
    """The App a command works on. Commands that read or act on what a store holds (stats,
    lists, DLQ actions, retention purges) pass ``existing``: a SQLite file that does not exist
    is refused, naming it, instead of an empty ``./chokaq.db`` being created to read."""
    app = load_app(app_spec, database)
    if schema:
        app.configure(schema=schema)
    if existing:
        app.configure(create_missing=False)
    return app


def run_with_app(app: App, fn: Callable[[App], Awaitable[T]]) -> T:
    """Open ``app``, run ``fn(app)``, close it; returns what ``fn`` returned."""

    async def main() -> T:
        try:
            await app.open()
            return await fn(app)
        finally:
            await app.close()

    return asyncio.run(main())


def parse_job_id(value: str, param: str = "ID") -> str:
    """A job id as the operator pasted it (surrounding blanks and upper case are forgiven);
    anything else is a usage error naming ``param``, before a database is opened."""
    job_id = value.strip().lower()
    if not is_job_id(job_id):
        raise click.BadParameter(
            f"{value!r} is not a job id (a UUID such as 0190f1c2-7d4e-7c3a-9a51-3f8e2b1d9c77)",
            param_hint=f"'{param}'",
        )
    return job_id


def job_id_argument(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """A click callback: the one ID given, through ``parse_job_id``."""
    return parse_job_id(value)


def job_ids(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> list[str]:
    """A click callback: the IDs given, each through ``parse_job_id``, repeats dropped."""
    return list(dict.fromkeys(parse_job_id(v) for v in value))


def filter_summary(**given: str | None) -> str:
    """The filter as the operator typed it (``queue=x reason=timeout``), for the audit line."""
    return " ".join(f"{k}={v}" for k, v in given.items() if v is not None) or "everything"


@dataclass(frozen=True, slots=True)
class Matching:
    """A filter as the operator typed it (each None when left out): ``--queue``, ``--type``,
    ``--since``, ``--until``, ``--search``, and the DLQ's ``--reason`` or the active jobs'
    ``--status``. ``job_filter`` parses it (a usage error naming the option when a value is
    bad), ``summary`` writes it back for the audit line."""

    queue: str | None = None
    job_type: str | None = None
    reason: str | None = None
    status: str | None = None
    since: str | None = None
    until: str | None = None
    search: str | None = None

    def job_filter(self, ids: Sequence[str] = ()) -> JobFilter:
        """The ``JobFilter`` it means, restricted to ``ids`` when any are given."""
        return JobFilter(
            queue=self.queue,
            type=self.job_type,
            failure_reason=parse_reason(self.reason),
            status=JobStatus[self.status.upper()] if self.status else None,
            since=parse_when(self.since, param="--since"),
            until=parse_when(self.until, param="--until"),
            search=self.search,
            ids=tuple(ids) or None,
        )

    def summary(self) -> str:
        """The filter as typed (``queue=x reason=timeout``), or ``everything``."""
        return filter_summary(
            queue=self.queue,
            type=self.job_type,
            reason=self.reason,
            status=self.status,
            since=self.since,
            until=self.until,
            search=self.search,
        )


def matching_options(*options: Callable[[F], F]) -> Callable[[F], F]:
    """Add a filter's options (in the order ``--help`` lists them) to a command, which receives
    their values as one ``matching: Matching`` argument."""

    def decorate(fn: F) -> F:
        fn = _bundled("matching", Matching, tuple(f.name for f in fields(Matching)))(fn)
        for option in reversed(options):
            fn = option(fn)
        return fn

    return decorate


def cap_options(
    order: str, *, all_help: str = "Allow acting with no filter.", as_in_deck: bool = True
) -> Callable[[F], F]:
    """``--all``, ``--cap`` and ``--yes`` of a command acting on the jobs a filter matches;
    ``order`` says which come first when the cap cuts ("newest failure first")."""
    deck = ", as in the Deck's API" if as_in_deck else ""

    def decorate(fn: F) -> F:
        fn = click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")(fn)
        fn = click.option(
            "--cap",
            default=DEFAULT_CAP,
            show_default=True,
            type=click.IntRange(1, MAX_BULK_CAP),
            help=f"At most this many jobs ({order}); at most {MAX_BULK_CAP}{deck}.",
        )(fn)
        return click.option("--all", "everything", is_flag=True, help=all_help)(fn)

    return decorate


def parse_reason(value: str | None) -> FailureReason | None:
    """``timeout``, ``FATAL_ERROR``, ``fatal-error`` or the number all name a reason."""
    if value is None:
        return None
    key = value.strip().upper().replace("-", "_").replace(" ", "_")
    if key.isdigit():
        try:
            return FailureReason(int(key))
        except ValueError:
            pass
    elif key in FailureReason.__members__:
        return FailureReason[key]
    names = ", ".join(r.name.lower() for r in FailureReason)
    raise click.BadParameter(f"unknown failure reason {value!r}; one of: {names}")


_RELATIVE = re.compile(r"^\s*(?:in\s+|\+\s*)?(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_when(
    value: str | None,
    *,
    now: datetime | None = None,
    param: str | None = None,
    ahead: bool = False,
) -> datetime | None:
    """An ISO date/time (UTC when naive) or a duration such as ``30m``, ``2h``, ``7d``.

    A duration is an age (that long *ago*, as in a filter's ``--since 2h``) unless ``ahead`` is
    set, when it is that long *from now* (``--run-at 2h``; ``in 2h`` and ``+2h`` are accepted
    too). ``param`` names the option in the error (``--since``)."""
    if value is None:
        return None
    match = _RELATIVE.match(value)
    now = now or datetime.now(UTC)
    if match:
        seconds = float(match.group(1)) * _UNITS[match.group(2)]
        reach = (MAX_TIME - now if ahead else now - MIN_TIME).total_seconds()
        if seconds > reach:
            edge = "forward to 9999-01-01" if ahead else "back to 1970-01-01"
            raise click.BadParameter(
                f"{value!r}: a duration reaches {edge} at most ({int(reach // 86400)}d today)",
                param_hint=param,
            )
        span = timedelta(seconds=seconds)
        return now + span if ahead else now - span
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        example = "2h, in 30m, +1d" if ahead else "an age like 30m, 2h, 7d"
        raise click.BadParameter(
            f"{value!r} is neither an ISO date/time nor {example}",
            param_hint=param,
        ) from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _rate(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
    """``--rate``'s value: the rate as the seam stores it ("100/s"), ``None`` for a clearing
    word, ``UNSET`` when the option was left out. A bad rate is a usage error naming the option
    and the form, before a database is opened."""
    if value is None:
        return UNSET
    if value.strip().lower() in CLEAR_WORDS:
        return None
    try:
        return str(check_rate("--rate", value))
    except ValidationError as exc:
        raise click.BadParameter(exc.limit) from None


def rate_option(help: str) -> Callable[[F], F]:
    """Add ``--rate N/s|N/m|N/h`` (or ``none``), parsed by ``check_rate``; ``help`` says what
    the rate applies to."""
    return click.option("--rate", metavar="N/s|N/m|N/h", callback=_rate, help=help)
