"""``run`` as a service, through a real subprocess: restarts, reloads, signals, a held store.

No test sleeps to let things happen: each waits for the line that says it did.
"""

from __future__ import annotations

import contextlib
import json
import re
import signal
import sqlite3
import time
from pathlib import Path

from actors.cli.jobfile import load_jobfile
from actors.cli.reconcile import fingerprints_of
from tests.cli.helpers import Service, cli, write_jobfile

WELCOME = '[jobs.welcome]\nfn = "tasks:say"\nat = 2020-01-01T00:00:00Z\nargs = ["hi"]\n'
TICKS = """
[jobs.tick]
fn = "tasks:tick"
every = "200ms"
"""


def test_run_for_seconds_logs_one_line_per_run_and_exits_0(tmp_path: Path) -> None:
    write_jobfile(tmp_path, TICKS + '\n[jobs.flaky]\nfn = "tasks:flaky"\ndelay = "100ms"\n')
    with Service("jobs.toml", "--for", "1", "--no-status", "--store", ":memory:", cwd=tmp_path) as service:
        service.expect(r"INFO job tick: added \(new job\)$")
        service.expect(r"INFO running 2 job\(s\) from jobs.toml \(memory only, 4 workers\)")
        line = service.expect(r"^(\S+) WARNING task=flaky event=failed run=2 duration=\d+\.\d{3}s "
                              r'error="RuntimeError: flaked on run 2"$')  # fmt: skip
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d", line.group(1))
        service.expect(r"INFO task=tick event=completed run=3 duration=")
        service.expect(r"INFO ran for 1(\.0)? s; stopping")
        assert service.wait() == 0
        service.expect(r"INFO stopped")
    assert not (tmp_path / "jobs.db").exists()
    assert "Traceback" not in service.output()


def test_a_run_killed_and_restarted_keeps_its_counters(tmp_path: Path) -> None:
    write_jobfile(tmp_path, '[jobs.flaky]\nfn = "tasks:flaky"\nevery = "100ms"\n')
    with Service("jobs.toml", "--no-status", cwd=tmp_path) as first:
        first.expect(r"task=flaky event=completed run=5 ")
        first.send(signal.SIGKILL)
        assert first.wait() == -signal.SIGKILL
    status = cli("status", "jobs.toml", cwd=tmp_path)
    assert status.returncode == 0, status.stderr
    row = re.search(r"^flaky +every 100ms +scheduled +\S+ \(.*?\) +(\d+) +(\d+) +(\w+)", status.stdout, re.M)
    assert row, status.stdout
    runs, failures = int(row.group(1)), int(row.group(2))
    assert runs >= 4  # run 5 completed: the store has committed run 4 at least
    assert failures == runs // 2  # every even run fails
    with Service("jobs.toml", "--no-status", cwd=tmp_path) as second:
        # The overdue run runs as the scheduler starts, and is logged: the runner listens from the start.
        first_logged = int(second.expect(r"task=flaky event=\w+ run=(\d+) ").group(1))
        assert first_logged == runs + 1
        second.expect(r"INFO job flaky: kept \(unchanged\)$", anywhere=True)
        second.send(signal.SIGTERM)
        assert second.wait() == 0
    status = cli("status", "--store", "jobs.db", cwd=tmp_path)
    row = re.search(r"^flaky +every 100ms +scheduled +\S+ \(.*?\) +(\d+) +(\d+) ", status.stdout, re.M)
    assert row, status.stdout
    assert int(row.group(1)) > runs
    assert int(row.group(2)) == int(row.group(1)) // 2


def test_a_restart_runs_no_job_the_file_changed_or_dropped_before_replacing_or_cancelling_it(
    tmp_path: Path,
) -> None:
    jobs = write_jobfile(
        tmp_path,
        '[jobs.word]\nfn = "tasks:say"\nevery = "100ms"\nargs = ["old"]\n'
        '[jobs.gone]\nfn = "tasks:say"\nevery = "100ms"\nargs = ["gone"]\n',
    )
    with Service("jobs.toml", "--no-status", cwd=tmp_path) as first:
        first.expect(r"task=word event=completed run=2 ")
        first.expect(r"task=gone event=completed run=2 ", anywhere=True)
        first.send(signal.SIGTERM)
        assert first.wait() == 0
    jobs.write_text('[jobs.word]\nfn = "tasks:say"\nevery = "100ms"\nargs = ["new"]\n')
    with Service("jobs.toml", "--no-status", cwd=tmp_path) as second:
        second.expect(r"INFO job word: replaced \(definition changed\)$")
        second.expect(r"INFO job gone: cancelled \(not in the job file any more\)$")
        second.expect(r"WARNING said new$")
        second.expect(r"task=word event=completed run=4 ")  # counters kept: runs 1 and 2 were before
        second.send(signal.SIGTERM)
        assert second.wait() == 0
    assert "said old" not in second.output()
    assert "said gone" not in second.output()


def test_sighup_reload_adds_changes_and_removes_jobs_and_rejects_a_broken_file(tmp_path: Path) -> None:
    jobs = write_jobfile(
        tmp_path,
        TICKS
        + '\n[jobs.changes]\nfn = "tasks:tick"\nevery = "200ms"\nargs = [1]\n'
        + '\n[jobs.goes]\nfn = "tasks:tick"\nevery = "200ms"\n',
    )
    with Service("jobs.toml", "--no-status", cwd=tmp_path) as service:
        service.expect(r"INFO running 3 job\(s\)")
        service.expect(r"task=goes event=completed run=2 ")
        jobs.write_text(
            TICKS
            + '\n[jobs.changes]\nfn = "tasks:tick"\nevery = "200ms"\nargs = [2]\n'
            + '\n[jobs.comes]\nfn = "tasks:tick"\ndelay = "100ms"\n'
        )
        service.send(signal.SIGHUP)
        service.expect(r"INFO reloading jobs.toml$")
        service.expect(r"INFO job tick: kept \(unchanged\)$")
        service.expect(r"INFO job changes: replaced \(definition changed\)$")
        service.expect(r"INFO job comes: added \(new job\)$")
        service.expect(r"INFO job goes: cancelled \(not in the job file any more\)$")
        service.expect(r"INFO reloaded jobs.toml: 3 job\(s\)$")
        service.expect(r"task=comes event=completed run=2 ")

        jobs.write_text(TICKS.replace('every = "200ms"', 'every = "soon"'))
        service.send(signal.SIGHUP)
        service.expect(r"ERROR jobs.toml: job 'tick': key 'every': \"soon\" is not a duration")
        service.expect(r"ERROR reload rejected: the schedule is left as it was$")
        service.expect(r"task=comes event=completed ")  # the schedule runs on, as it was
        service.send(signal.SIGTERM)
        assert service.wait() == 0
    after = service.output().split("reload rejected")[1]
    assert "task=goes event=completed" not in after
    status = cli("status", "--store", "jobs.db", cwd=tmp_path)  # the job file is broken now
    assert re.search(r"^goes +every 200ms +cancelled ", status.stdout, re.M), status.stdout
    assert re.search(r"^comes +delay 100ms +scheduled ", status.stdout, re.M), status.stdout


def test_sigterm_lets_a_running_run_finish_and_exits_0(tmp_path: Path) -> None:
    # A run of 2 s: the stop lands inside it even when the signal waits out the main loop's
    # longest sleep (SIGNAL_LATENCY, 0.5 s) on a loaded machine.
    write_jobfile(tmp_path, '[jobs.slow]\nfn = "tasks:slow"\nevery = "1h"\nargs = [2.0]\n')
    with Service("jobs.toml", "--no-status", "--grace", "20", cwd=tmp_path) as service:
        service.expect(r"WARNING slow started$")
        service.send(signal.SIGTERM)
        service.expect(r"INFO stopping: running runs get up to 20(\.0)? s to finish$")
        service.expect(r"WARNING slow finished$")
        service.expect(r"task=slow event=completed run=1 duration=[2-9]\.\d\d\ds")
        assert service.wait() == 0


def test_sigterm_exits_0_within_the_grace_when_a_run_overruns_it(tmp_path: Path) -> None:
    write_jobfile(tmp_path, '[jobs.slow]\nfn = "tasks:slow"\nevery = "1h"\nargs = [60]\n')
    with Service("jobs.toml", "--no-status", "--grace", "0.5", cwd=tmp_path) as service:
        service.expect(r"WARNING slow started$")
        sent = time.monotonic()
        service.send(signal.SIGTERM)
        assert service.wait() == 0
        assert time.monotonic() - sent < 5.0  # the grace, plus the interpreter's exit
        assert "slow finished" not in service.output()


def test_a_second_sigint_exits_at_once_with_130(tmp_path: Path) -> None:
    write_jobfile(tmp_path, '[jobs.slow]\nfn = "tasks:slow"\nevery = "1h"\nargs = [60]\n')
    with Service("jobs.toml", "--no-status", cwd=tmp_path) as service:
        service.expect(r"WARNING slow started$")
        service.send(signal.SIGINT)
        service.expect(r"INFO stopping: running runs get up to 30(\.0)? s to finish$")
        service.send(signal.SIGINT)
        assert service.wait() == 130


def test_status_works_while_run_holds_the_store_and_a_second_run_is_exit_3(tmp_path: Path) -> None:
    write_jobfile(tmp_path, TICKS + '\n[jobs.once]\nfn = "tasks:tick"\nat = 2000-01-01T00:00:00Z\n')
    with Service("jobs.toml", "--no-status", cwd=tmp_path) as service:
        service.expect(r"task=once event=completed run=1 ")
        service.expect(r"task=tick event=completed run=2 ")
        status = cli("status", "jobs.toml", cwd=tmp_path)
        assert status.returncode == 0, status.stderr
        assert re.search(r"^tick +every 200ms +scheduled +\d\d:\d\d:\d\d \(", status.stdout, re.M), (
            status.stdout
        )
        assert re.search(r"^once +once +completed +- +1 +0 +completed +-$", status.stdout, re.M), (
            status.stdout
        )
        second = cli("run", "jobs.toml", "--for", "5", cwd=tmp_path)
        assert second.returncode == 3
        assert "is in use by another scheduler" in second.stderr
        assert "Traceback" not in second.stderr
        service.send(signal.SIGTERM)
        assert service.wait() == 0
    with Service("jobs.toml", "--no-status", "--for", "0.5", cwd=tmp_path) as again:
        again.expect(r"INFO job once: left ended \(unchanged, and it ended completed; change it")
        assert again.wait() == 0
    assert "task=once event=" not in again.output()  # a one-time job that ran does not run again


def test_a_store_with_a_damaged_row_runs_and_names_the_file_task_and_column(tmp_path: Path) -> None:
    write_jobfile(tmp_path, '[jobs.tick]\nfn = "tasks:tick"\nevery = "1h"\n')
    first = cli("run", "jobs.toml", "--for", "0.2", "--no-status", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    with contextlib.closing(sqlite3.connect(tmp_path / "jobs.db")) as db, db:
        db.execute("UPDATE task SET trigger_json = '[1]' WHERE task_id = 'tick'")  # edited by hand, badly
    result = cli("run", "jobs.toml", "--for", "0.5", "--no-status", cwd=tmp_path)
    assert result.returncode == 0, result.stderr  # the other tasks of the store run
    assert "Traceback" not in result.stderr
    (warning,) = [line for line in result.stderr.splitlines() if " WARNING " in line]
    assert "jobs.db" in warning, warning
    assert "'tick'" in warning, warning
    assert "trigger_json" in warning, warning


def test_a_damaged_row_is_replaced_by_its_job_keeping_its_counters_and_its_failing_run_never_happens(
    tmp_path: Path,
) -> None:
    write_jobfile(tmp_path, '[jobs.tick]\nfn = "tasks:tick"\nevery = "1h"\n')
    with Service("jobs.toml", "--no-status", cwd=tmp_path) as first:
        first.expect(r"task=tick event=completed run=1 ")
        first.send(signal.SIGTERM)
        assert first.wait() == 0
    with contextlib.closing(sqlite3.connect(tmp_path / "jobs.db")) as db, db:
        # Edited by hand, badly; a next_due that is not one makes the stand-in due at once.
        db.execute("UPDATE task SET trigger_json = '[1]', next_due = 'soon' WHERE task_id = 'tick'")
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
    assert "Traceback" not in second.output()
    with contextlib.closing(sqlite3.connect(tmp_path / "jobs.db")) as db:
        (trigger, next_due, runs), *others = db.execute(
            "SELECT trigger_json, typeof(next_due), run_count FROM task WHERE task_id = 'tick'"
        )
    assert others == []
    assert json.loads(trigger)["rate"] == 3600.0
    assert (next_due, runs) == ("real", 2)
    with Service("jobs.toml", "--no-status", cwd=tmp_path) as third:
        third.expect(r"INFO job tick: kept \(unchanged\)$")
        third.send(signal.SIGTERM)
        assert third.wait() == 0
    assert " WARNING " not in third.output()


def test_a_row_whose_counters_are_damaged_is_replaced_by_its_job_with_fresh_counters(tmp_path: Path) -> None:
    write_jobfile(tmp_path, '[jobs.tick]\nfn = "tasks:tick"\nevery = "1h"\n')
    with Service("jobs.toml", "--no-status", cwd=tmp_path) as first:
        first.expect(r"task=tick event=completed run=1 ")
        first.send(signal.SIGTERM)
        assert first.wait() == 0
    with contextlib.closing(sqlite3.connect(tmp_path / "jobs.db")) as db, db:
        db.execute("UPDATE task SET run_count = -1, next_due = 0 WHERE task_id = 'tick'")
    with Service("jobs.toml", "--no-status", cwd=tmp_path) as second:
        second.expect(
            r"INFO job tick: replaced \(its stored row was damaged: its column run_count \(-1\) "
            r"is not a count \(an int >= 0\); its counters did not decode, so they start at zero\)$"
        )
        # The run's line (bus thread) may come before or after the replace's (main thread).
        second.expect(r"INFO task=tick event=completed run=1 ", anywhere=True)
        second.send(signal.SIGTERM)
        assert second.wait() == 0
    assert "event=failed" not in second.output()
    with contextlib.closing(sqlite3.connect(tmp_path / "jobs.db")) as db:
        rows = list(db.execute("SELECT status, run_count FROM task WHERE task_id = 'tick' ORDER BY seq"))
    assert rows == [("scheduled", 1)]  # a fresh row in place of the damaged one


def test_a_one_time_job_whose_run_is_killed_after_its_outcome_is_committed_is_not_run_again(
    tmp_path: Path,
) -> None:
    # Many jobs after the one-time job make the first start's reconcile last a while (0.5 s here): the job
    # runs and its outcome is committed while the runner is still adding the others, and the
    # kill lands there, before anything but the store could have recorded what was scheduled.
    later = "".join(f'[jobs.later-{n}]\nfn = "tasks:tick"\ncron = "0 0 1 1 *"\n' for n in range(2000))
    write_jobfile(tmp_path, WELCOME + later)
    with Service("jobs.toml", "--no-status", cwd=tmp_path) as first:
        first.expect(r"task=welcome event=completed run=1 ")  # published once the outcome is committed
        first.send(signal.SIGKILL)
        assert first.wait() == -signal.SIGKILL
    assert "INFO running 2001 job(s)" not in first.output()  # killed inside the reconcile
    assert not (tmp_path / "jobs.db.jobs.json").exists()  # the store is the only record
    with Service("jobs.toml", "--no-status", cwd=tmp_path) as second:
        second.expect(r"INFO job welcome: left ended \(unchanged, and it ended completed; ")
        second.expect(r"INFO running 2001 job\(s\) from jobs.toml")
        second.send(signal.SIGTERM)
        assert second.wait() == 0
    assert "said hi" not in second.output()
    assert "task=welcome" not in second.output()


def test_an_older_versions_fingerprints_file_is_moved_into_the_store_once(tmp_path: Path) -> None:
    jobs = write_jobfile(tmp_path, WELCOME + TICKS)
    with Service("jobs.toml", "--no-status", cwd=tmp_path) as first:
        first.expect(r"task=welcome event=completed run=1 ")
        first.expect(r"INFO running 2 job\(s\)", anywhere=True)
        first.send(signal.SIGTERM)
        assert first.wait() == 0
    # Make it the store an older version left: the fingerprints beside it, none in the rows.
    recorded = fingerprints_of(load_jobfile(jobs).jobs)
    legacy = tmp_path / "jobs.db.jobs.json"
    legacy.write_text(json.dumps({"jobs": recorded}))
    with sqlite3.connect(tmp_path / "jobs.db") as db:
        db.execute("UPDATE task SET options_json = '{}'")
    db.close()
    for start in ("second", "third"):  # the third start reads the fingerprints from the rows alone
        with Service("jobs.toml", "--no-status", cwd=tmp_path) as service:
            service.expect(r"INFO job welcome: left ended \(unchanged, and it ended completed; ")
            service.expect(r"INFO job tick: kept \(unchanged\)$")
            service.send(signal.SIGTERM)
            assert service.wait() == 0, start
        assert not legacy.exists()
        assert ("deleted jobs.db.jobs.json" in service.output()) == (start == "second"), service.output()
        assert "said hi" not in service.output()
