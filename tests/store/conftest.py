"""Store fixtures: a factory per backend, so the conformance tests run against each.

A factory opens stores on a location of the test's own. The SQLite one uses a real file in
``tmp_path``; the PostgreSQL one a schema of the test's own on the server ``tests.store.pg``
names, dropped after the test (the test is skipped, or fails under ``CI=true``, when no server
answers). Every backend's ``open`` must accept the bound options ``run_history`` and
``task_history``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

import pytest

from actors.store import PostgresStore, SQLiteStore, Store
from tests.store.pg import DSN, drop_schemas, new_schema, require_postgres


class StoreFactory(Protocol):
    """Opens stores of one backend; every store it opened is closed after the test."""

    name: str
    location: str  # the test's default location

    def open(self, *, location: str | None = None, **options: Any) -> Store:
        """Open a store on ``location`` (default: the test's), with backend options."""
        ...

    def fresh_location(self) -> str:
        """Return a new, empty location (for tests that need many stores)."""
        ...


class SQLiteFactory:
    name = "sqlite"

    def __init__(self, directory: Path) -> None:
        self._directory = directory
        self._names = itertools.count()
        self.location = str(directory / "store.db")
        self.opened: list[Store] = []

    def open(self, *, location: str | None = None, **options: Any) -> Store:
        store = SQLiteStore(location or self.location, **options)
        store.open()
        self.opened.append(store)
        return store

    def fresh_location(self) -> str:
        return str(self._directory / f"store-{next(self._names)}.db")

    def close_all(self) -> None:
        for store in self.opened:
            store.close()


class PostgresFactory:
    name = "postgres"

    def __init__(self, _directory: Path) -> None:
        self.dsn = require_postgres()
        self.schemas: list[str] = []
        self.opened: list[Store] = []
        self.location = self.fresh_location()

    def open(self, *, location: str | None = None, **options: Any) -> Store:
        store = PostgresStore(self.dsn, schema=location or self.location, **options)
        store.open()
        self.opened.append(store)
        return store

    def fresh_location(self) -> str:
        self.schemas.append(new_schema())
        return self.schemas[-1]

    def close_all(self) -> None:
        for store in self.opened:
            store.close()
        drop_schemas(self.schemas)


class ClosingFactory(StoreFactory, Protocol):
    def close_all(self) -> None: ...


STORE_FACTORIES: dict[str, Callable[[Path], ClosingFactory]] = {
    "sqlite": SQLiteFactory,
    "postgres": PostgresFactory,
}


@pytest.fixture(params=sorted(STORE_FACTORIES))
def factory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreFactory]:
    made = STORE_FACTORIES[request.param](tmp_path)
    yield made
    made.close_all()


@pytest.fixture
def store(factory: StoreFactory) -> Store:
    return factory.open()


# -- PostgreSQL only: a schema of the test's own, and nodes sharing it ---------------------------


@pytest.fixture
def pg_schema() -> Iterator[str]:
    """An empty schema of the test's own (skips the test when no server answers)."""
    require_postgres()
    name = new_schema()
    yield name
    drop_schemas([name])


@pytest.fixture
def make_node(pg_schema: str) -> Iterator[Callable[..., PostgresStore]]:
    """Open PostgreSQL stores on the test's schema (one per node), closed after the test."""
    made: list[PostgresStore] = []

    def make(node: str | None = None, **options: Any) -> PostgresStore:
        store = PostgresStore(DSN, schema=pg_schema, node=node, **options)
        store.open()
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()
