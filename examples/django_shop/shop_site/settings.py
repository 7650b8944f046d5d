"""Settings of the example shop: Django's database from DATABASE_URL (PostgreSQL, or SQLite as
``sqlite:///path``), chokaq's App from shop.jobs, and Django's tasks on chokaq."""

import os
from urllib.parse import urlsplit

import django

_db = urlsplit(os.environ["DATABASE_URL"])
_schema = os.environ.get("DJANGO_DB_SCHEMA")

SECRET_KEY = "example-only-not-secret"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
INSTALLED_APPS = ["django.contrib.contenttypes", "chokaq.contrib.django", "shop"]
if django.VERSION < (6,):
    INSTALLED_APPS.append("django_tasks")  # the backport of django.tasks
ROOT_URLCONF = "shop_site.urls"
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
if _db.scheme == "sqlite":
    DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": _db.path}}
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.postgresql",  # psycopg 3 when installed
            "NAME": _db.path.lstrip("/"),
            "USER": _db.username or "",
            "PASSWORD": _db.password or "",
            "HOST": _db.hostname or "",
            "PORT": str(_db.port or ""),
            "OPTIONS": {"options": f"-c search_path={_schema}"} if _schema else {},
        }
    }
CHOKAQ_APP = "shop.jobs:app"
# Django's task framework on chokaq: @task functions of the installed apps, run by
# `manage.py chokaq_worker`. QUEUES lists the queues tasks may name (Django's rule).
TASKS = {
    "default": {
        "BACKEND": "chokaq.contrib.django.tasks.ChokaqBackend",
        "QUEUES": ["default", "receipts"],
        # max_attempts: runs of a task that raises (1, the default: it has failed at once).
        "OPTIONS": {"app": CHOKAQ_APP, "max_attempts": int(os.environ.get("TASK_ATTEMPTS", "1"))},
    }
}
