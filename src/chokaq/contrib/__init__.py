"""Integrations with web frameworks: ``chokaq.contrib.fastapi`` (and, later, Django).

Each module imports its framework, which is an optional dependency: import the one you use."""
