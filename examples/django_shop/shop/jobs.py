"""The shop's jobs: one App, its handlers (imported by the views and by the worker)."""

import os

from chokaq import App

app = App(os.environ["CHOKAQ_DATABASE_URL"], schema=os.environ.get("CHOKAQ_SCHEMA", "chokaq"))


@app.job(queue="receipts")
def send_receipt(order_id: int) -> None:
    from shop.models import Order  # the worker runs under manage.py: Django is set up

    Order.objects.filter(pk=order_id).update(receipt_sent=True)
