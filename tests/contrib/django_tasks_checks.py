"""Run inside the example shop (``manage.py shell -c``) by test_django_tasks: the backend's
refusals, deferral, async calls and the worker's choice of tasks, printed as one JSON line.

Not a test module of its own (no ``test_`` prefix): it needs Django set up by the shop."""

import asyncio
import json
import os
import sys
import uuid
from datetime import UTC, datetime, timedelta

from django.db import connection, transaction
from shop.jobs import app
from shop.models import Order
from shop.tasks import price_order, refund_order, send_receipt_task

from chokaq.contrib.django.runner import serve
from chokaq.contrib.django.tasks import ChokaqBackend
from chokaq.errors import ValidationError

try:
    from django.tasks import task_backends
    from django.tasks.exceptions import InvalidTask, TaskResultDoesNotExist
except ImportError:
    from django_tasks import task_backends
    from django_tasks.exceptions import InvalidTaskError as InvalidTask
    from django_tasks.exceptions import TaskResultDoesNotExist


def refusal(call):
    try:
        call()
    except Exception as exc:
        return [
            getattr(exc, "field", None),
            isinstance(exc, InvalidTask),
            isinstance(exc, ValidationError),
        ]
    return "accepted"


def backend_error(options):
    try:
        ChokaqBackend("x", options)
    except Exception as exc:
        return str(exc)
    return "accepted"


order = Order.objects.create(item="pen")
later = datetime.now(UTC) + timedelta(hours=1)
refused = {
    "queue_name": refusal(
        lambda: send_receipt_task.using(queue_name=" receipts").enqueue(order_id=1)
    ),
    "queue": refusal(lambda: send_receipt_task.using(queue_name="nope").enqueue(order_id=1)),
    "priority": refusal(lambda: send_receipt_task.using(priority=101).enqueue(order_id=1)),
    "delay": refusal(lambda: refund_order.using(run_after=timedelta(days=400)).enqueue(order_id=1)),
    "run_after": refusal(
        lambda: send_receipt_task.using(run_after=datetime.now()).enqueue(order_id=1)
    ),
    "payload": refusal(lambda: refund_order.enqueue(order_id="x" * 2_000_000)),
    "kwargs": refusal(lambda: refund_order.enqueue(order_id=object())),
}
backend = {
    "unknown": backend_error({"OPTIONS": {"retries": 3}}),
    "max_attempts": backend_error({"OPTIONS": {"max_attempts": None}}),
    "app": backend_error({"OPTIONS": {"app": "shop.jobs"}}),
    "database": backend_error({"OPTIONS": {"database": "replica"}}),
    "queues": backend_error({"QUEUES": [" padded "]}),
}


def result_error(result_id):
    try:
        send_receipt_task.get_result(result_id)
    except TaskResultDoesNotExist as exc:
        return [True, isinstance(exc, ValidationError)]
    return "found"


deferred = send_receipt_task.using(run_after=later).enqueue(order_id=order.pk)
delayed = send_receipt_task.using(run_after=timedelta(hours=1)).enqueue(order_id=order.pk)


async def use_async():
    result = await price_order.aenqueue(order_id=order.pk)
    read = await price_order.aget_result(result.id)
    return [str(result.status), str(read.status), read.id == result.id]


def inside_a_rolled_back_transaction():
    """Whether the task's job was written in the caller's transaction (seen by a read on
    that transaction), and whether its result exists once the transaction rolled back."""
    seen = None
    try:
        with transaction.atomic():
            enqueued = refund_order.enqueue(order_id=order.pk)
            if task_backends["default"].shared_connection() is not None:
                with connection.cursor() as cursor:
                    schema = os.environ["CHOKAQ_SCHEMA"]
                    cursor.execute(
                        f'SELECT count(*) FROM "{schema}".jobs_hot WHERE id = %s', [enqueued.id]
                    )
                    seen = cursor.fetchone()[0]
            raise RuntimeError("roll back")
    except RuntimeError:
        pass
    return [seen, result_error(enqueued.id)]


# A task declared outside every installed app: the worker must not serve it.
outside = os.environ["CHECKS_OUTSIDE"]
with open(os.path.join(outside, "outside.py"), "w") as module:
    module.write(
        "try:\n    from django.tasks import task\n"
        "except ImportError:\n    from django_tasks import task\n"
        "@task()\ndef odd_job() -> None: ...\n"
    )
sys.path.insert(0, outside)
__import__("outside")
system_check = [
    (message.id, message.msg.startswith("TASKS['x']: the chokaq App cannot be loaded"))
    for message in ChokaqBackend("x", {"OPTIONS": {"app": "nowhere:app"}}).check()
]
outcome = {
    "check": [system_check, list(task_backends["default"].check())],
    "refused": refused,
    "backend": backend,
    "get_result": {"malformed": result_error("nope"), "missing": result_error(str(uuid.uuid4()))},
    "deferred": [str(send_receipt_task.get_result(r.id).status) for r in (deferred, delayed)],
    "async": asyncio.run(use_async()),
    "rolled_back": inside_a_rolled_back_transaction(),
    "served": sorted(serve(app)),
}
# A job naming a module of no installed app, as anyone with the store could write.
app.enqueue_many_sync([app.raw("sneaky.boom", {})])
print(json.dumps(outcome))
