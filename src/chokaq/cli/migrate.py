"""``chokaq migrate``: bring the database schema up to date, logging when a migration starts,
completes or fails (``MIGRATION_STARTED`` / ``_COMPLETED`` / ``_FAILED``); the migrations
themselves are the backend's."""

from __future__ import annotations

import asyncio

import click

from ..logs import Event, log_event
from .options import load_app, logged

__all__ = ["COMMANDS"]


@click.command()
@click.option("--app", "app_spec", help="An App as module:attribute (for its URL and schema).")
@click.option("--database", envvar="CHOKAQ_DATABASE_URL", help="Database URL.")
@click.option("--schema", default=None, help="Schema (PostgreSQL) or table prefix (SQLite).")
@logged
def migrate(app_spec: str | None, database: str | None, schema: str | None) -> None:
    """Apply pending migrations (safe to run from several processes at once).

    \b
    Example:
      chokaq migrate --database postgresql://app@db/app
    """
    app = load_app(app_spec, database)
    if schema:
        app.schema = schema

    async def run() -> tuple[list[int], int]:
        backend = app.backend
        await backend.open()
        try:
            versions = {"from_version": await backend.schema_version()}
            versions["to_version"] = backend.latest_version()
            if versions["from_version"] < versions["to_version"]:
                log_event(Event.MIGRATION_STARTED, "migrating the schema", **versions)
            try:
                applied = await backend.migrate()
            except Exception as exc:
                log_event(
                    Event.MIGRATION_FAILED,
                    "schema migration failed",
                    level=40,
                    error_type=type(exc).__name__,
                    error=str(exc),
                    **versions,
                )
                raise
            if applied:
                log_event(Event.MIGRATION_COMPLETED, "schema migrated", versions=applied)
            return applied, await backend.schema_version()
        finally:
            await backend.close()

    applied, version = asyncio.run(run())
    if applied:
        click.echo(f"applied migrations {', '.join(map(str, applied))}; schema at v{version}")
    else:
        click.echo(f"schema already current at v{version}")


COMMANDS = [migrate]
