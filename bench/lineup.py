"""Which systems, in which configurations and with which handler work, the peers part compares:
the names ``--systems`` takes (a family such as ``celery``, or one configuration such as
``celery-redis-prefork``), and the check that each chosen one can run here (its packages import,
its broker answers). It measures nothing itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bench.brokers import broker_systems, brokers_available
from bench.outside import REDIS_URL, WORK_DB, reachable, redis_url
from bench.systems import (
    WORKS,
    chokaq_def,
    chokaq_wide,
    peers_available,
    pg_peers,
    postgres_systems,
    with_work,
)


def every_configuration() -> list[Any]:
    """Every configuration this suite knows, available here or not, with the no-op handler."""
    pg = postgres_systems(include_peers=False)
    return [*pg, chokaq_def(), chokaq_wide(), *pg_peers(), *broker_systems()]


def _matches(key: str, name: str) -> bool:
    return key == name or key.startswith(name + "-")


def unavailable(key: str) -> str:
    """Why configuration ``key`` cannot run here, or "" when it can."""
    if key.startswith(("pgqueuer", "procrastinate")):
        family = key.split("-")[0]
        return "" if peers_available()[family] else f"{family} is not installed"
    if key.startswith(("celery", "rq")):
        found = brokers_available()
        need = "rq" if key.startswith("rq") else "-".join(key.split("-")[:2])
        return "" if found[need] else f"{need}: its packages or its broker are missing"
    return ""


def select(names: Sequence[str] | None, works: Sequence[str]) -> list[Any]:
    """The configurations named (all when ``names`` is None; those that cannot run here are
    then left out with a line saying why), each with every handler work in ``works``. A name
    that matches nothing, or names a configuration that cannot run, is an error."""
    for work in works:
        if work not in WORKS:
            raise SystemExit(f"--works: {work!r} is not one of {', '.join(WORKS)}")
    if "incr" in works and not redis_reachable():
        if names is not None:
            raise SystemExit(f"--works incr: no Redis answers at {REDIS_URL}")
        print(f"  (left out: the INCR handler: no Redis answers at {REDIS_URL})", flush=True)
        works = [w for w in works if w != "incr"]
    known = every_configuration()
    if names is None:
        chosen = []
        for system in known:
            why = unavailable(system.key)
            if why:
                print(f"  (left out: {system.label}: {why})", flush=True)
            else:
                chosen.append(system)
    else:
        chosen = [s for s in known if any(_matches(s.key, n) for n in names)]
        for name in names:
            if not any(_matches(s.key, name) for s in known):
                raise SystemExit(f"--systems: {name!r} names no configuration; known: {_keys()}")
        for system in chosen:
            why = unavailable(system.key)
            if why:
                raise SystemExit(f"--systems: {system.key} cannot run here: {why}")
    return [with_work(system, work) for work in works for system in chosen]


def redis_reachable() -> bool:
    """Whether the Redis the INCR handler's work goes to answers."""
    return reachable(redis_url(WORK_DB))


def _keys() -> str:
    return ", ".join(s.key for s in every_configuration())
