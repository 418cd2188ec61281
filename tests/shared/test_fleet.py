"""Four scheduler processes share one schedule; faults strike; each due run is committed exactly once.

Each test starts a fleet (``tests.shared.fleet``), writes a schedule of one-time and fixed-rate
tasks due across a window, injects its faults during the window, then stops the fleet and
asks the checker: one committed ledger row per expected run, none missing or extra, none
started early, no outcome committed twice, and every side effect that started twice explained
by a fault. The short variants run by default; ``-m stress`` runs long ones (and restarts the
database server).
"""

from __future__ import annotations

import random
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from psycopg import sql

from actors.store import PostgresStore
from tests.shared.fleet import Fleet, Verdict, check, end_rates, install_commit_log, make_plan, wait_done
from tests.store.pg import DSN, admin, drop_schemas, new_schema, require_postgres
from tests.store.test_postgres_restart import CLUSTER, online, pg_ctl

LEASE = 1.5
POLL = 0.5
NODES = 4


@dataclass
class Setting:
    schema: str
    store: PostgresStore
    log: Path
    fleet: Fleet


@pytest.fixture
def setting(tmp_path: Path) -> Iterator[Callable[..., Setting]]:
    """A fresh schema with the commit log installed, a store on it for the test, a fleet factory."""
    require_postgres()
    made: list[Setting] = []

    def make(mode: str = "fenced") -> Setting:
        schema = new_schema()
        store = PostgresStore(DSN, schema=schema, node="test", run_history=10_000_000)
        store.open()
        install_commit_log(schema)
        fleet = Fleet(DSN, schema, lease=LEASE, poll=POLL, workers=4, mode=mode)
        made.append(Setting(schema, store, tmp_path / f"effects-{schema}.log", fleet))
        return made[-1]

    yield make
    for setting in made:
        setting.fleet.kill_all()
        setting.store.close()
        drop_schemas([setting.schema])


Faults = Callable[[Fleet, PostgresStore, float, random.Random], None]


def run(
    setting: Setting,
    faults: Faults | None = None,
    *,
    window: float = 3.0,
    once: int = 90,
    rates: int = 8,
    interval: float = 1.0,
    pause: float = 0.15,
    seed: int = 1,
) -> Verdict:
    """Start the fleet, write the schedule, inject ``faults`` until the window ends; judge the outcome."""
    fleet, store = setting.fleet, setting.store
    fleet.start(NODES)
    try:
        start = store.db_now() + 0.5
        plan = make_plan(
            store,
            setting.log,
            start=start,
            window=window,
            once=once,
            rates=rates,
            interval=interval,
            pause=pause,
        )
        rng = random.Random(seed)
        end = time.monotonic() + (plan.end - store.db_now())
        if faults is not None:
            faults(fleet, store, end, rng)
        while time.monotonic() < end:
            time.sleep(0.05)  # the window's end
        ended = end_rates(store, plan)
        wait_done(store, plan, timeout=LEASE + POLL + 20)
        fleet.stop()
    finally:
        fleet.kill_all()
    verdict = check(store, setting.schema, plan, fleet.faults, ended=ended, settle=LEASE + POLL + 1.0)
    print(verdict.summary(), f"faults: {[(f.kind, round(f.end - f.start, 2)) for f in fleet.faults]}")
    return verdict


def kill_every(seconds: float) -> Faults:
    """kill -9 a random node every ``seconds`` (with jitter), and start a new one in its place."""

    def inject(fleet: Fleet, store: PostgresStore, end: float, rng: random.Random) -> None:
        while time.monotonic() + seconds < end:
            time.sleep(seconds * rng.uniform(0.5, 1.5))
            fleet.kill(fleet.random_node(rng))
            fleet.restart()

    return inject


def pause_for(seconds: float, times: int) -> Faults:
    """SIGSTOP a node with a run in progress for ``seconds`` (past its lease), then SIGCONT, ``times``x."""

    def inject(fleet: Fleet, store: PostgresStore, end: float, rng: random.Random) -> None:
        for _ in range(times):
            if time.monotonic() + seconds >= end:
                return
            time.sleep(rng.uniform(0.3, 0.8))
            running: set[str] = set()
            while not running and time.monotonic() + seconds < end:  # a node in the middle of a run
                running = {flight.owner for flight in store.runs_in_flight() if flight.started}
                running &= fleet.nodes.keys()
                time.sleep(0.01)
            fleet.pause(fleet.random_node(rng, running), seconds)

    return inject


def assert_exactly_once(verdict: Verdict) -> None:
    assert verdict.ok, verdict.summary() + f"\n{verdict}"
    assert verdict.committed == verdict.expected


# -- short variants (default suite) ---------------------------------------------------------------


def test_four_nodes_run_every_due_run_exactly_once(setting: Callable[..., Setting]) -> None:
    verdict = run(setting())
    assert_exactly_once(verdict)
    assert verdict.duplicates == 0  # no fault: no side effect started twice


def test_kill_9_of_random_nodes_loses_no_run_and_commits_none_twice(setting: Callable[..., Setting]) -> None:
    verdict = run(setting(), kill_every(0.8), seed=2)
    assert_exactly_once(verdict)


# Runs of 1 s, so the paused node is surely in the middle of one when it stops.
LONG_RUNS = {"pause": 1.0, "once": 40, "rates": 4}


def test_a_node_paused_past_its_lease_has_its_late_outcomes_refused(setting: Callable[..., Setting]) -> None:
    verdict = run(setting(), pause_for(LEASE + POLL + 0.5, times=1), seed=3, **LONG_RUNS)  # type: ignore[arg-type]
    assert_exactly_once(verdict)
    assert verdict.duplicates >= 1  # the paused node's run was run again elsewhere; its outcome refused


def test_the_checker_catches_the_double_commits_of_unfenced_outcomes(setting: Callable[..., Setting]) -> None:
    verdict = run(setting("naive"), pause_for(LEASE + POLL + 0.5, times=1), seed=3, **LONG_RUNS)  # type: ignore[arg-type]
    assert verdict.duplicates >= 1, f"the fault did not strike a run in progress: {verdict.summary()}"
    assert verdict.double_commits, f"the naive fleet was not caught: {verdict.summary()}"


# -- long variants (stress) -------------------------------------------------------------------------


@pytest.mark.stress
@pytest.mark.timeout(900)
def test_kill_9_every_second_for_a_minute_stress(setting: Callable[..., Setting]) -> None:
    verdict = run(setting(), kill_every(1.0), window=60.0, once=2000, rates=30, seed=4, pause=0.05)
    assert_exactly_once(verdict)


@pytest.mark.stress
@pytest.mark.timeout(900)
def test_pauses_past_the_lease_for_a_minute_stress(setting: Callable[..., Setting]) -> None:
    verdict = run(
        setting(), pause_for(LEASE + POLL + 0.5, times=12), window=60.0, once=2000, rates=30, seed=5
    )
    assert_exactly_once(verdict)


@pytest.mark.stress
@pytest.mark.timeout(900)
def test_a_database_restart_mid_run_loses_nothing_stress(setting: Callable[..., Setting]) -> None:
    if shutil.which("pg_ctlcluster") is None or not online():
        pytest.skip(f"no local cluster {' '.join(CLUSTER)} to restart (SCHEDULER_TEST_PG_CLUSTER)")

    def restart(fleet: Fleet, store: PostgresStore, end: float, rng: random.Random) -> None:
        time.sleep(3.0)
        began = time.time()
        try:
            pg_ctl("restart")
        finally:
            if not online():
                pg_ctl("start")
        fleet.restarted_database(began, time.time())

    verdict = run(setting(), restart, window=20.0, once=600, rates=10, seed=6)
    assert_exactly_once(verdict)


# -- saves held up past the lease (issue 21, point 2) ---------------------------------------------------


def hold_up_saves(hold: float, times: int, *, cut: bool) -> Faults:
    """``times`` x: a second session takes ``LOCK TABLE run`` for ``hold`` seconds, so every save of an
    outcome waits (its rows stay leased, so the nodes must renew them meanwhile); with ``cut``, the
    saves waiting for it also have their connections ended (they fail, and are retried later)."""

    def inject(fleet: Fleet, store: PostgresStore, end: float, rng: random.Random) -> None:
        for _ in range(times):
            if time.monotonic() + hold >= end:
                return
            time.sleep(rng.uniform(0.2, 0.6))  # the gap between two faults
            with admin() as locker:
                locker.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(fleet.schema)))
                with locker.transaction():
                    locker.execute("LOCK TABLE run IN EXCLUSIVE MODE")
                    until = time.monotonic() + hold
                    while time.monotonic() < until:
                        if cut:
                            # Only the sessions this lock holds up: the server is shared with
                            # other tests (and other runs), whose sessions are not ours to end.
                            waiting = locker.execute(
                                "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                                " AND application_name LIKE 'pykka-taskscheduler node-%%'"
                                " AND pg_backend_pid() = ANY(pg_blocking_pids(pid))"
                            ).fetchall()
                            for (pid,) in waiting:
                                locker.execute("SELECT pg_terminate_backend(%s)", (pid,))
                        time.sleep(0.1)  # the fault's own length, in steps

    return inject


# Fast runs on a fine grid, so the nodes' saves are many and a slot planned twice would show.
FAST_RATES = {"pause": 0.002, "once": 60, "rates": 8, "interval": 0.05}


def test_saves_held_up_past_the_lease_start_no_run_twice(setting: Callable[..., Setting]) -> None:
    verdict = run(setting(), hold_up_saves(2 * LEASE, times=1, cut=False), window=4.0, seed=7, **FAST_RATES)  # type: ignore[arg-type]
    assert_exactly_once(verdict)
    assert verdict.duplicates == 0  # no node was faulted: a side effect started twice is a bug


@pytest.mark.stress
@pytest.mark.timeout(900)
@pytest.mark.parametrize("cut", [False, True])
def test_saves_held_up_and_cut_for_a_minute_start_no_run_twice_stress(
    setting: Callable[..., Setting], cut: bool
) -> None:
    faults = hold_up_saves(2.5 * LEASE, times=12, cut=cut)
    verdict = run(setting(), faults, window=60.0, once=600, rates=16, interval=0.01, pause=0.001, seed=8)
    assert_exactly_once(verdict)
    assert verdict.duplicates == 0
