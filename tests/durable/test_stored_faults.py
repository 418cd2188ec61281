"""Stored tasks that cannot run as they are: damaged rows, modules that fail to import, process
tasks on a scheduler without processes (issue 21, points 3, 5 and 11).

Each test writes its tasks through a scheduler, then edits the file with ``sqlite3`` directly, as
an operator with the shell would, and starts a new scheduler on it. The promise: the start never
fails for one task; that task is seen (``tasks``, ``info``, ``handle``), each of its due runs
fails with an error that says why (a ``StoreError`` naming the file, the task and the column for
a damaged row), and every other task of the file loads and runs.
"""

from __future__ import annotations

import math
import sqlite3
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from actors import NoWorkerProcessesError, Scheduler, StoreError, TaskHandle
from actors.runtime.durable import damage_of
from messages import EventKind, TaskStatus
from tests.conftest import EventRecorder
from tests.durable import tasks
from tests.durable.files import ledger, stored

RECORD = "tests.durable.tasks:record"


def edit(path: Path, sql: str, *params: object) -> None:
    """Change the file behind the scheduler's back (no scheduler holds it now)."""
    db = sqlite3.connect(path)
    try:
        with db:
            db.execute(sql, params)
    finally:
        db.close()


def write_tasks(start: Callable[..., Scheduler], *ids: str, rate: str | None = None) -> None:
    """Store one-time tasks due in 1 s (and a fixed-rate one every 10 s), then shut down."""
    s = start()
    for task_id in ids:
        s.schedule_once(RECORD, delay=1.0, task_id=task_id, args=(task_id,))
    if rate is not None:
        s.schedule_at_fixed_rate(RECORD, 10.0, task_id=rate, args=(rate,))
    s.shutdown()


def called_with() -> list[object]:
    return sorted(args[0] for _, args, _ in tasks.CALLS)


# -- damaged rows (point 11) ----------------------------------------------------------------------

ZERO_INTERVAL = "interval must be greater than zero"
DAMAGES = [
    pytest.param("trigger_json", "[1]", "is JSON list, not an object", id="trigger-not-an-object"),
    pytest.param("trigger_json", '{"rate": 0, "anchor": 0}', ZERO_INTERVAL, id="rate-zero"),
    pytest.param("trigger_json", '{"rate": -5, "anchor": 0}', ZERO_INTERVAL, id="rate-negative"),
    pytest.param("trigger_json", "{}", "not one", id="trigger-of-no-kind"),
    pytest.param("trigger_json", '{"cron": "61 * * * *", "tz": "UTC"}', "minute", id="cron-bad-field"),
    pytest.param("fn_ref", "not a reference", "is not of the form", id="malformed-reference"),
    pytest.param("args_json", "not json", "is not JSON", id="args-not-json"),
    pytest.param("args_json", '{"a": 1}', "not an array", id="args-not-an-array"),
    pytest.param("kwargs_json", "[1]", "not an object", id="kwargs-not-an-object"),
    pytest.param(
        "options_json", '{"max_consecutive_failures": "x"}', "max_consecutive_failures", id="bad-option"
    ),
    # (a name no scheduler registered is no damage: its runs fail naming it, tests/executors)
    pytest.param("options_json", '{"executor": 7}', "executor", id="bad-executor"),
    pytest.param("next_due", "soon", "is not a number", id="next-due-text"),
    pytest.param("next_due", math.inf, "is not finite", id="next-due-infinite"),
]


@pytest.mark.parametrize(("column", "value", "reason"), DAMAGES)
def test_a_damaged_row_fails_its_runs_naming_file_task_and_column_and_the_rest_runs(
    start: Callable[..., Scheduler], path: Path, column: str, value: object, reason: str
) -> None:
    write_tasks(start, "damaged", "sound", rate="hourly")
    edit(path, f"UPDATE task SET {column} = ? WHERE task_id = 'damaged'", value)

    s = start()  # the start does not fail for one row
    if column != "next_due":  # (a due time that does not decode means due now: it has run already)
        listed = {info.task_id: info for info in s.tasks()}
        assert set(listed) == {"damaged", "sound", "hourly"}
        assert listed["damaged"].status is TaskStatus.SCHEDULED
        assert isinstance(s.handle("damaged"), TaskHandle)
    s.advance(5.0)

    info = s.info("damaged")
    assert info.status is TaskStatus.FAILED
    error = info.last_error
    assert isinstance(error, StoreError)
    message = str(error)
    assert str(path) in message
    assert "'damaged'" in message
    assert column in message
    assert reason in message
    assert s.info("sound").status is TaskStatus.COMPLETED
    assert s.info("hourly").status is TaskStatus.SCHEDULED
    assert called_with() == ["hourly", "sound"]
    s.shutdown()
    row = stored(path)["damaged"]
    assert row.status == "failed"
    if column != "next_due":  # (an ended row has none)
        assert getattr(row, column) == value  # the damaged column is left as it was, for the operator
    assert "StoreError" in (row.last_error or "")
    assert [(run.task_id, run.outcome) for run in ledger(path) if run.task_id == "damaged"] == [
        ("damaged", "failed")
    ]


@pytest.mark.parametrize(("column", "value", "reason"), DAMAGES)
def test_damage_of_names_the_rows_that_load_as_stand_ins_as_their_runs_error_does(
    start: Callable[..., Scheduler], path: Path, column: str, value: object, reason: str
) -> None:
    write_tasks(start, "damaged", "sound", rate="hourly")
    edit(path, f"UPDATE task SET {column} = ? WHERE task_id = 'damaged'", value)
    rows = stored(path)
    damage = damage_of(rows["damaged"])
    assert damage is not None
    assert (damage.column, damage.counters_decode) == (column, True)
    assert reason in damage.reason
    assert damage_of(rows["sound"]) is None
    assert damage_of(rows["hourly"]) is None
    s = start()
    s.advance(5.0)
    assert damage.reason in str(s.info("damaged").last_error)


def test_damage_of_says_whether_a_damaged_rows_counters_decode(
    start: Callable[..., Scheduler], path: Path
) -> None:
    write_tasks(start, "counts", "trigger")
    edit(path, "UPDATE task SET run_count = -1 WHERE task_id = 'counts'")
    edit(path, "UPDATE task SET trigger_json = '[1]', failure_count = 2 WHERE task_id = 'trigger'")
    rows = stored(path)
    counts, trigger = damage_of(rows["counts"]), damage_of(rows["trigger"])
    assert counts is not None
    assert (counts.column, counts.counters_decode) == ("run_count", False)
    assert trigger is not None
    assert (trigger.column, trigger.counters_decode) == ("trigger_json", True)


def test_a_parked_row_whose_arguments_are_not_json_is_listed_and_fails_when_due(
    start: Callable[..., Scheduler], path: Path
) -> None:
    """The row is parked at the load (its arguments stay text until it is due), so queries see it first."""
    write_tasks(start, *(f"t{i}" for i in range(5)))
    edit(path, "UPDATE task SET args_json = '[1, ' WHERE task_id = 't2'")
    s = start()
    for _ in range(3):  # every query, every time: the row never vanishes, no list is None
        infos = s.tasks()
        assert isinstance(infos, list)
        assert [info.task_id for info in infos] == [f"t{i}" for i in range(5)]
        assert s.info("t2").status is TaskStatus.SCHEDULED
    handle = s.handle("t2")
    s.advance(5.0)
    assert handle.done()
    assert s.info("t2").status is TaskStatus.FAILED
    assert "args_json" in str(s.info("t2").last_error)
    assert called_with() == ["t0", "t1", "t3", "t4"]
    assert s.tasks() == []


def test_a_damaged_row_due_at_start_does_not_stop_the_start(
    start: Callable[..., Scheduler], path: Path
) -> None:
    write_tasks(start, "late", "other")
    edit(path, "UPDATE task SET args_json = 'nope', next_due = 0 WHERE task_id = 'late'")  # due long ago
    recorder = EventRecorder()
    s = start(listeners=[recorder])
    s.advance(5.0)
    failed = [event for event in recorder.events if event.kind is EventKind.FAILED]
    assert [event.task_id for event in failed] == ["late"]
    assert isinstance(failed[0].error, StoreError)
    assert s.info("other").status is TaskStatus.COMPLETED


def test_a_damaged_recurring_row_keeps_its_trigger_and_failure_limit(
    start: Callable[..., Scheduler], path: Path
) -> None:
    s = start()
    s.schedule_at_fixed_rate(RECORD, 10.0, task_id="r", initial_delay=5.0, max_consecutive_failures=3)
    s.shutdown()
    edit(path, "UPDATE task SET kwargs_json = '\"x\"' WHERE task_id = 'r'")
    s = start()
    s.advance(40.0)  # slots at 5, 15, 25, 35
    info = s.info("r")
    assert info.status is TaskStatus.FAILED  # three runs, three failures: its limit
    assert (info.run_count, info.consecutive_failures) == (3, 3)
    assert isinstance(info.last_error, StoreError)


# -- modules that fail as they are imported (point 5) -----------------------------------------------


@pytest.fixture
def broken_modules(tmp_path: Path) -> Iterator[dict[str, str]]:
    """Modules that raise as they are imported, on sys.path for this test."""
    folder = tmp_path / "modules"
    folder.mkdir()
    sources = {
        "syntax_error": "def job(:\n    pass\n",
        "raises_at_import": "raise RuntimeError('no database at import')\ndef job():\n    pass\n",
        "exits_at_import": "import sys\nsys.exit(3)\ndef job():\n    pass\n",
    }
    names = {}
    for kind, source in sources.items():
        name = f"storeload_{kind}_{tmp_path.name.replace('-', '_')}"
        (folder / f"{name}.py").write_text(textwrap.dedent(source))
        names[kind] = name
    sys.path.insert(0, str(folder))
    yield names
    sys.path.remove(str(folder))
    for name in names.values():
        sys.modules.pop(name, None)


@pytest.mark.parametrize("kind", ["syntax_error", "raises_at_import", "exits_at_import"])
def test_a_stored_task_whose_module_fails_to_import_fails_each_run_and_the_store_runs(
    start: Callable[..., Scheduler], path: Path, broken_modules: dict[str, str], kind: str
) -> None:
    write_tasks(start, "broken", "sound", rate="hourly")
    edit(path, "UPDATE task SET fn_ref = ? WHERE task_id = 'broken'", f"{broken_modules[kind]}:job")
    s = start()
    s.advance(5.0)
    info = s.info("broken")
    assert info.status is TaskStatus.FAILED
    assert isinstance(info.last_error, ImportError)
    assert broken_modules[kind] in str(info.last_error)
    assert s.info("sound").status is TaskStatus.COMPLETED
    assert s.info("hourly").status is TaskStatus.SCHEDULED
    assert called_with() == ["hourly", "sound"]


def test_scheduling_a_reference_whose_module_raises_at_import_is_a_value_error(
    start: Callable[..., Scheduler], broken_modules: dict[str, str]
) -> None:
    s = start()
    for name in broken_modules.values():
        with pytest.raises(ValueError, match="does not name an importable function"):
            s.schedule_once(f"{name}:job", delay=1.0)


# -- a process task on a scheduler without processes (point 3) ------------------------------------


def test_a_stored_process_task_fails_each_run_on_a_scheduler_without_processes(
    start: Callable[..., Scheduler], path: Path
) -> None:
    s = start(processes=1)
    s.schedule_once("tests.durable.tasks:noop", delay=1.0, task_id="once", executor="process")
    s.schedule_at_fixed_rate(
        "tests.durable.tasks:noop",
        10.0,
        task_id="rate",
        initial_delay=5.0,
        executor="process",
        max_consecutive_failures=2,
    )
    s.schedule_once(RECORD, delay=1.0, task_id="thread", args=("thread",))
    s.shutdown()

    recorder = EventRecorder()
    s = start(processes=0, listeners=[recorder])
    s.advance(30.0)  # the fixed-rate slots at 5 and 15 fail: its limit
    s.settle(timeout=10)
    for task_id in ("once", "rate"):
        info = s.info(task_id)
        assert info.status is TaskStatus.FAILED, task_id  # never left SCHEDULED for ever
        assert isinstance(info.last_error, NoWorkerProcessesError)
        assert "processes=N" in str(info.last_error)
    assert s.info("rate").run_count == 2
    assert s.info("thread").status is TaskStatus.COMPLETED
    kinds = [(event.task_id, event.kind) for event in recorder.events if event.task_id == "once"]
    assert kinds == [("once", EventKind.DUE), ("once", EventKind.FAILED)]
    s.shutdown()
    assert stored(path)["once"].status == "failed"


def test_a_damaged_task_is_repaired_by_scheduling_it_again_with_replace(
    start: Callable[..., Scheduler], path: Path
) -> None:
    write_tasks(start, "damaged")
    edit(path, "UPDATE task SET trigger_json = '[1]' WHERE task_id = 'damaged'")
    s = start()
    s.schedule_once(RECORD, delay=2.0, task_id="damaged", args=("repaired",), if_exists="replace")
    s.advance(5.0)
    assert s.info("damaged").status is TaskStatus.COMPLETED
    assert called_with() == ["repaired"]
    s.shutdown()
    row = stored(path)["damaged"]
    assert (row.status, row.trigger_json) == ("completed", '{"once":true}')
