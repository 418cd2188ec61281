"""A registered executor on a shared PostgreSQL store: the node claims the run into its executor's pool."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from actors import Scheduler
from actors.store.postgres import PostgresStore
from messages import TaskStatus
from tests.executors.test_protocol import PoolExecutor
from tests.store.pg import DSN, drop_schemas, new_schema, require_postgres

pytestmark = pytest.mark.timeout(20)


@pytest.fixture
def schema() -> Iterator[str]:
    require_postgres()
    name = new_schema()
    yield name
    drop_schemas([name])


def test_a_shared_node_runs_a_task_on_its_registered_executor(schema: str) -> None:
    pool = PoolExecutor()
    store = PostgresStore(DSN, schema=schema, node="a", lease=2.0, poll=0.2)
    scheduler = Scheduler(workers=1, store=store, executors={"pool": pool})
    try:
        handle = scheduler.schedule_once(
            "tests.executors.jobs:add", 0.0, args=(20, 22), executor="pool", task_id="shared"
        )
        assert handle.result(timeout=15) == 42
        assert handle.info().status is TaskStatus.COMPLETED
        assert [job.key for job in pool.jobs] == ["shared@1:1"]  # a stored task: its row's seq in the key
        # The leased row's function was imported, and still goes to a remote engine by reference.
        assert [(job.reference, job.seq) for job in pool.jobs] == [("tests.executors.jobs:add", 1)]
    finally:
        scheduler.shutdown(timeout=10)
