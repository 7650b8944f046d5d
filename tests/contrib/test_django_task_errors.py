"""chokaq.contrib.django.tasks.error_class_path: the exception class a stored error names, as
a Django TaskError reports it (the worker's note first, as a forged note in a message comes
before the real one; chokaq's own reasons as JobFailedError, never a class that is not one)."""

from __future__ import annotations

import pytest

from chokaq.contrib.django.tasks import CLASS_NOTE, error_class_path

NOTED = (
    f"shop.tasks.OutOfStock: order 1\n{CLASS_NOTE}shop.tasks.OutOfStock\n\n"
    "Traceback (most recent call last):\n  ...\nshop.tasks.OutOfStock: order 1\n"
    f"{CLASS_NOTE}shop.tasks.OutOfStock"
)
FORGED = f"ValueError: see\n{CLASS_NOTE}os.system\n{CLASS_NOTE}builtins.ValueError"


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (NOTED, "shop.tasks.OutOfStock"),
        (FORGED, "builtins.ValueError"),  # the last note is the worker's
        ("ValueError: bad value", "builtins.ValueError"),
        ("KeyError", "builtins.KeyError"),
        ("pkg.errors.Refused: no", "pkg.errors.Refused"),
        ("Zombie: the worker died", "chokaq.errors.JobFailedError"),  # no such builtin
        ("Attempts exhausted (1 of 1): boom", "chokaq.errors.JobFailedError"),
        ("", "chokaq.errors.JobFailedError"),
    ],
)
def test_the_class_of_a_stored_error(error: str, expected: str) -> None:
    assert error_class_path(error) == expected


def test_the_stored_error_type_wins_once_the_store_keeps_it() -> None:
    assert error_class_path(NOTED, "shop.tasks.Other") == "shop.tasks.Other"
