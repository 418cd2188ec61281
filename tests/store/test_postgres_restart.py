"""A node survives a restart of the PostgreSQL server (stress: it restarts the local cluster).

Needs ``pg_ctlcluster`` and the right to run it (the test machine's cluster,
``SCHEDULER_TEST_PG_CLUSTER``, default ``"15 main"``). Every other session on that server is
cut during the restart, which is why the test runs only with ``-m stress``. Whatever happens,
the cluster is running again when the test ends.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable

import psycopg
import pytest

from actors.errors import StoreError
from actors.store import PostgresStore
from tests.store.helpers import definition

CLUSTER = os.environ.get("SCHEDULER_TEST_PG_CLUSTER", "15 main").split()


def pg_ctl(action: str) -> None:
    subprocess.run(
        ["pg_ctlcluster", "--skip-systemctl-redirect", *CLUSTER, action],
        check=True,
        timeout=120,
        capture_output=True,
    )


def online() -> bool:
    listing = subprocess.run(
        ["pg_lsclusters", "--no-header", *CLUSTER], check=False, capture_output=True, text=True
    )
    return " online " in listing.stdout


@pytest.mark.stress
def test_a_node_survives_a_server_restart_stress(make_node: Callable[..., PostgresStore]) -> None:
    if shutil.which("pg_ctlcluster") is None or not online():
        pytest.skip(f"no local cluster {' '.join(CLUSTER)} to restart (SCHEDULER_TEST_PG_CLUSTER)")
    a = make_node("a", lease=60.0, poll=1.0, timeout=1.0)
    b = make_node("b")
    a.add(definition("held", next_due=a.db_now() - 1))
    held = a.claim_due(1)
    assert held
    hints = threading.Semaphore(0)
    stop_listening = a.listen(hints.release)
    # The node's calls, one after the other: what each gave, in order.
    outcomes: list[str | BaseException] = []
    restarted, recovered, stop = threading.Event(), threading.Event(), threading.Event()

    def node_loop() -> None:
        while not stop.is_set():
            try:
                a.claim_due(1, importable=["jobs.none:fn"])  # a claim that takes nothing
                a.next_wakeup()
                assert len(a.renew(held)) == 1
                outcomes.append("ok")
                if restarted.is_set():
                    recovered.set()
            except BaseException as error:  # StoreError expected during the restart
                outcomes.append(error)
            time.sleep(0.02)  # the node's own cadence

    loop = threading.Thread(target=node_loop, name="node-loop")
    loop.start()
    try:
        while len(outcomes) < 5:
            time.sleep(0.01)
        pg_ctl("restart")
        restarted.set()

        assert recovered.wait(30), f"the node never recovered: {outcomes[-3:]}"
        assert hints.acquire(timeout=30), "the listener never called back after reconnecting"
        b.add(definition("after"))  # b's pool recovers too
        assert hints.acquire(timeout=5), "no hint after the restart"
    finally:
        stop.set()
        loop.join(timeout=30)
        stop_listening()
        if not online():
            pg_ctl("start")

    errors = [outcome for outcome in outcomes if isinstance(outcome, BaseException)]
    assert all(isinstance(error, StoreError) for error in errors), errors
    assert all(isinstance(error.__cause__, psycopg.Error) for error in errors)
    assert outcomes[-1] == "ok"
    print(f"{len(errors)} calls failed during the restart, {outcomes.count('ok')} succeeded")
