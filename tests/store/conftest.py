"""Store fixtures: a factory per backend, so the conformance tests run against each.

A factory opens stores on a location of the test's own. The SQLite one uses a real file in
``tmp_path``; a PostgreSQL one will join ``STORE_FACTORIES`` with a schema per test. Every
backend's ``open`` must accept the bound options ``run_history`` and ``task_history``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

import pytest

from actors.store import SQLiteStore, Store


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


STORE_FACTORIES: dict[str, Callable[[Path], SQLiteFactory]] = {"sqlite": SQLiteFactory}


@pytest.fixture(params=sorted(STORE_FACTORIES))
def factory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreFactory]:
    made = STORE_FACTORIES[request.param](tmp_path)
    yield made
    made.close_all()


@pytest.fixture
def store(factory: StoreFactory) -> Store:
    return factory.open()
