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

from rich.cells import cell_len
from rich.console import Console
from rich.live import Live
from rich.table import Table
from rich.text import Text

from actors.cli.rows import COLUMNS, NEEDED_COLUMNS, JobRow, cells, fit_columns, split_next_run

__all__ = ["ConsoleHandler", "LiveView", "render"]

_STATUS_STYLES = {
    "scheduled": "cyan",
    "running": "bold yellow",
    "paused": "bold magenta",
    "completed": "green",
    "failed": "bold red",
    "cancelled": "dim",
}
_OUTCOME_STYLES = {
    "completed": "green",
    "failed": "red",
    "timed_out": "red",
    "missed": "yellow",
    "cancelled": "yellow",
}


def render(rows: Sequence[JobRow], now: datetime, title: str, width: int | None = None) -> Table:
    """Return the status table of ``rows`` as seen at ``now`` (aware, in the zone to show).

    ``width``: the terminal's columns. Where the table does not fit, the columns a user needs
    (``NEEDED_COLUMNS``) stay whole and the others are left out, as ``fit_columns`` decides;
    the title names those left out. ``None``: every column.
    """
    texts = [list(cells(row, now)) for row in rows]
    if width is None:
        widths = dict.fromkeys(COLUMNS, 0)
    else:
        widths = fit_columns(texts, width, measure=cell_len)
        next_run = COLUMNS.index("next run")
        for row_texts in texts:
            if cell_len(row_texts[next_run]) > widths["next run"]:
                row_texts[next_run] = split_next_run(row_texts[next_run])
    hidden = [column for column in COLUMNS if column not in widths]
    if hidden:
        title = f"{title} · hidden: {', '.join(hidden)}"
    table = Table(title=title, title_justify="left", expand=False)
    for column, column_width in widths.items():
        # Each at the width chosen: the status and trigger whole or not at all, the last error
        # wrapped in what is left, a needed value folded onto a second line rather than cut.
        table.add_column(
            column,
            justify="right" if column in ("runs", "failures") else "left",
            width=column_width or None,
            no_wrap=column not in (*NEEDED_COLUMNS, "last error"),
            overflow="fold",
        )
    indexes = [COLUMNS.index(column) for column in widths]
    for row, row_texts in zip(rows, texts, strict=True):
        styled = [Text(cell) for cell in row_texts]
        styled[2].stylize(_STATUS_STYLES.get(row.status, ""))
        styled[6].stylize(_OUTCOME_STYLES.get(row.last_outcome or "", ""))
        if row.failures:
            styled[5].stylize("red")
        table.add_row(*(styled[index] for index in indexes))
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
        """Draw the table of ``rows`` now, to the terminal's width as it is now (main thread)."""
        self._live.update(render(rows, now, title, self.console.width), refresh=True)

    def __enter__(self) -> LiveView:
        """Start drawing (hides the cursor until ``__exit__``)."""
        self._live.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Stop drawing; the last table stays on the screen."""
        self._live.stop()
