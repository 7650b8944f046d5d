"""Celery's task, calling, retry, beat and app options: what each becomes in chokaq, and the
clear error every unsupported one raises (none is ignored). Nothing here needs a database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from chokaq import App, ConfigurationError, FailureReason, JobContext, ValidationError
from chokaq.compat.celery import Celery, MaxRetriesExceededError, Task, crontab, shared_task
from chokaq.compat.celery.canvas import Tail
from chokaq.compat.celery.options import CALL_OPTIONS, TASK_OPTIONS
from chokaq.compat.celery.tasks import handler
from chokaq.models import JobOutcome, Pillar
from chokaq.outcomes import Retry as Deferral


def field_of(call: Any) -> str:
    with pytest.raises(ValidationError) as refused:
        call()
    return refused.value.field


def test_task_options_become_the_job_types_own(offline: Celery) -> None:
    @offline.task(
        name="shop.send",
        queue="emails",
        priority=7,
        max_retries=4,
        time_limit=60,
        soft_time_limit=30,
        rate_limit="10/m",
        autoretry_for=(ConnectionError,),
        retry_backoff=2,
        retry_backoff_max=100,
        expires=timedelta(minutes=5),
    )
    def send(to: str) -> None: ...

    handle = offline.app.handlers["shop.send"]
    assert (handle.queue, handle.priority, handle.max_attempts) == ("emails", 7, 5)
    assert handle.timeout == 30.0  # the first limit to expire ends the job
    assert handle.rate_limit == "10/m" and handle.expires_after_seconds == 300
    assert handle.retry_on == (ConnectionError,)
    policy = handle.retry
    assert policy is not None
    assert (policy.base_delay_seconds, policy.multiplier, policy.max_delay_seconds) == (2, 2, 100)
    assert policy.jitter_seconds == 2 and policy.max_job_age_seconds is None


def test_celerys_defaults(offline: Celery) -> None:
    @offline.task
    def plain() -> None: ...

    handle = offline.app.handlers[f"{__name__}.test_celerys_defaults.<locals>.plain"]
    # Celery's default queue and lowest priority; three retries; nothing retried unless asked.
    assert (handle.queue, handle.priority, handle.max_attempts) == ("celery", 0, 4)
    assert handle.retry_on == ()
    assert handle.retry is not None and handle.retry.base_delay_seconds == 180
    assert handle.retry.multiplier == 1 and handle.timeout is None and handle.rate_limit is None


def test_max_retries_none_is_chokaqs_most_attempts(offline: Celery) -> None:
    @offline.task(name="forever", max_retries=None, retry_backoff=True, retry_jitter=False)
    def forever() -> None: ...

    handle = offline.app.handlers["forever"]
    assert handle.max_attempts == 1000
    assert handle.retry is not None and handle.retry.jitter_seconds == 0


def test_a_number_is_a_rate_per_second(offline: Celery) -> None:
    @offline.task(name="rated", rate_limit=5)
    def rated() -> None: ...

    assert offline.app.handlers["rated"].rate_limit == "5/s"


@pytest.mark.parametrize(
    "option",
    [
        "serializer",
        "base",
        "typing",
        "throws",
        "track_started",
        "reject_on_worker_lost",
        "dont_autoretry_for",
        "shadow",
        "trail",
        "store_errors_even_if_ignored",
    ],
)
def test_every_unsupported_task_option_is_refused_by_name(offline: Celery, option: str) -> None:
    assert field_of(lambda: offline.task(**{option: True})) == option
    assert field_of(lambda: shared_task(**{option: True})) == option
    assert option not in TASK_OPTIONS


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("priority", "high"),
        ("max_retries", -1),
        ("max_retries", 1000),
        ("rate_limit", "ten a second"),
        ("rate_limit", 0),
        ("retry_backoff", -1),
        ("autoretry_for", ValueError),
        ("time_limit", 0),
        ("default_retry_delay", float("nan")),
        ("bind", "yes"),
        ("queue", " "),
        ("expires", -5),
        ("expires", 0),
    ],
)
def test_bad_task_option_values_name_the_option(
    offline: Celery, option: str, value: object
) -> None:
    assert field_of(lambda: offline.task(**{option: value})).startswith(option)


def calls_of(celery: Celery) -> Task:
    @celery.task(name="calls", queue="q", priority=3, expires=600)
    def calls(x: int, y: int = 0) -> int:
        return x + y

    return calls


def prepared(task: Task, **options: Any) -> Any:
    sig = task.s(1).set(**options)
    jobs, _, _ = sig.jobs(Tail())
    return jobs[0]


def test_calling_options_become_enqueue_options(offline: Celery) -> None:
    task = calls_of(offline)
    job = prepared(task)
    assert (job.queue, job.priority, job.expires_after_seconds) == ("q", 3, 600)
    assert job.payload == '{"args":[1],"kwargs":{}}'
    job = prepared(task, countdown=30, queue="other", priority=9, expires=5, time_limit=20)
    assert (job.delay_seconds, job.queue, job.priority) == (30, "other", 9)
    assert (job.expires_after_seconds, job.timeout_seconds) == (5, 20)
    at = datetime(2030, 1, 2, tzinfo=UTC)
    job = prepared(task, eta=at, expires=at + timedelta(hours=1))
    assert job.run_at == at and job.expires_at == at + timedelta(hours=1)
    assert prepared(task, countdown=timedelta(minutes=2)).delay_seconds == 120


@pytest.mark.parametrize(
    "option",
    [
        "routing_key",
        "exchange",
        "task_id",
        "serializer",
        "headers",
        "retry_policy",
        "shadow",
        "retry",
        "compression",
        "ignore_result",
        "add_to_parent",
    ],
)
def test_every_unsupported_calling_option_is_refused_by_name(offline: Celery, option: str) -> None:
    task = calls_of(offline)
    assert field_of(lambda: task.apply_async((1,), **{option: "x"})) == option
    assert option not in CALL_OPTIONS


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"countdown": -1}, "countdown"),
        ({"eta": datetime(2030, 1, 1)}, "eta"),  # naive
        ({"countdown": 1, "eta": datetime(2030, 1, 1, tzinfo=UTC)}, "eta"),
        ({"expires": "soon"}, "expires"),
        ({"priority": 10**9}, "priority"),
        ({"time_limit": -1}, "time_limit"),
        ({"link": "not a signature"}, "link[0]"),
        ({"link_error": None}, None),
    ],
)
def test_bad_calling_option_values_name_the_option(
    offline: Celery, options: dict[str, Any], field: str | None
) -> None:
    task = calls_of(offline)
    if field is None:  # None is "not given", as in Celery
        assert prepared(task, **options).payload
        return
    assert field_of(lambda: prepared(task, **options)) == field


def test_the_arguments_are_checked_before_anything_is_written(offline: Celery) -> None:
    task = calls_of(offline)
    assert field_of(lambda: task.s(object()).jobs(Tail())) == "payload"  # not JSON
    assert field_of(lambda: task.s().jobs(Tail())) == "arguments"  # x is missing
    assert field_of(lambda: task.s(1, 2, 3).jobs(Tail())) == "arguments"
    assert field_of(lambda: task.s(1, z=2).jobs(Tail())) == "arguments"
    # A .s() child after a task takes its parent's value first: one argument fewer is given.
    parent = task.s(1)
    jobs, _, _ = (parent | task.s()).jobs(Tail())
    assert len(jobs) == 2
    assert field_of(lambda: (parent | task.s(1, 2)).jobs(Tail())) == "arguments"
    assert len((parent | task.si(5)).jobs(Tail())[0]) == 2


def context(attempt: int = 1) -> JobContext:
    return JobContext(
        job_id="01a252e5-fa81-73cb-91e9-ef7ea237db42",
        type="t",
        queue="celery",
        attempt=attempt,
        max_attempts=4,
        created_at=datetime.now(UTC),
        tags=(),
        worker_id="w1",
    )


def test_self_retry_is_a_returned_retry_and_request_counts_retries(offline: Celery) -> None:
    seen = []

    @offline.task(bind=True, name="polls", max_retries=3, default_retry_delay=7)
    def polls(self: Task, key: str) -> str:
        seen.append((self.request.id, self.request.retries, self.request.args))
        if key == "later":
            raise self.retry(exc=LookupError("not ready"), countdown=2)
        if key == "default":
            raise self.retry()
        return key

    run = handler(polls)
    deferral = run(context(attempt=2), args=["later"])
    assert deferral == Deferral(after_seconds=2.0, reason="Retry: LookupError('not ready')")
    assert run(context(), args=["default"]).after_seconds == 7.0
    assert run(context(), args=["now"]) == "now"
    assert seen[0] == ("01a252e5-fa81-73cb-91e9-ef7ea237db42", 1, ("later",))
    with pytest.raises(MaxRetriesExceededError) as exhausted:
        run(context(attempt=4), args=["later"])  # three retries used
    assert isinstance(exhausted.value.__cause__, LookupError)


def test_retry_refuses_what_it_cannot_honour(offline: Celery) -> None:
    @offline.task(bind=True, name="r", max_retries=2)
    def r(self: Task, option: str) -> None:
        raise self.retry(**{option: 5})

    run = handler(r)
    assert field_of(lambda: run(context(), args=["max_retries"])) == "max_retries"
    assert field_of(lambda: run(context(), args=["args"])) == "args"
    assert field_of(lambda: run(context(), args=["countdown_"])) == "countdown_"


def test_a_parents_value_comes_first_for_a_s_child(offline: Celery) -> None:
    @offline.task(name="child")
    def child(*args: Any) -> list[Any]:
        return list(args)

    run = handler(child)
    ctx = context()
    ctx.parent_results = {"p1": 10, "p2": 20}
    assert run(ctx, args=[1], results_of=["p1"]) == [10, 1]
    assert run(ctx, args=[1], results_of=["p1", "p2"], as_list=True) == [[10, 20], 1]
    assert run(ctx, args=[1]) == [1]


def test_calling_a_task_runs_it_here(offline: Celery) -> None:
    @offline.task(bind=True, name="direct")
    def direct(self: Task, x: int) -> tuple[int, bool]:
        return x, self.request.called_directly

    assert direct(3) == (3, True)
    assert direct.s(4)() == (4, True)

    @offline.task(bind=True, name="retries_directly")
    def retries_directly(self: Task) -> None:
        raise self.retry(exc=KeyError("k"))

    with pytest.raises(KeyError):  # as Celery: a direct call raises the exception given
        retries_directly()


def test_shared_task_binds_to_the_current_app_and_to_apps_created_after(tmp_path: Any) -> None:
    @shared_task(name="early")
    def early() -> None: ...

    first = Celery(App(f"sqlite:///{tmp_path / 'a.db'}"))
    assert "early" in first.app.handlers and early.app is first

    @shared_task(name="late")
    def late() -> None: ...

    assert "late" in first.app.handlers
    second = Celery(App(f"sqlite:///{tmp_path / 'b.db'}"))
    assert {"early", "late"} <= second.app.handlers.keys()


def test_the_app_refuses_a_broker_a_name_and_unknown_settings(tmp_path: Any) -> None:
    app = App(f"sqlite:///{tmp_path / 'a.db'}")
    with pytest.raises(ConfigurationError, match="takes a chokaq App"):
        Celery("proj")  # type: ignore[arg-type]
    assert field_of(lambda: Celery(app, broker="redis://")) == "broker"
    celery = Celery(app, timezone="Europe/Amsterdam")
    assert field_of(lambda: setattr(celery.conf, "task_routes", {})) == "task_routes"
    assert field_of(lambda: celery.conf.update(worker_prefetch_multiplier=1)) == (
        "worker_prefetch_multiplier"
    )
    assert field_of(lambda: celery.conf.update(timezone="Mars/Olympus")) == "timezone"


def test_a_task_name_is_registered_once(offline: Celery) -> None:
    @offline.task(name="once")
    def once() -> None: ...

    with pytest.raises(ConfigurationError, match="registered twice"):

        @offline.task(name="once")
        def again() -> None: ...


def test_crontab_is_a_cron_expression(offline: Celery) -> None:
    assert crontab().expression == "* * * * *"
    assert crontab(minute=0, hour="*/3").expression == "0 */3 * * *"
    assert crontab(minute=[0, 30], day_of_week="mon-fri").expression == "0,30 * * * mon-fri"
    assert crontab(0, 4, day_of_month="1", month_of_year="1,7").expression == "0 4 1 1,7 *"
    assert field_of(lambda: crontab(minute=61)).startswith("crontab.")
    assert field_of(lambda: crontab(nowfun=None)) == "nowfun"


def test_beat_entries_are_declared_schedules(offline: Celery) -> None:
    @offline.task(name="report", queue="reports", priority=4)
    def report(kind: str, full: bool = False) -> None: ...

    offline.conf.beat_schedule = {
        "every-5-min": {"task": "report", "schedule": 300.0, "args": ("short",)},
        "nightly": {
            "task": "report",
            "schedule": crontab(minute=0, hour=2),
            "kwargs": {"kind": "full", "full": True},
            "options": {"queue": "night", "priority": 9, "expires": 3600},
        },
        "hourly": {"task": "later.task", "schedule": timedelta(hours=1)},
    }
    every, nightly = offline.app.periodics["every-5-min"], offline.app.periodics["nightly"]
    assert (every.type, every.queue, every.priority, every.every_seconds) == (
        "report",
        "reports",
        4,
        300.0,
    )
    assert every.kwargs == '{"args":["short"],"kwargs":{}}' and every.misfire == "latest"
    assert (nightly.queue, nightly.priority, nightly.cron) == ("night", 9, "0 2 * * *")
    assert nightly.expires_after_seconds == 3600 and every.expires_after_seconds is None
    hourly = offline.app.periodics["hourly"]  # its task is not registered yet
    assert (hourly.queue, hourly.every_seconds) == ("celery", 3600.0)

    @offline.task(name="later.task", queue="late", expires=60)
    def later() -> None: ...

    hourly = offline.app.periodics["hourly"]  # the task's queue and expiry, once known
    assert (hourly.queue, hourly.expires_after_seconds) == ("late", 60)
    offline.conf.beat_schedule = {"nightly": offline.conf.beat_schedule["nightly"]}
    assert set(offline.app.periodics) == {"nightly"}


@pytest.mark.parametrize(
    ("entry", "field"),
    [
        ({"task": "t", "schedule": 10, "relative": True}, "beat_schedule['e'].relative"),
        ({"task": "t", "schedule": 10, "app": 1}, "beat_schedule['e'].app"),
        (
            {"task": "t", "schedule": 10, "options": {"routing_key": "x"}},
            "beat_schedule['e'].routing_key",
        ),
        ({"task": "t", "schedule": "daily"}, "beat_schedule['e'].schedule"),
        ({"task": "t", "schedule": 0.5}, "beat_schedule['e'].every_seconds"),
        ({"task": "", "schedule": 10}, "beat_schedule['e'].task"),
        ({"task": "t", "schedule": 10, "args": "x"}, "beat_schedule['e'].args"),
        ({"task": "t", "schedule": 10, "options": {"expires": 0}}, "beat_schedule['e'].expires"),
        (
            {"task": "t", "schedule": 10, "options": {"priority": "hi"}},
            "beat_schedule['e'].priority",
        ),
    ],
)
def test_bad_beat_entries_name_the_entry_and_key(
    offline: Celery, entry: dict[str, Any], field: str
) -> None:
    def declare() -> None:
        offline.conf.beat_schedule = {"e": entry}

    assert field_of(declare) == field


def test_celery_calls_the_layer_has_not_say_so_and_what_to_write_instead(offline: Celery) -> None:
    @offline.task(name="t")
    def t() -> None: ...

    with pytest.raises(AttributeError, match=r"Celery.autodiscover_tasks is not supported.*import"):
        offline.autodiscover_tasks()
    with pytest.raises(AttributeError, match=r"Task.map is not supported.*group"):
        t.map([1])
    with pytest.raises(AttributeError, match=r"AsyncResult.forget is not supported"):
        offline.AsyncResult("01a252e5-fa81-73cb-91e9-ef7ea237db42").forget()
    assert not hasattr(t, "chunks") and not hasattr(offline, "control")


def test_the_public_names_are_sorted_and_importable() -> None:
    import chokaq.compat.celery as layer

    assert layer.__all__ == sorted(layer.__all__)
    assert all(hasattr(layer, name) for name in layer.__all__)


def test_a_link_error_gets_celerys_errback_arguments_only_when_the_task_failed(
    offline: Celery,
) -> None:
    @offline.task(name="on_error")
    def on_error(request: Any, exc: Any, traceback: Any, note: str) -> list[Any]:
        return [request.id, request.task, exc.error_type, exc.reason, traceback, note]

    @offline.task(name="on_error_old")
    def on_error_old(task_id: str) -> str:
        return task_id

    failed_id = "01a252e5-fa6d-7163-9934-da1942b885e4"
    ctx = context()
    ctx.parent_outcomes = {
        failed_id: JobOutcome(
            Pillar.DLQ, None, FailureReason.TRANSIENT, "boom\nTraceback...", "builtins.OSError"
        )
    }
    errback_of = [failed_id, "scan"]
    assert handler(on_error)(ctx, args=["n"], errback_of=errback_of) == [
        failed_id,
        "scan",
        "builtins.OSError",
        FailureReason.TRANSIENT,
        "boom\nTraceback...",
        "n",
    ]
    assert handler(on_error_old)(ctx, errback_of=errback_of) == failed_id
    ctx.parent_outcomes = {failed_id: JobOutcome(Pillar.ARCHIVE, result="1")}
    assert handler(on_error)(ctx, args=["n"], errback_of=errback_of) is None  # not called
    assert on_error.takes_request and not on_error_old.takes_request
