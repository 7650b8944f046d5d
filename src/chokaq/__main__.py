"""``python -m chokaq``: the command line."""

from .cli import main

main()
