"""The command line's arguments: ``run``, ``check``, ``status``, ``pause``... (see docs/cli.md).

The commands: ``run``, ``check``, ``status``, ``pause``, ``resume``, ``run-now``, ``history``, ``demo``.

``python -m actors ...`` and the ``pykka-taskscheduler`` console script both call ``main``.
Bad arguments exit with 2 (argparse's usage message), as a bad job file does. No error prints
a traceback: what the commands do not report themselves is one line here, exit 1
(``--traceback`` shows where it came from).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from actors.cli import exits
from actors.cli.jobkeys import parse_duration, show
from actors.cli.logs import LEVELS
from actors.runtime.limits import MAX_WORKERS

__all__ = ["main", "parser"]


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (``sys.argv[1:]`` by default), run the command, return its exit code."""
    arguments = parser().parse_args(argv)
    command: Callable[[argparse.Namespace], int] = arguments.command
    try:
        return command(arguments)
    except Exception as error:  # what no command foresaw (a damaged store's row...): a line, not a trace
        if arguments.traceback:
            raise
        about = getattr(arguments, "jobfile", None) or getattr(arguments, "store", None) or _program_name()
        print(
            f"{about}: {type(error).__name__}: {error} (unexpected; --traceback shows where it came from)",
            file=sys.stderr,
        )
        return exits.FAILURE


def parser() -> argparse.ArgumentParser:
    """Return the argument parser of every command."""
    top = argparse.ArgumentParser(
        prog=_program_name(),
        description="Run a schedule of Python functions from a TOML job file, as a service.",
        epilog="Exit codes: 0 ok, 2 a bad job file or arguments, 3 the store is held by another "
        "scheduler, 1 anything else. See docs/cli.md.",
    )
    top.add_argument("--traceback", action="store_true", help="on an unexpected error, print its traceback")
    commands = top.add_subparsers(title="commands", required=True, metavar="COMMAND")

    run = commands.add_parser("run", help="run a job file's jobs until stopped (or for --for seconds)")
    run.set_defaults(command=_run)
    run.add_argument("jobfile", metavar="JOBFILE", help="the TOML job file")
    run.add_argument(
        "--store",
        metavar="PATH|URL|:memory:",
        help="the SQLite file or PostgreSQL URL (overrides the file's)",
    )
    run.add_argument("--workers", type=_workers, metavar="N", help="how many jobs may run at once")
    run.add_argument(
        "--for",
        dest="duration",
        type=_positive_duration,
        metavar="SECONDS",
        help="stop after this long (seconds, or 500ms, 10s, 5m, 1h30m...)",
    )
    run.add_argument(
        "--grace",
        type=parse_duration_argument,
        default=30.0,
        metavar="SECONDS",
        help="at a stop, how long running runs get to finish (default 30)",
    )
    run.add_argument(
        "--status",
        dest="live_view",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="the live status table (default: on a terminal); --no-status: a log line per event",
    )
    run.add_argument("--log-level", type=str.lower, choices=LEVELS, default="info", help="default info")
    run.add_argument(
        "--http",
        metavar="[HOST:]PORT",
        help="serve the status page, JSON API and /metrics there (host 127.0.0.1 unless given)",
    )
    run.add_argument(
        "--http-token",
        metavar="TOKEN",
        help="the token that allows pause/resume/run now/cancel over HTTP "
        "(default: $PYKKA_TASKSCHEDULER_HTTP_TOKEN; none: no control)",
    )
    run.add_argument(
        "--show-args", action="store_true", help="show the jobs' arguments over HTTP (they may hold secrets)"
    )

    check = commands.add_parser("check", help="validate a job file and show each job's next run times")
    check.set_defaults(command=_check)
    check.add_argument("jobfile", metavar="JOBFILE", help="the TOML job file")

    status = commands.add_parser("status", help="print every task in a store (works beside a run)")
    status.set_defaults(command=_status)
    status.add_argument("jobfile", metavar="JOBFILE", nargs="?", help="the job file whose store to read")
    status.add_argument(
        "--store", metavar="PATH|URL", help="the store to read: an SQLite file or a PostgreSQL URL"
    )

    for name, what in (
        ("pause", "pause a job: no new run of it starts until it is resumed (works beside a run)"),
        ("resume", "resume a paused job (works beside a run)"),
        ("run-now", "run a job once now, outside its schedule (needs its run, or a shared database)"),
    ):
        operation = commands.add_parser(name, help=what)
        operation.set_defaults(command=_operate, operation=name)
        _job_arguments(operation)

    history = commands.add_parser("history", help="print how a job's last runs ended, newest first")
    history.set_defaults(command=_history)
    _job_arguments(history)
    history.add_argument("--limit", type=_limit, default=20, metavar="N", help="how many runs (default 20)")
    history.add_argument("--json", action="store_true", help="print them as a JSON array")

    demo = commands.add_parser(
        "demo", help="fixed rate vs fixed delay on the real clock: a 30 ms task whose third run takes 50 ms"
    )
    demo.set_defaults(command=_demo)
    return top


def _job_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument("jobfile", metavar="JOBFILE", help="the TOML job file")
    command.add_argument("job", metavar="JOB", help="the job's id (its [jobs.<id>] table)")
    command.add_argument(
        "--store", metavar="PATH|URL", help="the SQLite file or PostgreSQL URL (overrides the file's)"
    )


def _limit(text: str) -> int:
    try:
        limit = int(text)
    except ValueError:
        limit = 0
    if limit < 1:
        raise argparse.ArgumentTypeError(f"expected an integer of 1 or more, got {text!r}")
    return limit


def parse_duration_argument(text: str) -> float:
    """Read a command-line duration: seconds, or the job file's forms (argparse type)."""
    value = float(text) if _is_number(text) else text
    try:
        return parse_duration(value)
    except ValueError as error:  # its message starts with the value as the job file writes it
        reason = str(error).removeprefix(show(value))
        raise argparse.ArgumentTypeError(f"{text!r}{reason}") from None


def _positive_duration(text: str) -> float:
    seconds = parse_duration_argument(text)
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is no time at all; it must be longer than zero")
    return seconds


def _workers(text: str) -> int:
    try:
        workers = int(text)
    except ValueError:
        workers = 0
    if not 1 <= workers <= MAX_WORKERS:
        raise argparse.ArgumentTypeError(f"expected an integer from 1 to {MAX_WORKERS}, got {text!r}")
    return workers


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _run(arguments: argparse.Namespace) -> int:
    from actors.cli.run import RunOptions, run  # noqa: PLC0415 - each command imports what it needs

    options = RunOptions(
        jobfile=arguments.jobfile,
        store=arguments.store,
        workers=arguments.workers,
        duration=arguments.duration,
        grace=arguments.grace,
        live_view=arguments.live_view,
        log_level=arguments.log_level,
        http=arguments.http,
        http_token=arguments.http_token,
        show_args=arguments.show_args,
    )
    return run(options)


def _check(arguments: argparse.Namespace) -> int:
    from actors.cli.check import check  # noqa: PLC0415

    return check(arguments.jobfile)


def _status(arguments: argparse.Namespace) -> int:
    from actors.cli.status import status  # noqa: PLC0415

    if (arguments.jobfile is None) == (arguments.store is None):
        print("status: give either a JOBFILE or --store PATH|URL (one of the two)", file=sys.stderr)
        return exits.BAD_INPUT
    return status(arguments.jobfile, arguments.store)


def _operate(arguments: argparse.Namespace) -> int:
    from actors.cli.operate import operate  # noqa: PLC0415

    return operate(arguments.operation, arguments.jobfile, arguments.job, arguments.store)


def _history(arguments: argparse.Namespace) -> int:
    from actors.cli.history import history  # noqa: PLC0415

    return history(
        arguments.jobfile, arguments.job, arguments.store, limit=arguments.limit, as_json=arguments.json
    )


def _demo(arguments: argparse.Namespace) -> int:
    from actors.demo import main as demo  # noqa: PLC0415

    return demo()


def _program_name() -> str:
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return "python -m actors" if name in ("__main__.py", "", "-c") else name
