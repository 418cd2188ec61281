"""Fixtures of the durability tests: a store file per test, and schedulers on it with a FakeClock.

Every scheduler's FakeClock reads the same wall instant at its start (``START``, unless a test
gives another), so times are exact; a "restart" is a new ``Scheduler`` on the same file after
the first one shut down.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from actors import FakeClock, Scheduler
from tests.durable import tasks
from tests.durable.files import START


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "schedule.db"


@pytest.fixture(autouse=True)
def clear_calls() -> Iterator[None]:
    tasks.CALLS.clear()
    yield
    tasks.CALLS.clear()


@pytest.fixture
def start(path: Path) -> Iterator[Callable[..., Scheduler]]:
    """Start schedulers on ``path`` (each with a FakeClock at ``wall``); all shut down afterwards."""
    made: list[Scheduler] = []

    def make(wall: datetime = START, **kwargs: Any) -> Scheduler:
        kwargs.setdefault("store", path)
        scheduler = Scheduler(workers=2, clock=FakeClock(1000.0, wall_start=wall), **kwargs)
        made.append(scheduler)
        return scheduler

    yield make
    for scheduler in made:
        scheduler.shutdown(timeout=10)
