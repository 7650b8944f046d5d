"""The shop app: it records the task framework's signals as TaskEvent rows (in the web
process for ``task_enqueued``, in the worker for ``task_started`` and ``task_finished``)."""

from typing import Any

from django.apps import AppConfig


class ShopConfig(AppConfig):
    name = "shop"

    def ready(self) -> None:
        try:
            from django.tasks.signals import task_enqueued, task_finished, task_started
        except ImportError:  # Django 4.2-5.2
            from django_tasks.signals import task_enqueued, task_finished, task_started

        for signal, name in (
            (task_enqueued, "enqueued"),
            (task_started, "started"),
            (task_finished, "finished"),
        ):
            signal.connect(_recorder(name), weak=False)


def _recorder(name: str) -> Any:
    def record(sender: Any, task_result: Any, **kwargs: Any) -> None:
        from shop.models import TaskEvent

        TaskEvent.objects.create(
            result_id=task_result.id, signal=name, status=str(task_result.status)
        )

    return record
