"""The live status table on a terminal, drawn with ``rich`` (the ``[cli]`` extra).

Only the command line imports this module; the scheduler itself never needs ``rich``. The
runner redraws the table about once a second from its main thread (``update``); log records
are printed above the table through ``ConsoleHandler`` so they do not tear it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from types import TracebackType

from rich.console import Console
from rich.live import Live
from rich.table import Table
from rich.text import Text

from actors.cli.rows import COLUMNS, JobRow, cells

__all__ = ["ConsoleHandler", "LiveView", "render"]

_STATUS_STYLES = {
    "scheduled": "cyan",
    "running": "bold yellow",
    "completed": "green",
    "failed": "bold red",
    "cancelled": "dim",
}
_OUTCOME_STYLES = {"completed": "green", "failed": "red", "missed": "yellow"}


def render(rows: Sequence[JobRow], now: datetime, title: str) -> Table:
    """Return the status table of ``rows`` as seen at ``now`` (aware, in the zone to show)."""
    table = Table(title=title, title_justify="left", expand=False)
    for column in COLUMNS:
        right = column in ("runs", "failures")
        table.add_column(column, justify="right" if right else "left", no_wrap=column != "last error")
    for row in rows:
        texts = [Text(cell) for cell in cells(row, now)]
        texts[2].stylize(_STATUS_STYLES.get(row.status, ""))
        texts[6].stylize(_OUTCOME_STYLES.get(row.last_outcome or "", ""))
        if row.failures:
            texts[5].stylize("red")
        table.add_row(*texts)
    return table


class ConsoleHandler(logging.Handler):
    """A log handler that prints through a ``rich`` console, above a live display (any thread)."""

    def __init__(self, console: Console) -> None:
        super().__init__()
        self._console = console

    def emit(self, record: logging.LogRecord) -> None:
        """Print the formatted record (rich's console takes its own lock)."""
        try:
            self._console.print(Text(self.format(record)), soft_wrap=True)
        except Exception:
            self.handleError(record)


class LiveView:
    """The live table on standard output; a context manager that starts and stops it."""

    def __init__(self) -> None:
        self.console = Console()
        # Redrawn by the runner's loop, not by a thread of rich's own: one fewer thread, and
        # every redraw reads the scheduler from the main thread.
        self._live = Live(console=self.console, auto_refresh=False, transient=False)

    def update(self, rows: Sequence[JobRow], now: datetime, title: str) -> None:
        """Draw the table of ``rows`` now (main thread)."""
        self._live.update(render(rows, now, title), refresh=True)

    def __enter__(self) -> LiveView:
        """Start drawing (hides the cursor until ``__exit__``)."""
        self._live.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Stop drawing; the last table stays on the screen."""
        self._live.stop()
