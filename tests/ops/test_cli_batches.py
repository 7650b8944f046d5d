"""``chokaq batches sizes`` and ``chokaq batches of`` through the real CLI, on both backends:
a type's batch sizes and a job's batches with its siblings, as JSON and as tables; a bad
argument is refused naming it."""

from __future__ import annotations

import json
from typing import Any

from chokaq.models import NewJob, SucceedMove

from .conftest import Cli, on_store


def ran_as_batches(store: Any, sizes: list[int]) -> list[list[str]]:
    """Batches of ``sizes`` ``embed`` jobs, claimed and succeeded as a worker would."""

    async def run(backend: Any) -> list[list[str]]:
        out = []
        for size in sizes:
            await backend.jobs_enqueue([NewJob("embed", '{"text": "x"}') for _ in range(size)])
            claim = await backend.jobs_claim_batch(
                worker_id="w1", type="embed", limit=size, wait_seconds=0
            )
            await backend.jobs_finalize(moves=[SucceedMove(j.lease, 0.1) for j in claim.jobs])
            out.append([job.id for job in claim.jobs])
        return out

    return on_store(store, run)  # type: ignore[no-any-return]


def test_a_types_batch_sizes_and_a_jobs_batches(cli: Cli, store: Any) -> None:
    cli("migrate")
    first, second = ran_as_batches(store, [3, 2])
    sizes = json.loads(cli("batches", "sizes", "embed", "--json").output)
    assert (sizes["batches"], sizes["jobs"], sizes["max_size"]) == (2, 5, 3)
    assert [b["size"] for b in sizes["recent"]] == [2, 3]
    table = cli("batches", "sizes", "embed", "--since", "2h").output
    assert "embed: 2 batch(es), 5 job(s)" in table and "largest 3" in table
    mine = json.loads(cli("batches", "of", first[0], "--json").output)
    [batch] = mine["batches"]
    assert batch["size"] == 3 and sorted(batch["siblings"]) == sorted(first[1:])
    assert second[1] in cli("batches", "of", second[0]).output
    none = cli("batches", "sizes", "other", "--json").output
    assert json.loads(none)["batches"] == 0


def test_bad_arguments_are_refused_naming_them(cli: Cli, store: Any) -> None:
    cli("migrate")
    assert "--since" in cli("batches", "sizes", "embed", "--since", "soon", expect=2).output
    assert "ID" in cli("batches", "of", "not-an-id", expect=2).output
