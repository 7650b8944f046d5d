"""docs/getting-started.md's Python blocks, and the README's first one, run as written on both
backends: the handlers they declare, and every enqueue (the caller's transaction on PostgreSQL,
where a caller's connection can carry one)."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import psycopg
import pytest

from chokaq import App, JobHandle, ValidationError

DOC = Path(__file__).resolve().parents[2] / "docs" / "getting-started.md"
# The doc's database, replaced by the test's store (the only change made to its text).
DOC_APP = 'App("postgresql://app@db/app")'
# SQLite has no caller transactions: on it, this line of the doc is left out.
CALLER_LINE = "send_email.options(connection=conn)"


def _block(marker: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    found = [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if marker in b]
    assert len(found) == 1, f"{len(found)} python blocks of getting-started.md hold {marker!r}"
    return found[0]


async def _run(code: str, namespace: dict[str, Any]) -> None:
    compiled = compile(code, str(DOC), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    pending = eval(compiled, namespace)  # a block that awaits compiles to a coroutine
    if pending is not None:
        await pending


async def test_the_getting_started_blocks_run_as_written(store: Any) -> None:
    declare = _block("# myproject/jobs.py")
    assert DOC_APP in declare
    ours = f"App({store.url!r}, schema={store.schema!r}, auto_migrate=True)"
    namespace: dict[str, Any] = {}
    await _run(declare.replace(DOC_APP, ours), namespace)
    app: App = namespace["app"]
    send_email: JobHandle[Any, Any] = namespace["send_email"]
    assert (send_email.queue, send_email.max_attempts, send_email.timeout) == ("emails", 5, 30)
    assert namespace["build_report"].context_param == "ctx"
    enqueue = _block("job_id = await send_email.enqueue(")
    namespace["recipients"] = ["x@b.c", "y@b.c"]
    caller = store.dialect == "postgres"
    if not caller:
        lines = enqueue.splitlines()
        enqueue = "\n".join(line for line in lines if CALLER_LINE not in line)
    try:
        await app.open()
        if caller:
            async with await psycopg.AsyncConnection.connect(store.url) as conn:
                namespace["conn"] = conn
                await _run(enqueue, namespace)
                await conn.commit()
        else:
            await _run(enqueue, namespace)
        summary = await app.backend.stats_summary()
        # One, one keyed and delayed, one sync, two bulk, two bulk at priority 5, one in the
        # caller's transaction.
        assert summary.pending == 7 + caller
        again = await send_email.options(idempotency_key="welcome:42").enqueue(
            to="a@b.c", subject="hi"
        )
        assert again.duplicate
        job = await app.get_job(namespace["job_id"])
        assert job is not None and (job.queue, job.type) == ("emails", "send_email")
        # What the prose says the types check, checked at run time too.
        with pytest.raises(ValidationError, match="arguments"):
            await send_email.enqueue(too="x")  # type: ignore[call-arg]
    finally:
        await app.close()


async def test_the_readmes_thirty_seconds_run_as_written(store: Any) -> None:
    readme = DOC.parents[1] / "README.md"
    blocks = re.findall(r"```python\n(.*?)```", readme.read_text("utf-8"), re.S)
    [block] = [b for b in blocks if "## " not in b and "send_email.options(" in b]
    doc_app = 'App("sqlite:///jobs.db")'
    assert doc_app in block
    ours = f"App({store.url!r}, schema={store.schema!r}, auto_migrate=True)"
    namespace: dict[str, Any] = {}
    await _run(block.replace(doc_app, ours), namespace)
    app: App = namespace["app"]
    try:
        assert not namespace["job_id"].duplicate
        assert (await app.backend.stats_summary()).pending == 3
    finally:
        await app.close()
