from django.db import models


class Order(models.Model):
    item = models.CharField(max_length=100)
    receipt_sent = models.BooleanField(default=False)


class TaskEvent(models.Model):
    """One signal of the task framework, as shop.apps records it."""

    result_id = models.CharField(max_length=64)
    signal = models.CharField(max_length=20)
    status = models.CharField(max_length=20)
