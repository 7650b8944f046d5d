"""``after_outcome`` and ``pass_results`` as enqueue options, on both backends: every way to
enqueue takes them (``options``, the raw jobs of ``app.raw``), each bad value is refused naming
its field before anything is written, and a handler too short for its parents' results is
refused when the job is prepared."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from chokaq import App, JobContext, ValidationError


def _handlers(app: App) -> tuple[object, object]:
    @app.job()
    async def source() -> int:
        return 1

    @app.job()
    async def sink(value: int, ctx: JobContext, label: str = "") -> str:
        return f"{label}{value}"

    return source, sink


async def test_the_options_land_on_the_job_in_every_way_to_enqueue(
    make_app: Callable[..., App],
) -> None:
    app = make_app()
    source, sink = _handlers(app)
    parent = source.prepare()  # type: ignore[attr-defined]
    job = sink.options(after=[parent], after_outcome="any", pass_results=True).prepare(label="x")  # type: ignore[attr-defined]
    assert (job.after_outcome, job.pass_results, job.payload) == ("any", True, '{"label":"x"}')
    raw = app.raw("sink", {"label": "y"}, after=[parent], after_outcome="any", pass_results=True)
    assert (raw.after_outcome, raw.pass_results) == ("any", True)
    plain = sink.options(after=[parent]).prepare(value=3)  # type: ignore[attr-defined]
    assert (plain.after_outcome, plain.pass_results) == ("success", False)
    # The spelling: options in prepare's keywords, where the handler has no such name.
    keyword = sink.prepare(label="z", after=[parent], after_outcome="any", pass_results=True)  # type: ignore[attr-defined]
    assert (keyword.after, keyword.after_outcome, keyword.pass_results) == (
        (parent.id,),
        "any",
        True,
    )
    await app.enqueue_many([parent, job, raw, plain])
    view = await app.get_job(job.id)
    assert view is not None and view.after_outcome == "any" and view.state == "waiting"


@pytest.mark.parametrize(
    ("options", "call", "field"),
    [
        ({"after_outcome": "all"}, {"value": 1}, "after_outcome"),
        ({"after_outcome": 1}, {"value": 1}, "after_outcome"),
        ({"pass_results": "yes"}, {"label": "x"}, "pass_results"),
        ({"pass_results": True, "after": None}, {"value": 1}, "pass_results"),
    ],
)
async def test_bad_values_are_refused_at_enqueue_naming_the_field(
    make_app: Callable[..., App], options: dict[str, object], call: dict[str, object], field: str
) -> None:
    app = make_app()
    source, sink = _handlers(app)
    parent = source.prepare()  # type: ignore[attr-defined]
    given = {"after": [parent], **options}
    with pytest.raises(ValidationError) as caught:
        job = sink.options(**given).prepare(**call)  # type: ignore[attr-defined]
        await app.enqueue_many([parent, job])
    assert caught.value.field.endswith(field)
    assert await app.get_job(parent.id) is None


def test_a_handler_without_room_for_its_parents_results_is_refused(
    make_app: Callable[..., App],
) -> None:
    app = make_app()
    source, sink = _handlers(app)
    parents = [source.prepare() for _ in range(3)]  # type: ignore[attr-defined]
    with pytest.raises(ValidationError) as caught:
        sink.options(after=parents, pass_results=True).prepare()  # type: ignore[attr-defined]
    assert caught.value.field == "pass_results"
    assert "3 leading positional parameter(s)" in str(caught.value)
    assert str(caught.value).endswith("it has 2")  # value and label: the context is skipped
    # The parameter a result fills cannot be given by the call too.
    with pytest.raises(ValidationError) as twice:
        sink.options(after=parents[:1], pass_results=True).prepare(value=1)  # type: ignore[attr-defined]
    assert twice.value.field == "arguments"
