"""The operations matrix: one ``Rig`` per store (memory, an SQLite file, PostgreSQL).

Memory and SQLite run on the ``FakeClock``: time passes when a test says (``Rig.slots``),
exactly. PostgreSQL decides what is due on the database's clock, so its rig uses real short
intervals and ``slots`` waits for a witness task's runs (events, with generous timeouts).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from psycopg import sql

from actors import Scheduler
from actors.store import PostgresStore
from actors.sync.clock import FakeClock
from messages import EventKind, TaskEvent
from tests.conftest import EventRecorder
from tests.operations import tasks
from tests.store.pg import DSN, admin, drop_schemas, new_schema, require_postgres

STORES = ("memory", "sqlite", "postgres")
WITNESS = "witness"


class Rig:
    """Schedulers on one store for one test, and the passing of time there."""

    def __init__(self, kind: str, tmp_path: Path) -> None:
        self.kind = kind
        self.fake = kind != "postgres"
        self.interval = 10.0 if self.fake else 0.3
        self.timeout = 5.0 if self.fake else 30.0  # generous on a shared server
        self.tolerance = 1e-6 if self.fake else 2.0  # seconds, comparing due times
        self.clock = FakeClock(start=1000.0)
        self.path = tmp_path / "tasks.db"
        self.schema = ""
        if kind == "postgres":
            require_postgres()
            self.schema = new_schema()
        self.made: list[Scheduler] = []
        self.recorders: dict[int, EventRecorder] = {}

    @property
    def durable(self) -> bool:
        return self.kind != "memory"

    def store(self, node: str = "a") -> Any:
        """A new store object on the rig's store (``None`` in memory)."""
        if self.kind == "sqlite":
            return str(self.path)
        if self.kind == "postgres":
            return PostgresStore(DSN, schema=self.schema, node=node, lease=2.0, poll=0.5)
        return None

    def start(self, node: str = "a", workers: int = 2) -> Scheduler:
        """A scheduler on the rig's store, its events recorded (``events(s)``) from its start on.

        (A listener given to the constructor sees the misses a restart's load decides.)
        """
        recorder = EventRecorder()
        options: dict[str, Any] = {"workers": workers, "store": self.store(node), "listeners": [recorder]}
        if self.fake:
            options["clock"] = self.clock
        s = Scheduler(**options)
        self.made.append(s)
        self.recorders[id(s)] = recorder
        return s

    def down_for(self, seconds: float) -> None:
        """Every scheduler of the rig is stopped: let ``seconds`` pass before the next starts.

        The FakeClock is advanced; on PostgreSQL the stored times are moved back instead (the
        row is then as a fleet down for that long leaves it: due times passed, nothing ran).
        """
        if self.fake:
            self.clock.advance(seconds)
            return
        with admin() as db:
            db.execute(sql.SQL("SET search_path = {}").format(sql.Identifier(self.schema)))
            anchor = "to_jsonb((trigger_json::jsonb->>'anchor')::float8 - %(d)s)"
            db.execute(
                f"""UPDATE task SET next_due = next_due - %(d)s,
                                    trigger_json = CASE WHEN trigger_json::jsonb ? 'anchor'
                                        THEN jsonb_set(trigger_json::jsonb, '{{anchor}}', {anchor})::text
                                        ELSE trigger_json END
                     WHERE status = 'scheduled'""",
                {"d": seconds},
            )

    def events(self, s: Scheduler) -> EventRecorder:
        return self.recorders[id(s)]

    def witness(self, s: Scheduler) -> None:
        """A fixed-rate task at the rig's interval, whose runs show that time passes."""
        s.schedule_at_fixed_rate(tasks.noop, self.interval, self.interval, task_id=WITNESS)

    def slots(self, s: Scheduler, count: int) -> None:
        """Let ``count`` of the rig's intervals pass (FakeClock: exactly; PostgreSQL: witness runs)."""
        if self.fake:
            for _ in range(count):
                s.advance(self.interval)
                s.settle()
            return
        recorder = self.events(s)
        target = completed(recorder.events, WITNESS) + count
        recorder.wait_for(lambda events: completed(events, WITNESS) >= target, self.timeout)

    def settle(self, s: Scheduler) -> None:
        """Let what is due now run (FakeClock: settle)."""
        if self.fake:
            s.settle()

    def wait_runs(self, s: Scheduler, task_id: str, count: int) -> None:
        """Wait until ``count`` runs of ``task_id`` completed (on any node: its ``run_count``)."""
        if self.fake:
            s.settle()
        recorder = self.events(s)
        recorder.wait_for(
            lambda _: s.info(task_id).run_count >= count or completed(_, task_id) >= count, self.timeout
        )

    def close(self) -> None:
        for s in self.made:
            s.shutdown(timeout=10)
        if self.schema:
            drop_schemas([self.schema])


def completed(events: list[TaskEvent], task_id: str) -> int:
    return sum(1 for e in events if e.task_id == task_id and e.kind is EventKind.COMPLETED)


@pytest.fixture(params=STORES)
def rig(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Rig]:
    made = Rig(request.param, tmp_path)
    tasks.reset()
    yield made
    made.close()
    tasks.reset()
