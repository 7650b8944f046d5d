"""Plans of captured statements, for the PostgreSQL plan-shape tests: planned only, or run as a
prepared statement under a plan cache mode as the worker's lanes run them. Shapes, never times."""

from __future__ import annotations

import json
import re

import psycopg

from chokaq.storage.postgres.connection import LANE_OPTIONS

__all__ = ["nodes", "plan", "prepared_plan"]


def plan(pg, query, params):
    """The JSON plan of ``query`` (planned only, never executed)."""
    with pg.transaction(force_rollback=True):
        [[plan]] = pg.execute("EXPLAIN (FORMAT JSON) " + query, params).fetchall()
    return plan if isinstance(plan, list) else json.loads(plan)


def nodes(plan):
    stack = [plan[0]["Plan"]]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(node.get("Plans", ()))


def prepared_plan(store, query, params, *, plan_cache_mode):
    """The JSON plan of ``query`` run as a prepared statement under ``plan_cache_mode``, on a
    connection set up as the claim lane's is; executed (EXPLAIN ANALYZE) and rolled back."""
    order: list[str] = []

    def number(match):
        if match.group(1) not in order:
            order.append(match.group(1))
        return f"${order.index(match.group(1)) + 1}"

    body = re.sub(r"%\((\w+)\)[sb]", number, query)
    options = f"{LANE_OPTIONS} -c plan_cache_mode={plan_cache_mode}"
    with psycopg.connect(
        store.url, autocommit=True, options=options, cursor_factory=psycopg.ClientCursor
    ) as conn:
        conn.execute("PREPARE statement AS " + body)
        args = ", ".join(["%s"] * len(order))
        with conn.transaction(force_rollback=True):
            [[plan]] = conn.execute(
                f"EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE statement({args})",
                [params[name] for name in order],
            ).fetchall()
    return plan if isinstance(plan, list) else json.loads(plan)
