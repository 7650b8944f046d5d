from django.db import transaction
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from chokaq.contrib.django import enqueue, enqueue_on_commit
from shop.jobs import send_receipt
from shop.models import Order
from shop.tasks import price_order, refund_order, send_receipt_task


@csrf_exempt
@require_POST
def create_order(request: HttpRequest) -> JsonResponse:
    item = request.GET["item"]
    with transaction.atomic():
        order = Order.objects.create(item=item)
        job_id = enqueue(send_receipt, order_id=order.pk)  # in this transaction
        if item == "fail":
            raise ValueError("out of stock")  # the order and its job roll back together
    return JsonResponse({"order": order.pk, "job_id": job_id})


@csrf_exempt
@require_POST
def create_order_later(request: HttpRequest) -> JsonResponse:
    with transaction.atomic():
        order = Order.objects.create(item=request.GET["item"])
        enqueue_on_commit(send_receipt, order_id=order.pk)  # once the block has committed
    return JsonResponse({"order": order.pk})


@csrf_exempt
@require_POST
def create_order_with_tasks(request: HttpRequest) -> JsonResponse:
    """Django's task API: the order and its three tasks commit together (on PostgreSQL in this
    transaction, elsewhere on commit), or not at all (``item=fail``)."""
    item = request.GET["item"]
    with transaction.atomic():
        order = Order.objects.create(item=item)
        results = {
            task.name: task.enqueue(order_id=order.pk).id
            for task in (send_receipt_task, price_order, refund_order)
        }
        if item == "fail":
            raise ValueError("out of stock")  # the order and its tasks roll back together
    return JsonResponse({"order": order.pk, "results": results})


def task_result(request: HttpRequest, name: str, result_id: str) -> JsonResponse:
    """A task's result as Django's API reads it."""
    task = {t.name: t for t in (send_receipt_task, price_order, refund_order)}[name]
    result = task.get_result(result_id)
    return JsonResponse(
        {
            "status": str(result.status),
            "return_value": result.return_value if result.status == "SUCCESSFUL" else None,
            "errors": [
                {"class": e.exception_class_path, "traceback": e.traceback} for e in result.errors
            ],
            "worker_ids": result.worker_ids,
            "attempts": result.attempts,
            "times": [
                str(t) if t else None
                for t in (
                    result.enqueued_at,
                    result.started_at,
                    result.last_attempted_at,
                    result.finished_at,
                )
            ],
            "queue": result.task.queue_name,
            "priority": result.task.priority,
        }
    )
