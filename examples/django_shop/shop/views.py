from django.db import transaction
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from chokaq.contrib.django import enqueue, enqueue_on_commit
from shop.jobs import send_receipt
from shop.models import Order


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
