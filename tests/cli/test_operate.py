"""``pause``, ``resume``, ``run-now`` and ``history`` through real subprocesses, beside a real ``run``.

The ``run`` holds its SQLite store; each command asks it through the store's mailbox, and the
test waits for the service's own log lines saying it was done (no sleeps).
"""

from __future__ import annotations

import json
import re
import signal
import sys
from pathlib import Path

import pytest

from tests.cli.helpers import Service, cli, environment, write_jobfile
from tests.cli.test_live_view import STYLED

JOBS = """
[jobs.tick]
fn = "tasks:tick"
every = "100ms"

[jobs.kept]
fn = "tasks:answer"
every = "100ms"
args = [42]
keep_result = true
"""


def status_of(folder: Path, job: str) -> str:
    status = cli("status", "jobs.toml", cwd=folder)
    assert status.returncode == 0, status.stderr
    row = re.search(rf"^{job} +every \S+ +(\w+) ", status.stdout, re.M)
    assert row, status.stdout
    return row.group(1)


def runs_of(folder: Path, job: str, *extra: str) -> list[dict[str, object]]:
    history = cli("history", "jobs.toml", job, "--json", *extra, cwd=folder)
    assert history.returncode == 0, history.stderr
    runs: list[dict[str, object]] = json.loads(history.stdout)
    return runs


def test_pause_run_now_and_resume_reach_the_running_service_within_a_second(tmp_path: Path) -> None:
    write_jobfile(tmp_path, JOBS)
    with Service("jobs.toml", "--no-status", cwd=tmp_path) as service:
        service.expect(r"task=tick event=completed run=2 ")
        paused = cli("pause", "jobs.toml", "tick", cwd=tmp_path, timeout=10)
        assert (paused.returncode, paused.stdout) == (0, "jobs.toml: job 'tick': paused\n"), paused.stderr
        # The service logged it before the command returned: it answers only once it is done.
        service.expect(r"task=tick event=paused$", anywhere=True)
        service.expect(r"INFO job tick: pause: paused \(asked by the pause command\)$")
        assert status_of(tmp_path, "tick") == "paused"  # committed in the store
        again = cli("pause", "jobs.toml", "tick", cwd=tmp_path)
        assert (again.returncode, again.stdout) == (0, "jobs.toml: job 'tick': it is paused already\n")

        ran = cli("run-now", "jobs.toml", "tick", cwd=tmp_path)
        assert (ran.returncode, ran.stdout) == (0, "jobs.toml: job 'tick': started a run now\n"), ran.stderr
        service.expect(r"INFO job tick: run-now: started a run now", anywhere=True)
        manual = int(service.expect(r"task=tick event=completed run=(\d+) ").group(1))  # the one run
        # The run is counted like any other; the task stays paused.
        newest = runs_of(tmp_path, "tick", "--limit", "1")[0]
        assert (newest["run"], newest["outcome"]) == (manual, "completed")
        assert status_of(tmp_path, "tick") == "paused"

        resumed = cli("resume", "jobs.toml", "tick", cwd=tmp_path)
        assert (resumed.returncode, resumed.stdout) == (0, "jobs.toml: job 'tick': resumed\n")
        # The bus thread logs the event, the main thread the answer: in either order.
        service.expect(r"task=tick event=resumed$", anywhere=True)
        service.expect(r"INFO job tick: resume: resumed", anywhere=True)
        resumed_run = int(service.expect(r"task=tick event=completed run=(\d+) ").group(1))
        assert resumed_run > manual
        service.send(signal.SIGTERM)
        assert service.wait() == 0
    assert "Traceback" not in service.output()


def test_history_prints_the_runs_newest_first_with_the_kept_values(tmp_path: Path) -> None:
    write_jobfile(tmp_path, JOBS)
    with Service("jobs.toml", "--no-status", cwd=tmp_path) as service:
        service.expect(r"task=kept event=completed run=3 ")
        runs = runs_of(tmp_path, "kept", "--limit", "2")  # beside the running service
        service.send(signal.SIGTERM)
        assert service.wait() == 0
    assert len(runs) == 2
    first, second = runs
    assert isinstance(first["run"], int)
    assert second["run"] == first["run"] - 1
    assert first["value"] == {"answer": 42}
    assert (first["outcome"], first["attempt"], first["node"]) == ("completed", 1, None)
    assert first["manual"] is False
    assert str(first["due"]) <= str(first["started"]) <= str(first["ended"])
    table = cli("history", "jobs.toml", "kept", "--limit", "3", cwd=tmp_path)  # after the run too
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].startswith("jobs.toml: job 'kept': 3 run(s) in jobs.db, newest first; times in ")
    assert lines[1].split() == ["run", "due", "started", "ended", "outcome", "error", "attempt", "node"]
    assert re.match(r"\d+ +\d{4}-\d\d-\d\d \d\d:\d\d:\d\d +(\S+ \S+ +){2}completed +- +1 +-$", lines[2])
    assert len(lines) == 5


def test_a_job_paused_with_no_run_holding_the_store_starts_paused(tmp_path: Path) -> None:
    write_jobfile(tmp_path, JOBS)
    with Service("jobs.toml", "--no-status", cwd=tmp_path) as first:
        first.expect(r"task=tick event=completed run=1 ")
        first.send(signal.SIGTERM)
        assert first.wait() == 0
    paused = cli("pause", "jobs.toml", "tick", cwd=tmp_path)
    assert paused.returncode == 0, paused.stderr
    assert paused.stdout == (
        "jobs.toml: job 'tick': paused (no run holds jobs.db: the next one starts it paused)\n"
    )
    run_now = cli("run-now", "jobs.toml", "tick", cwd=tmp_path)
    assert run_now.returncode == 1
    assert run_now.stderr == (
        "jobs.toml: job 'tick': not run now: no run holds jobs.db: run-now needs a running scheduler\n"
    )
    runs = len(runs_of(tmp_path, "tick"))
    with Service("jobs.toml", "--no-status", cwd=tmp_path) as second:
        second.expect(r"INFO job tick: kept \(unchanged\)$", anywhere=True)
        second.expect(r"task=kept event=completed run=\d+ ")
        second.expect(r"task=kept event=completed run=\d+ ")  # tick would have run by now
        assert status_of(tmp_path, "tick") == "paused"
        second.send(signal.SIGTERM)
        assert second.wait() == 0
    assert "task=tick event=completed" not in second.output()
    assert len(runs_of(tmp_path, "tick")) == runs


def test_paused_true_starts_the_job_paused_and_every_reconcile_follows_the_file(tmp_path: Path) -> None:
    jobs = write_jobfile(tmp_path, JOBS.replace('every = "100ms"\n', 'every = "100ms"\npaused = true\n', 1))
    with Service("jobs.toml", "--no-status", cwd=tmp_path) as service:
        service.expect(r"INFO job tick: added \(new job\)$")
        service.expect(r"INFO job tick: paused \(the job file says paused = true\)$")
        service.expect(r"task=kept event=completed run=3 ")
        assert status_of(tmp_path, "tick") == "paused"
        assert runs_of(tmp_path, "tick") == []  # not one run before the pause landed

        resumed = cli("resume", "jobs.toml", "tick", cwd=tmp_path)
        assert resumed.returncode == 0
        assert resumed.stdout.splitlines()[1] == (
            "jobs.toml: job 'tick': note: the job file says paused = true, "
            "so a reload or restart pauses it again"
        )
        service.expect(r"task=tick event=completed run=\d+ ")
        service.send(signal.SIGHUP)  # the file says paused = true: paused again, not replaced
        service.expect(r"INFO job tick: kept \(unchanged\)$")
        service.expect(r"INFO job tick: paused \(the job file says paused = true\)$")

        jobs.write_text(JOBS)  # no key: the reconcile leaves the pause as it is
        service.send(signal.SIGHUP)
        service.expect(r"INFO job tick: kept \(unchanged\)$")
        service.expect(r"INFO reloaded jobs.toml: 2 job\(s\)$")
        assert status_of(tmp_path, "tick") == "paused"

        jobs.write_text(JOBS.replace('every = "100ms"\n', 'every = "100ms"\npaused = false\n', 1))
        service.send(signal.SIGHUP)
        service.expect(r"INFO job tick: kept \(unchanged\)$")
        service.expect(r"INFO job tick: resumed \(the job file says paused = false\)$")
        service.expect(r"task=tick event=completed run=\d+ ")
        service.send(signal.SIGTERM)
        assert service.wait() == 0


def test_check_names_the_new_keys_of_each_job(tmp_path: Path) -> None:
    write_jobfile(
        tmp_path,
        '[jobs.a]\nfn = "tasks:tick"\nevery = "10s"\noverlap = "queue"\ncatch_up = "all"\n'
        'max_catch_up = 5\njitter = "2s"\nkeep_result = true\npaused = true\n',
    )
    check = cli("check", "jobs.toml", cwd=tmp_path)
    assert check.returncode == 0, check.stderr
    assert check.stdout.splitlines()[1] == (
        "a: every 10s, overlap queue, catch up all (at most 5), jitter 2s, keeps results, paused: tasks:tick"
    )


def test_unknown_jobs_stores_that_keep_nothing_and_bad_keys_are_refused_with_what_and_where(
    tmp_path: Path,
) -> None:
    write_jobfile(tmp_path, JOBS)
    for command in ("pause", "resume", "run-now", "history"):
        unknown = cli(command, "jobs.toml", "nope", cwd=tmp_path)
        assert unknown.returncode == 2, command
        assert unknown.stderr == "jobs.toml: no job 'nope' in the file (its jobs: 'tick', 'kept')\n"
    no_store = cli("pause", "jobs.toml", "tick", cwd=tmp_path)
    assert no_store.returncode == 1
    assert no_store.stderr == (
        "jobs.toml: job 'tick': jobs.db: no such store (a run of the job file creates it)\n"
    )
    memory = cli("pause", "jobs.toml", "tick", "--store", ":memory:", cwd=tmp_path)
    assert memory.returncode == 2
    assert memory.stderr.startswith("--store :memory: keeps nothing, so pause cannot reach the jobs")
    bad = write_jobfile(
        tmp_path,
        '[jobs.a]\nfn = "tasks:tick"\nevery = "1s"\noverlap = "quue"\njitter = -1\nmax_instances = 0\n'
        'paused = "yes"\ncatch_up = 3\nkeep_result = 1\n'
        '[jobs.b]\nfn = "tasks:tick"\nat = 2030-01-01T00:00:00Z\nmax_catch_up = 5\n'
        '[jobs.c]\nfn = "tasks:tick"\ncron = "0 * * * *"\nmax_instances = 2\n',
        "bad.toml",
    )
    check = cli("check", bad.name, cwd=tmp_path)
    assert check.returncode == 2
    *lines, last = check.stderr.splitlines()
    # The library's own rule (check_policies) says what max_instances needs; its words are its own.
    assert last.startswith("bad.toml: job 'c': key 'max_instances': max_instances")
    assert lines == [
        'bad.toml: job \'a\': key \'overlap\': expected "skip" or "queue" or "allow" or "replace", '
        'found "quue" (did you mean "queue"?)',
        "bad.toml: job 'a': key 'jitter': -1 is negative; a duration is 0 seconds or more",
        "bad.toml: job 'a': key 'max_instances': expected an integer of 1 or more, found 0",
        "bad.toml: job 'a': key 'paused': expected true or false, found a string \"yes\"",
        'bad.toml: job \'a\': key \'catch_up\': expected "latest" or "all" or "none", found an integer 3',
        "bad.toml: job 'a': key 'keep_result': expected true or false, found an integer 1",
        "bad.toml: job 'b': key 'max_catch_up': only with 'every', 'delay' or 'cron', and this job has 'at'",
    ]


def test_the_live_view_shows_a_job_paused_by_the_command_within_a_second(tmp_path: Path) -> None:
    pexpect = pytest.importorskip("pexpect")
    write_jobfile(tmp_path, JOBS)
    child = pexpect.spawn(
        sys.executable,
        ["-m", "actors", "run", "jobs.toml", "--status"],
        cwd=str(tmp_path),
        env=environment(),
        dimensions=(30, 160),
        encoding="utf-8",
        timeout=15,
    )
    try:
        child.expect(rf"│ tick +│ every 100ms +│{STYLED}scheduled{STYLED}│")
        paused = cli("pause", "jobs.toml", "tick", cwd=tmp_path)
        assert paused.returncode == 0, paused.stderr
        child.expect(rf"│ tick +│ every 100ms +│{STYLED}paused{STYLED}│", timeout=1.5)  # within a second
        resumed = cli("resume", "jobs.toml", "tick", cwd=tmp_path)
        assert resumed.returncode == 0, resumed.stderr
        child.expect(rf"│ tick +│ every 100ms +│{STYLED}(scheduled|running){STYLED}│", timeout=1.5)
        child.sendintr()
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
