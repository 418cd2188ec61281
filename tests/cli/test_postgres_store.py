"""The command line on a PostgreSQL store: ``check``, ``run`` (several at once), ``status``.

Each test has a schema of its own on the test server (``tests.store.pg``), named in the
store URL (``options=-csearch_path=...``); real ``run`` subprocesses share it.
"""

from __future__ import annotations

import json
import re
import signal
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest

from actors.store.postgres_schema import lock_key
from tests.cli.helpers import Service, cli, write_jobfile
from tests.store.pg import DSN, drop_schemas, new_schema, require_postgres

WELCOME = '[jobs.welcome]\nfn = "tasks:say"\nat = 2020-01-01T00:00:00Z\nargs = ["hi"]\n'
TICK = '[jobs.tick]\nfn = "tasks:tick"\nevery = "100ms"\n'


@pytest.fixture
def url() -> Iterator[str]:
    """The URL of a PostgreSQL store in an empty schema of the test's own."""
    require_postgres()
    schema = new_schema()
    separator = "&" if "?" in DSN else "?"
    yield f"{DSN}{separator}options={quote(f'-csearch_path={schema}')}"
    drop_schemas([schema])


@contextmanager
def held_reconcile_lock(url: str) -> Iterator[Callable[..., None]]:
    """Hold the runs' reconcile lock of the store; ``release(waiting=n)`` once n runs wait for it."""
    with psycopg.connect(url, autocommit=True) as db:
        schema = db.execute("SELECT current_schema()").fetchone()
        assert schema is not None
        key = lock_key(schema[0], "job-file")
        db.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", (key,))

        def release(waiting: int, timeout: float = 30.0) -> None:
            deadline = time.monotonic() + timeout
            while True:
                row = db.execute(WAITERS, (key,)).fetchone()
                if row is not None and row[0] >= waiting:
                    break
                assert time.monotonic() < deadline, f"{waiting} runs never waited for the reconcile lock"
                time.sleep(0.02)  # polling the server's lock table: there is nothing to wait on
            db.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (key,))

        yield release


# The sessions waiting for an advisory lock: pg_locks shows its 64-bit key in two 32-bit halves.
WAITERS = """
    SELECT count(*) FROM pg_locks
     WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database
                                                                 WHERE datname = current_database())
       AND ((classid::bigint << 32) | objid::bigint) = hashtextextended(%s, 0)"""


def jobfile_on(url: str, folder: Path, jobs: str) -> Path:
    return write_jobfile(folder, f'[scheduler]\nstore = "{url}"\n\n{jobs}')


def test_check_shows_a_postgresql_store_as_written(tmp_path: Path, url: str) -> None:
    jobfile_on(url, tmp_path, TICK)
    result = cli("check", "jobs.toml", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"store {url}\n" in result.stdout


def test_runs_started_together_on_one_database_run_each_due_run_once(tmp_path: Path, url: str) -> None:
    jobfile_on(url, tmp_path, WELCOME + TICK)
    with (
        held_reconcile_lock(url) as release,
        Service("jobs.toml", "--no-status", cwd=tmp_path) as first,
        Service("jobs.toml", "--no-status", cwd=tmp_path) as second,
    ):
        release(waiting=2)  # both are at their reconcile, on an empty store: let them go at once
        for service in (first, second):
            service.expect(r"INFO running 2 job\(s\) from jobs.toml \(store postgresql://")
        # Both run the schedule: each has run some of tick's runs, and one of them ran welcome.
        first.expect(r"task=tick event=completed run=\d+ ", anywhere=True)
        second.expect(r"task=tick event=completed run=\d+ ", anywhere=True)
        # A while of running side by side: until the first one has run one of tick's runs past 20.
        first.expect(r"task=tick event=completed run=(?:[2-9]\d|\d{3,}) ")
        for service in (first, second):
            service.send(signal.SIGTERM)
            assert service.wait() == 0
    outputs = first.output() + "\n" + second.output()
    assert "Traceback" not in outputs
    added = re.findall(r"INFO job (\w+): added \(new job\)$", outputs, re.M)
    assert sorted(added) == ["tick", "welcome"], outputs  # one reconcile added them, the other kept them
    assert outputs.count("said hi") == 1, outputs
    runs = Counter(re.findall(r"task=tick event=completed run=(\d+) ", outputs))
    assert runs, outputs
    assert max(runs.values()) == 1, [run for run, seen in runs.items() if seen > 1]

    status = cli("status", "--store", url, cwd=tmp_path)
    assert status.returncode == 0, status.stderr
    assert re.search(r"^welcome +once .* completed ", status.stdout, re.M), status.stdout
    assert re.search(r"^tick +every 100ms +scheduled ", status.stdout, re.M), status.stdout
    by_jobfile = cli("status", "jobs.toml", cwd=tmp_path)
    assert by_jobfile.returncode == 0, by_jobfile.stderr
    assert without_times(by_jobfile.stdout) == without_times(status.stdout)  # read a moment apart

    with Service("jobs.toml", "--no-status", cwd=tmp_path) as again:
        again.expect(r"INFO job welcome: left ended \(unchanged, and it ended completed; ", anywhere=True)
        again.expect(r"INFO job tick: kept \(unchanged\)$", anywhere=True)
        again.send(signal.SIGTERM)
        assert again.wait() == 0
    assert "said hi" not in again.output()


def without_times(status: str) -> list[str]:
    """The table of a ``status`` output without its next-run times (they move on between two reads)."""
    rows = status.splitlines()[2:]
    return [re.sub(r"\s+", " ", re.sub(r"\d\d:\d\d:\d\d \([^)]*\)|\(due now\)", "", row)) for row in rows]


def test_status_of_a_database_without_a_store_is_exit_1_and_creates_nothing(tmp_path: Path, url: str) -> None:
    result = cli("status", "--store", url, cwd=tmp_path)
    assert result.returncode == 1
    assert "holds no task store yet" in result.stderr
    assert cli("status", "--store", url, cwd=tmp_path).returncode == 1  # still none


def test_a_restart_on_a_database_runs_no_job_the_file_changed_or_dropped(tmp_path: Path, url: str) -> None:
    jobs = jobfile_on(
        url,
        tmp_path,
        '[jobs.word]\nfn = "tasks:say"\nevery = "100ms"\nargs = ["old"]\n'
        '[jobs.gone]\nfn = "tasks:say"\nevery = "100ms"\nargs = ["gone"]\n',
    )
    with Service("jobs.toml", "--no-status", cwd=tmp_path) as first:
        first.expect(r"task=word event=completed run=2 ")
        first.expect(r"task=gone event=completed run=2 ", anywhere=True)
        first.send(signal.SIGTERM)
        assert first.wait() == 0
    jobs.write_text(jobs.read_text().replace('"old"', '"new"').split("[jobs.gone]")[0])
    with Service("jobs.toml", "--no-status", cwd=tmp_path) as second:  # both rows are overdue now
        second.expect(r"INFO job word: replaced \(definition changed\)$")
        second.expect(r"INFO job gone: cancelled \(not in the job file any more\)$")
        second.expect(r"WARNING said new$")
        second.send(signal.SIGTERM)
        assert second.wait() == 0
    assert "said old" not in second.output()
    assert "said gone" not in second.output()


def test_a_damaged_row_on_a_database_is_replaced_by_its_job_before_it_runs(tmp_path: Path, url: str) -> None:
    jobfile_on(url, tmp_path, '[jobs.tick]\nfn = "tasks:tick"\nevery = "1h"\n')
    with Service("jobs.toml", "--no-status", cwd=tmp_path) as first:
        first.expect(r"task=tick event=completed run=1 ")
        first.send(signal.SIGTERM)
        assert first.wait() == 0
    with psycopg.connect(url, autocommit=True) as db:  # edited by hand, badly, and due at once
        db.execute("UPDATE task SET trigger_json = '[1]', next_due = 0 WHERE task_id = 'tick'")
    with Service("jobs.toml", "--no-status", cwd=tmp_path) as second:
        second.expect(
            r"INFO job tick: replaced \(its stored row was damaged: its column trigger_json \('\[1\]'\) "
            r"does not decode: [^;]*\)$"
        )
        # The run's line (bus thread) may come before or after the replace's (main thread).
        second.expect(r"INFO task=tick event=completed run=2 ", anywhere=True)  # the counters carried on
        second.send(signal.SIGTERM)
        assert second.wait() == 0
    assert "event=failed" not in second.output()  # held back: the stand-in never ran
    with psycopg.connect(url, autocommit=True) as db:
        rows = db.execute("SELECT trigger_json, run_count FROM task WHERE task_id = 'tick'").fetchall()
    assert [(json.loads(trigger)["rate"], runs) for trigger, runs in rows] == [(3600.0, 2)]
    with Service("jobs.toml", "--no-status", cwd=tmp_path) as third:
        third.expect(r"INFO job tick: kept \(unchanged\)$")
        third.send(signal.SIGTERM)
        assert third.wait() == 0
    assert " WARNING " not in third.output()
