"""``history JOBFILE JOB``: how a job's last runs ended, newest first, read from its store's run ledger.

It only reads (an SQLite file read-only, without its lock; a PostgreSQL database as any client),
so it works with or without a ``run`` on the store. The ledger keeps the newest 10,000 runs of
the store by default (``run_history``, docs/persistence.md), those of ended tasks too, and on
PostgreSQL every node's. A ``durable = false`` job's runs are only in its run's memory.

Prints a table (``rich`` where installed, plain text otherwise) or, with ``--json``, one JSON
array of objects: ``run``, ``due``, ``started``, ``ended`` (ISO 8601 UTC, or ``null``),
``outcome``, ``reason``, ``error``, ``attempt``, ``node``, ``manual``, ``value``.

Threads: the caller's.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Final

from actors.api.history import from_ledger
from actors.cli import exits
from actors.cli.jobfile import load_jobfile
from actors.cli.operate import PSYCOPG, find_job, store_of
from actors.cli.rows import one_line
from actors.cli.stores import StoreName, shown_store
from actors.errors import JobFileError, StoreError
from actors.store import LedgerRow, SQLiteStore
from messages import RunRecord

__all__ = ["HISTORY_COLUMNS", "history", "record_json"]

HISTORY_COLUMNS: Final = ("run", "due", "started", "ended", "outcome", "error", "attempt", "node")
_ERROR_WIDTH: Final = 60


def history(jobfile: str, job: str, store: str | None, *, limit: int, as_json: bool) -> int:
    """Print the last ``limit`` runs of ``job`` (``store``: ``--store``); return the exit code."""
    try:
        loaded = load_jobfile(jobfile)
        name = store_of(loaded, jobfile, store, "history")
    except JobFileError as error:
        print("\n".join(error.problems), file=sys.stderr)
        return exits.BAD_INPUT
    in_file = any(spec.job_id == job for spec in loaded.jobs)
    try:
        rows = _read(name, job, limit)
    except ImportError as error:
        print(f"{jobfile}: a PostgreSQL store needs psycopg ({error}): {PSYCOPG}", file=sys.stderr)
        return exits.FAILURE
    except StoreError as error:
        if not in_file:  # the job named is the first thing wrong
            rows = None
        else:
            missing = isinstance(name, Path) and not name.exists()
            hint = " (a run of the job file creates it)" if missing else ""
            print(f"{jobfile}: job {job!r}: {error}{hint}", file=sys.stderr)
            return exits.FAILURE
    if rows is None:  # neither in the file nor in the store
        try:
            find_job(loaded, jobfile, job)
        except JobFileError as error:
            print("\n".join(error.problems), file=sys.stderr)
            return exits.BAD_INPUT
        rows = []
    records = [from_ledger(row, 0.0) for row in rows]
    if as_json:
        print(json.dumps([record_json(record) for record in records], indent=2))
        return exits.OK
    now = datetime.now().astimezone()
    print(f"{jobfile}: job {job!r}: {len(records)} run(s) in {shown_store(name)}, newest first; "
          f"times in {now:%Z} (UTC{now:%z})")  # fmt: skip
    _print_table(records, now)
    return exits.OK


def record_json(record: RunRecord) -> dict[str, object]:
    """One run as the ``--json`` output writes it (times ISO 8601 in UTC)."""
    return {
        "run": record.run,
        "due": record.due_wall.isoformat(),
        "started": None if record.started_at is None else record.started_at.isoformat(),
        "ended": None if record.ended_at is None else record.ended_at.isoformat(),
        "outcome": record.outcome,
        "reason": record.reason,
        "error": record.error,
        "attempt": record.attempt,
        "node": record.node,
        "manual": record.manual,
        "value": record.value,
    }


def _read(store: StoreName, job: str, limit: int) -> list[LedgerRow] | None:
    """The job's ledger rows, newest first; ``None`` if the store has no row of the id at all."""
    if isinstance(store, Path):
        if not store.exists():
            raise StoreError(f"{shown_store(store)}: no such store file")
        with SQLiteStore.inspect(store) as reader:
            runs = reader.runs(job, limit=limit)
            return runs if runs or reader.get(job) is not None else None
    from actors.cli.shared_store import open_shared  # noqa: PLC0415 - psycopg is optional

    with open_shared(store) as shared:
        runs = shared.runs(job, limit=limit)
        return runs if runs or shared.get(job) is not None else None


def _cells(record: RunRecord, zone: datetime) -> tuple[str, ...]:
    def shown(instant: datetime | None) -> str:
        return "-" if instant is None else f"{instant.astimezone(zone.tzinfo):%Y-%m-%d %H:%M:%S}"

    outcome = record.outcome if record.reason is None else f"{record.outcome} ({record.reason})"
    if record.manual:
        outcome += " (run now)"
    error = one_line(record.error) or "-"
    if len(error) > _ERROR_WIDTH:
        error = error[: _ERROR_WIDTH - 1] + "…"
    return (
        str(record.run),
        shown(record.due_wall),
        shown(record.started_at),
        shown(record.ended_at),
        outcome,
        error,
        str(record.attempt),
        record.node or "-",
    )


def _print_table(records: list[RunRecord], now: datetime) -> None:
    lines = [_cells(record, now) for record in records]
    try:  # on a terminal; plain text for a pipe, which a script reads
        if not sys.stdout.isatty():
            raise ImportError("not a terminal")
        from rich.console import Console  # noqa: PLC0415 - rich is the [cli] extra
        from rich.table import Table  # noqa: PLC0415
    except ImportError:
        table = [HISTORY_COLUMNS, *lines]
        widths = [max(len(line[column]) for line in table) for column in range(len(HISTORY_COLUMNS))]
        for line in table:
            print("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip())
        return
    grid = Table(box=None, pad_edge=False, header_style="bold")
    for column in HISTORY_COLUMNS:
        grid.add_column(column, no_wrap=column != "error")
    for line in lines:
        grid.add_row(*line)
    Console().print(grid)
