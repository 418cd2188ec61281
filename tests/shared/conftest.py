"""Schedulers sharing a PostgreSQL store: each test gets a schema of its own and nodes on it.

The server comes from ``SCHEDULER_TEST_DSN`` (``tests.store.pg``); without one the tests are
skipped, or fail under ``CI=true``. Nodes use short leases and polls so faults heal in a
second or two; time is real (a shared store's database decides what is due).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from actors import Scheduler
from actors.store import PostgresStore
from tests.shared import tasks
from tests.store.pg import DSN, drop_schemas, new_schema, require_postgres

LEASE = 2.0
POLL = 0.5


@pytest.fixture
def schema() -> Iterator[str]:
    """An empty schema of the test's own (skips the test when no server answers)."""
    require_postgres()
    name = new_schema()
    yield name
    drop_schemas([name])


@pytest.fixture(autouse=True)
def clear_calls() -> Iterator[None]:
    tasks.reset()
    yield
    tasks.reset()


Node = Callable[..., Scheduler]


@pytest.fixture
def node(schema: str) -> Iterator[Node]:
    """Start schedulers on the test's schema (``node("a")``); all shut down after the test."""
    made: list[Scheduler] = []

    def make(
        name: str, *, workers: int = 2, processes: int = 0, store: Any = None, **options: Any
    ) -> Scheduler:
        options.setdefault("lease", LEASE)
        options.setdefault("poll", POLL)
        if store is None:
            store = PostgresStore(DSN, schema=schema, node=name, **options)
        scheduler = Scheduler(workers=workers, processes=processes, store=store)
        made.append(scheduler)
        return scheduler

    yield make
    for scheduler in made:
        scheduler.shutdown(timeout=10)


@pytest.fixture
def reader(schema: str) -> Iterator[PostgresStore]:
    """A store on the test's schema for the test to read (and write) directly."""
    store = PostgresStore(DSN, schema=schema, node="test-reader")
    store.open()
    yield store
    store.close()
