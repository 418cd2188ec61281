"""A task's policies round-trip through each store's ``options_json`` (SQLite and PostgreSQL)."""

from __future__ import annotations

from actors import PostgresStore, Scheduler, SQLiteStore
from actors.core.policies import DEFAULT_POLICIES, Policies
from actors.runtime.durable import load
from tests.durable import tasks
from tests.store.conftest import StoreFactory
from tests.store.pg import DSN


def test_policies_are_stored_and_decode_back(factory: StoreFactory) -> None:
    store: object = factory.location  # a file's path; a PostgreSQL store the scheduler opens
    if factory.name == "postgres":
        store = PostgresStore(DSN, schema=factory.location)
    with Scheduler(workers=1, store=store) as s:  # type: ignore[arg-type]
        s.schedule_at_fixed_rate(
            tasks.noop,
            3600.0,
            3600.0,
            task_id="spread",
            overlap="queue",
            catch_up="all",
            max_catch_up=7,
            jitter=2.5,
        )
        s.schedule_at_fixed_rate(tasks.noop, 3600.0, 3600.0, task_id="plain")
    reader = SQLiteStore.inspect(factory.location) if factory.name == "sqlite" else factory.open()
    rows = {row.task_id: row for row in reader.tasks()}
    reader.close()
    spread, plain = rows["spread"], rows["plain"]
    assert load(spread, wall_offset=0.0, functions={}).spec.policies == Policies("queue", None, "all", 7, 2.5)
    assert load(plain, wall_offset=0.0, functions={}).spec.policies is DEFAULT_POLICIES
    assert "overlap" not in plain.options_json
