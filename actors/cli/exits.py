"""The command line's exit codes (documented in docs/cli.md)."""

from __future__ import annotations

from typing import Final

__all__ = ["BAD_INPUT", "FAILURE", "INTERRUPTED", "OK", "STORE_LOCKED"]

OK: Final = 0
"""Done: the command did what it was asked (``run``: stopped by a signal or ``--for``)."""
FAILURE: Final = 1
"""Anything else went wrong (a store that cannot be used, an unexpected error)."""
BAD_INPUT: Final = 2
"""A bad job file or bad arguments: nothing was run."""
STORE_LOCKED: Final = 3
"""The store is held by another scheduler (another ``run`` of it)."""
INTERRUPTED: Final = 130
"""A second ``SIGINT`` (Ctrl-C) stopped ``run`` at once, without waiting for running runs."""
