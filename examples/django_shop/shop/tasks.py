"""The shop's Django tasks (``django.tasks`` on Django 6, the ``django-tasks`` backport before):
run by ``manage.py chokaq_worker`` with no registration of their own."""

from typing import Any

try:
    from django.tasks import TaskContext, task
except ImportError:  # Django 4.2-5.2
    from django_tasks import TaskContext, task

from shop.models import Order


class OutOfStock(Exception):
    """What ``refund_order`` raises: its result is FAILED, naming this class."""


@task(priority=20, queue_name="receipts", takes_context=True)
def send_receipt_task(context: TaskContext, order_id: int) -> dict[str, Any]:
    """Marks the order's receipt sent; returns which attempt did it."""
    Order.objects.filter(pk=order_id).update(receipt_sent=True)
    return {"order": order_id, "attempt": context.attempt}


@task()
async def price_order(order_id: int) -> int:
    """An async task: the async ORM, on the worker thread's own event loop."""
    order = await Order.objects.aget(pk=order_id)
    return len(order.item) * 100


@task(priority=-50)
def refund_order(order_id: int) -> None:
    raise OutOfStock(f"order {order_id}: nothing to refund")
