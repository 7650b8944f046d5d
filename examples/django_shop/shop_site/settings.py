"""Settings of the example shop: PostgreSQL from DATABASE_URL, chokaq's App from shop.jobs."""

import os
from urllib.parse import urlsplit

_db = urlsplit(os.environ["DATABASE_URL"])
_schema = os.environ.get("DJANGO_DB_SCHEMA")

SECRET_KEY = "example-only-not-secret"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
INSTALLED_APPS = ["django.contrib.contenttypes", "chokaq.contrib.django", "shop"]
ROOT_URLCONF = "shop_site.urls"
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
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
