"""Module-level task functions for the durable workloads.

A durable task is stored by reference (``"benchmarks.durable_tasks:hit"``), never as a
Python object, so its function must live at module level; it reports to a module-level
:class:`~benchmarks.adapters.Completions` that the workload sets up with :func:`expect`.
"""

from __future__ import annotations

from benchmarks.completions import Completions

__all__ = ["REFERENCE", "expect", "hit"]

#: The textual reference of :func:`hit`, as a store keeps it.
REFERENCE = "benchmarks.durable_tasks:hit"

_completions = Completions(0)


def expect(n: int) -> Completions:
    """Count the next ``n`` runs of :func:`hit`; return the counter to wait on."""
    global _completions  # noqa: PLW0603 - one counter per measurement, read by every run
    _completions = Completions(n)
    return _completions


def hit() -> None:
    """The durable task: record one completion."""
    _completions.hit()
