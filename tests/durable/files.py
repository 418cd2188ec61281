"""What the durability tests read back from a store file, and the wall instant they start at."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from actors import SQLiteStore

START = datetime(2026, 1, 1, tzinfo=UTC)


def stored(path: Path) -> dict[str, Any]:
    """Every task row of the file, by id (read as the status command does: no lock)."""
    reader = SQLiteStore.inspect(path)
    try:
        return {row.task_id: row for row in reader.tasks()}
    finally:
        reader.close()


def ledger(path: Path) -> list[Any]:
    reader = SQLiteStore.inspect(path)
    try:
        return list(reversed(reader.runs(limit=1000)))
    finally:
        reader.close()
