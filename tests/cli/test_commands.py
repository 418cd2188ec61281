"""``check``, ``status`` and argument errors through a real subprocess: exit codes and messages."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from actors.cli.main import main
from actors.store import SQLiteStore, TaskDefinition
from tests.cli.helpers import Service, cli, write_jobfile

GOOD = """
[scheduler]
workers = 2
tz = "Europe/Berlin"

[jobs.tick]
fn = "tasks:tick"
every = "10s"
initial_delay = "1s"

[jobs.report]
fn = "tasks:tick"
cron = "0 9 * * MON-FRI"

[jobs.party]
fn = "tasks:tick"
at = 2099-12-24T18:00:00+01:00
"""

# Each broken file, and what its message must name: the file, the job, the key (the line for TOML).
BROKEN = {
    "toml syntax": (
        '[jobs.tick]\nfn = "tasks:tick"\nevery = 10 parsecs\n',
        ["jobs.toml: line 3", "not valid TOML"],
    ),
    "typo in a key": (
        '[jobs.tick]\nfn = "tasks:tick"\nevry = "10s"\n',
        ["job 'tick'", "key 'evry'", "did you mean 'every'"],
    ),
    "two triggers": (
        '[jobs.tick]\nfn = "tasks:tick"\nevery = "10s"\ncron = "* * * * *"\n',
        ["job 'tick'", "key 'cron'", "one trigger"],
    ),
    "no trigger": ('[jobs.tick]\nfn = "tasks:tick"\n', ["job 'tick'", "no trigger"]),
    "bad duration": (
        '[jobs.tick]\nfn = "tasks:tick"\nevery = "10 parsecs"\n',
        ["job 'tick'", "key 'every'", "not a duration"],
    ),
    "bad cron": (
        '[jobs.tick]\nfn = "tasks:tick"\ncron = "0 9 * * MON-FRY"\n',
        ["job 'tick'", "key 'cron'", "day-of-week"],
    ),
    "at without offset": (
        '[jobs.tick]\nfn = "tasks:tick"\nat = 2099-12-24T18:00:00\n',
        ["job 'tick'", "key 'at'", "no UTC offset"],
    ),
    "fn does not import": (
        '[jobs.tick]\nfn = "no_such_module:tick"\nevery = "1s"\n',
        ["job 'tick'", "key 'fn'", "no_such_module"],
    ),
    "fn not callable": (
        '[jobs.tick]\nfn = "tasks:VALUE"\nevery = "1s"\n',
        ["job 'tick'", "key 'fn'", "not a function"],
    ),
    "unknown zone": (
        '[jobs.tick]\nfn = "tasks:tick"\ncron = "0 9 * * *"\ntz = "Europe/Berlinn"\n',
        ["job 'tick'", "key 'tz'", "Europe/Berlin"],
    ),
    "workers out of range": (
        '[scheduler]\nworkers = 0\n[jobs.tick]\nfn = "tasks:tick"\nevery = "1s"\n',
        ["[scheduler]", "key 'workers'", "from 1 to 1024"],
    ),
    "key only with another trigger": (
        '[jobs.tick]\nfn = "tasks:tick"\ncron = "0 9 * * *"\ninitial_delay = "5s"\n',
        ["job 'tick'", "key 'initial_delay'", "only with"],
    ),
    "arguments JSON cannot keep": (
        '[jobs.tick]\nfn = "tasks:tick"\nevery = "1s"\nargs = [1979-05-27]\n',
        ["job 'tick'", "key 'args'", ":memory:"],
    ),
    "no jobs": ("[scheduler]\nworkers = 2\n", ["jobs.toml", "no jobs"]),
}


def test_check_prints_each_job_with_its_next_three_runs(tmp_path: Path) -> None:
    write_jobfile(tmp_path, GOOD)
    result = cli("check", "jobs.toml", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("jobs.toml: valid: 3 job(s), 2 workers")
    report = result.stdout.split("report: cron 0 9 * * MON-FRI (Europe/Berlin)")[1].splitlines()
    assert len([line for line in report[1:4] if "(Europe/Berlin)" in line and line.endswith(" UTC")]) == 3
    assert " 09:00:00 +0" in report[1]  # 09:00 Berlin time, whatever the season
    assert "2099-12-24 18:00:00 +0100 (as written)  =  2099-12-24 17:00:00 UTC" in result.stdout
    assert not (tmp_path / "jobs.db").exists()  # check runs nothing and creates nothing


@pytest.mark.parametrize(("text", "fragments"), BROKEN.values(), ids=BROKEN.keys())
def test_a_broken_file_is_refused_with_exit_2_and_a_message_naming_file_job_and_key(
    tmp_path: Path, text: str, fragments: list[str]
) -> None:
    write_jobfile(tmp_path, text)
    result = cli("check", "jobs.toml", cwd=tmp_path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    assert result.stderr.startswith("jobs.toml: ")
    for fragment in fragments:
        assert fragment in result.stderr


def test_run_refuses_a_broken_file_the_same_way_and_runs_nothing(tmp_path: Path) -> None:
    write_jobfile(tmp_path, BROKEN["typo in a key"][0])
    result = cli("run", "jobs.toml", "--for", "5", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "jobs.toml: job 'tick': key 'evry': unknown key (did you mean 'every'?)",
        "jobs.toml: job 'tick': no trigger: give one of the keys 'every', 'delay', 'cron' or 'at'",
    ]
    assert not (tmp_path / "jobs.db").exists()


def test_check_reports_every_problem_in_one_pass_imports_and_arguments_included(tmp_path: Path) -> None:
    write_jobfile(
        tmp_path,
        '[jobs.malformed]\nfn = "tasks tick"\nevery = "1s"\n'
        '[jobs.nowhere]\nfn = "no_such_module_here:tick"\nevery = "1s"\n'
        '[jobs.typo]\nfn = "tasks:tik"\nevery = "1s"\n'
        '[jobs.talkative]\nfn = "tasks:say"\nevery = "1s"\nargs = ["a", "b", "c"]\n'
        '[jobs.misnamed]\nfn = "tasks:say"\nevery = "1s"\nkwargs = { wrd = "hello" }\n'
        '[jobs.silent]\nfn = "tasks:say"\nevery = "1s"\n'
        '[jobs.fine]\nfn = "tasks:say"\nevery = "1s"\nkwargs = { word = "hello" }\n',
    )
    result = cli("check", "jobs.toml", cwd=tmp_path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert lines == [
        "jobs.toml: job 'malformed': key 'fn': function reference 'tasks tick' is not of the form "
        '"package.module:function"',
        "jobs.toml: job 'nowhere': key 'fn': cannot use 'no_such_module_here:tick': ModuleNotFoundError: "
        "No module named 'no_such_module_here'",
        "jobs.toml: job 'typo': key 'fn': cannot use 'tasks:tik': ImportError: cannot import 'tasks:tik': "
        "module 'tasks' has no attribute 'tik'",
        "jobs.toml: job 'talkative': key 'args': tasks:say(word: 'str') -> 'None' cannot take these "
        "arguments: too many positional arguments",
        "jobs.toml: job 'misnamed': key 'kwargs': tasks:say(word: 'str') -> 'None' cannot take these "
        "arguments: missing a required argument: 'word'",
        "jobs.toml: job 'silent': key 'args': tasks:say(word: 'str') -> 'None' cannot take these "
        "arguments: missing a required argument: 'word'",
    ]


def test_run_refuses_arguments_the_function_cannot_take_as_check_does(tmp_path: Path) -> None:
    write_jobfile(tmp_path, '[jobs.talkative]\nfn = "tasks:say"\nevery = "1s"\nargs = ["a", "b", "c"]\n')
    result = cli("run", "jobs.toml", "--for", "5", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "jobs.toml: job 'talkative': key 'args': tasks:say(word: 'str') -> 'None' cannot take these "
        "arguments: too many positional arguments"
    ]
    assert not (tmp_path / "jobs.db").exists()


# Hostile job files: each is a clean message naming the file, and exit 2, from check and from run.
HOSTILE = {
    "arrays nested 2000 deep": '[jobs.t]\nfn = "tasks:tick"\nevery = 1\nargs = ' + "[" * 2000 + "]" * 2000,
    "tables nested 2000 deep": '[jobs.t]\nfn = "tasks:tick"\nevery = 1\nkwargs = '
    + "{a=" * 2000
    + "1"
    + "}" * 2000,
    "arrays nested 200 deep": '[jobs.t]\nfn = "tasks:tick"\nevery = 1\nargs = ' + "[" * 200 + "]" * 200,
    "an integer of 5000 digits": '[jobs.t]\nfn = "tasks:tick"\nevery = ' + "9" * 5000,
    "an integer past 64 bits": '[jobs.t]\nfn = "tasks:tick"\nevery = 1\nargs = [' + "9" * 30 + "]",
    "a duration of 1e300 seconds": '[jobs.t]\nfn = "tasks:tick"\nevery = 1e300',
    "a duration string past any date": '[jobs.t]\nfn = "tasks:tick"\nevery = "' + "9" * 400 + 'd"',
    "binary": "\x00\x01\x02\xff\xfe garbage",
    "the jobs as an array of tables": '[[jobs]]\nfn = "tasks:tick"\nevery = 1',
    "a retry of the wrong type": '[jobs.t]\nfn = "tasks:tick"\nevery = 1\nretry = "3 times"',
    "a retry on no exception class": '[jobs.t]\nfn = "tasks:tick"\nevery = 1\nretry = { on = "len" }',
    "a module that exits as it is imported": '[jobs.t]\nfn = "sys_exit_at_import:f"\nevery = 1',
}


@pytest.mark.parametrize("text", HOSTILE.values(), ids=HOSTILE.keys())
@pytest.mark.parametrize("command", ["check", "run"])
def test_a_hostile_job_file_is_a_clean_message_and_exit_2(tmp_path: Path, text: str, command: str) -> None:
    path = write_jobfile(tmp_path, "")
    path.write_bytes(text.encode("latin-1"))  # "binary" holds bytes that are not UTF-8
    (tmp_path / "sys_exit_at_import.py").write_text("import sys\nsys.exit(3)\n")
    options = ["--store", ":memory:", "--for", "5"] if command == "run" else []
    result = cli(command, "jobs.toml", *options, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("jobs.toml: ")
    assert all(len(line) < 400 for line in result.stderr.splitlines())


def test_run_with_a_store_refuses_arguments_json_cannot_keep_as_check_does(tmp_path: Path) -> None:
    write_jobfile(
        tmp_path,
        '[scheduler]\nstore = ":memory:"\n[jobs.tick]\nfn = "tasks:tick"\nevery = "1s"\n'
        "args = [1979-05-27]\n",
    )
    result = cli("run", "jobs.toml", "--store", "elsewhere.db", "--for", "5", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith("jobs.toml: job 'tick': key 'args': args[0] is a date"), result.stderr
    assert not (tmp_path / "elsewhere.db").exists()


def test_a_missing_job_file_is_exit_2(tmp_path: Path) -> None:
    result = cli("run", "nowhere.toml", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip() == "nowhere.toml: cannot read the job file: No such file or directory"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run"], "the following arguments are required: JOBFILE"),
        (["run", "jobs.toml", "--for", "soon"], "argument --for: 'soon' is not a duration"),
        (["run", "jobs.toml", "--for", "0"], "argument --for: '0' is no time at all"),
        (["run", "jobs.toml", "--for", "1e300"], "argument --for: '1e300' is longer than 100 years"),
        (["run", "jobs.toml", "--grace", "-5"], "argument --grace: '-5' is negative"),
        (["run", "jobs.toml", "--grace", "nan"], "argument --grace: 'nan' is not a finite number of seconds"),
        (["run", "jobs.toml", "--workers", "0"], "argument --workers: expected an integer from 1 to 1024"),
        (["run", "jobs.toml", "--log-level", "loud"], "argument --log-level: invalid choice: 'loud'"),
        (["status"], "give either a JOBFILE or --store PATH"),
        (["status", "jobs.toml", "--store", "x.db"], "give either a JOBFILE or --store PATH"),
        (["launch"], "invalid choice: 'launch'"),
    ],
)
def test_bad_arguments_are_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    write_jobfile(tmp_path, GOOD)
    result = cli(*args, cwd=tmp_path)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_status_of_a_store_not_yet_created_is_exit_1(tmp_path: Path) -> None:
    write_jobfile(tmp_path, GOOD)
    result = cli("status", "jobs.toml", cwd=tmp_path)
    assert result.returncode == 1
    assert "jobs.db: no such store file (a run of the job file creates it)" in result.stderr


def test_status_of_a_memory_only_job_file_is_exit_2(tmp_path: Path) -> None:
    write_jobfile(
        tmp_path, '[scheduler]\nstore = ":memory:"\n' + GOOD.split("[scheduler]")[1].split("\n", 3)[3]
    )
    result = cli("status", "jobs.toml", cwd=tmp_path)
    assert result.returncode == 2
    assert 'store = ":memory:"' in result.stderr


def test_status_given_a_store_instead_of_the_job_file_says_so_and_suggests_store(tmp_path: Path) -> None:
    write_jobfile(tmp_path, GOOD)
    with SQLiteStore(tmp_path / "tasks.db"):
        pass  # a store file, as a run leaves it
    result = cli("status", "tasks.db", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == (
        "tasks.db: this looks like a task store (an SQLite database), not a job file; "
        "to read it: status --store tasks.db\n"
    )
    assert cli("status", "--store", "tasks.db", cwd=tmp_path).returncode == 0


def test_check_shows_a_postgresql_store_without_its_password(tmp_path: Path) -> None:
    store = 'store = "postgresql://app:s3cret@db.internal:5433/jobs"'
    write_jobfile(tmp_path, GOOD.replace("[scheduler]\n", f"[scheduler]\n{store}\n"))
    result = cli("check", "jobs.toml", cwd=tmp_path)  # check connects to nothing
    assert result.returncode == 0, result.stderr
    assert "store postgresql://app@db.internal:5433/jobs\n" in result.stdout
    assert "s3cret" not in result.stdout


def test_check_and_run_refuse_a_malformed_postgresql_url_naming_the_key(tmp_path: Path) -> None:
    store = 'store = "postgresql://app:s3cret@[db/jobs"'
    write_jobfile(tmp_path, GOOD.replace("[scheduler]\n", f"[scheduler]\n{store}\n"))
    for command in ("check", "run"):
        result = cli(command, "jobs.toml", cwd=tmp_path)
        assert result.returncode == 2, result.stderr
        assert result.stderr.startswith("jobs.toml: [scheduler] key 'store': not a PostgreSQL URL")
        assert "s3cret" not in result.stderr
        assert "Traceback" not in result.stderr


def test_the_demo_is_still_there(tmp_path: Path) -> None:
    result = cli("demo", cwd=tmp_path)
    assert result.returncode == 0
    assert "Fixed rate vs fixed delay" in result.stdout


def test_the_console_script_is_the_same_program(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("pykka-taskscheduler")
    if not script.exists():
        pytest.skip("the package is not installed in this interpreter's environment (pip install -e .)")
    write_jobfile(tmp_path, GOOD)
    result = subprocess.run(
        [str(script), "check", "jobs.toml"], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("jobs.toml: valid: 3 job(s), 2 workers")
    # Its help names it as it was run, not as `python -m actors`.
    usage = subprocess.run([str(script), "--help"], capture_output=True, text=True, check=False)
    assert usage.returncode == 0, usage.stderr
    assert usage.stdout.startswith("usage: pykka-taskscheduler "), usage.stdout
    assert "python -m actors" not in usage.stdout


needs_proc_locks = pytest.mark.skipif(
    not Path("/proc/locks").exists(), reason="whether a lock is held is known from /proc/locks (Linux)"
)


@needs_proc_locks
def test_status_of_a_store_no_scheduler_holds_says_so_and_shows_past_due_times_as_overdue(
    tmp_path: Path,
) -> None:
    with SQLiteStore(tmp_path / "jobs.db") as store:
        store.add(
            TaskDefinition(
                task_id="nightly",
                fn_ref="tasks:tick",
                args_json="[]",
                kwargs_json="{}",
                trigger_json='{"rate": 60.0, "anchor": 0.0}',
                options_json="{}",
                next_due=time.time() - 200,
            )
        )
    result = cli("status", "--store", "jobs.db", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[1] == "jobs.db: no scheduler holds it: nothing runs until one starts"
    assert re.match(r"nightly +every 1m +scheduled +\d\d:\d\d:\d\d \(overdue by 3m\) +0 +0 ", lines[3]), lines


@needs_proc_locks
def test_status_says_which_process_holds_the_store_while_a_run_does(tmp_path: Path) -> None:
    write_jobfile(tmp_path, '[jobs.tick]\nfn = "tasks:tick"\nevery = "10s"\n')
    with Service("jobs.toml", "--no-status", cwd=tmp_path) as service:
        service.expect(r"INFO running 1 job\(s\) from jobs.toml")
        held = cli("status", "jobs.toml", cwd=tmp_path)
        service.send(signal.SIGTERM)
        assert service.wait() == 0
    assert held.returncode == 0, held.stderr
    assert held.stdout.splitlines()[1] == (
        f"jobs.db: held by a scheduler (process {service.process.pid}): it runs the tasks; "
        "a task due a while ago may be running"
    )
    after = cli("status", "jobs.toml", cwd=tmp_path)
    assert after.stdout.splitlines()[1] == "jobs.db: no scheduler holds it: nothing runs until one starts"


def test_an_error_no_command_foresaw_is_one_line_and_exit_1_and_traceback_shows_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken_status(jobfile: str | None, store: str | None) -> int:
        raise RuntimeError("a bug in status")  # what the safety net is for: an error nobody foresaw

    monkeypatch.setattr("actors.cli.status.status", broken_status)
    assert main(["status", "--store", "x.db"]) == 1
    assert capsys.readouterr().err == (
        "x.db: RuntimeError: a bug in status (unexpected; --traceback shows where it came from)\n"
    )
    with pytest.raises(RuntimeError, match="a bug in status"):
        main(["--traceback", "status", "--store", "x.db"])
