"""The Django app of chokaq.contrib.django: it only makes the management commands available."""

from __future__ import annotations

from django.apps import AppConfig


class ChokaqConfig(AppConfig):
    name = "chokaq.contrib.django"
    label = "chokaq"
    verbose_name = "chokaq"
