"""``chokaq migrate``: bring the database schema up to date (the backend applies the
migrations and logs ``MIGRATION_STARTED`` / ``_COMPLETED`` / ``_FAILED``)."""

from __future__ import annotations

import asyncio

import click

from .options import database_option, load_app, logged, schema_option

__all__ = ["COMMANDS"]


@click.command()
@click.option("--app", "app_spec", help="An App as module:attribute (for its URL and schema).")
@database_option("Database URL.")
@schema_option
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
            applied = await backend.migrate()  # logs its start, completion or failure
            return applied, await backend.schema_version()
        finally:
            await backend.close()

    applied, version = asyncio.run(run())
    if applied:
        click.echo(f"applied migrations {', '.join(map(str, applied))}; schema at v{version}")
    else:
        click.echo(f"schema already current at v{version}")


COMMANDS = [migrate]
