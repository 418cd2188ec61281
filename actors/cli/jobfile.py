"""The job file: a TOML description of a schedule, checked and turned into plain data.

``load_jobfile(path)`` reads one file and returns a ``JobFile``, or raises ``JobFileError``
listing *every* problem found, one line each, each naming the file, the job and the key. The
rules for each key are data, in ``actors/cli/jobkeys.py``: a new key is one entry there, its
converter, and (for a job key) a field of the same name on ``JobSpec``. ``check_jobfile`` adds
what needs the code and a clock (``import_problems``, ``trigger_problems``), in the same pass:
the ``check`` command and ``run``'s start both use it.

Nothing here reads a clock (``describe_next_runs`` takes ``now``) or imports user code, except
``import_problems`` (and ``check_jobfile``), whose whole point is to try.
"""

from __future__ import annotations

import difflib
import hashlib
import importlib
import json
import re
import sys
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import date, datetime, time, timedelta
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final, cast, final

from actors.cli.jobcode import code_problems
from actors.cli.jobkeys import (
    JOB_KEYS,
    MAX_NESTING,
    MEMORY_STORE,
    SCHEDULER_KEYS,
    TRIGGERS,
    Key,
    Kind,
    RetrySpec,
    parse_duration,
    show,
    value_problem,
    wrong_type,
)
from actors.cli.stores import StoreName, store_name, store_problem
from actors.core.cron import check_cron, next_fires
from actors.core.policies import ALLOW_ON_FIXED_DELAY, OVERLAP_ALLOW, check_policies
from actors.core.task_record import PROCESSES, THREADS
from actors.errors import JobFileError
from actors.references import check_json_arguments

__all__ = [
    "JOB_KEYS",
    "SCHEDULER_KEYS",
    "JobFile",
    "JobSpec",
    "Key",
    "RetrySpec",
    "check_jobfile",
    "describe_next_runs",
    "import_problems",
    "load_jobfile",
    "parse_duration",
    "parse_jobfile",
    "store_problems",
    "stored_argument_problems",
    "trigger_problems",
]

_RESERVED_ID: Final = re.compile(r"task-\d+")  # the ids the scheduler mints (actors.api.facade)
_TOML_POSITION: Final = re.compile(r"(.*) \(at (line (\d+), column \d+|end of document)\)")
_LONG_INTEGER: Final = re.compile(r"[0-9][0-9_]{4300,}")  # more digits than int() reads from text
_ADDED_LATER: Final = frozenset(
    {
        "timeout", "retry", "executor", "durable",
        "overlap", "max_instances", "catch_up", "max_catch_up", "jitter", "keep_result",
    }
)  # fmt: skip
"""``JobSpec`` fields newer than the first fingerprints: left out of the digest while unset, so
that a job written before they existed keeps its fingerprint (and an ended one-time job stays ended)."""
_NOT_A_DEFINITION: Final = frozenset({"paused"})
"""``JobSpec`` fields that are state the file asks for, not the job's definition: never in the digest,
so writing ``paused = true`` pauses the job (at the next reconcile) instead of replacing it."""


@final
@dataclass(frozen=True, slots=True, eq=False)
class JobSpec:
    """One job of a job file, checked: plain data the runner turns into a schedule.

    Equal (and hashing the same) exactly when ``job_id`` and ``fingerprint()`` are.

    Attributes:
        job_id: The table name (``[jobs.<job_id>]``), the task id.
        fn: The function to run, as a reference ``"module:function"`` (not imported here).
        kind: Which trigger the job has; its field below is set and the other three are ``None``.
        every: Fixed rate: seconds between run starts.
        delay: Fixed delay: seconds from one run's end to the next run's start.
        cron: A cron expression as written (checked), read in the zone ``tz``.
        at: The one time to run (aware).
        initial_delay: Seconds before the first run of an ``every``/``delay`` job, else ``None``.
        args: Positional arguments for ``fn``.
        kwargs: Keyword arguments for ``fn``.
        max_consecutive_failures: Stop the job after this many failed runs in a row (``None``: never).
        misfire_grace: How late a run may start before it is skipped (``None``: the scheduler's default).
        tz: The zone a cron job is read in (the job's ``tz``, else ``[scheduler].tz``); else ``None``.
        timeout: Seconds a run may take before it is asked to stop (``None``: no limit).
        retry: Try a failed run again (``None``: a failed run counts at once).
        executor: ``"thread"`` or ``"process"`` (``None``: a thread).
        durable: Whether the job is kept in the store (``None``: it is, if there is a store).
        overlap, max_instances, catch_up, max_catch_up, jitter, keep_result: The ``schedule_*``
            options of the same names (``None``: the library's default).
        paused: ``True``: the job is paused at every reconcile (start, reload), and a job the
            reconcile adds or replaces starts paused; ``False``: it is resumed at every
            reconcile; ``None``: the reconcile leaves its pause as it is (docs/cli.md).
    """

    job_id: str
    fn: str
    kind: Kind
    every: float | None = None
    delay: float | None = None
    cron: str | None = None
    at: datetime | None = None
    initial_delay: float | None = None
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    max_consecutive_failures: int | None = None
    misfire_grace: float | None = None
    tz: str | None = None
    timeout: float | None = None
    retry: RetrySpec | None = None
    executor: str | None = None
    durable: bool | None = None
    overlap: str | None = None
    max_instances: int | None = None
    catch_up: str | None = None
    max_catch_up: int | None = None
    jitter: float | None = None
    keep_result: bool | None = None
    paused: bool | None = None

    def fingerprint(self) -> str:
        """Return a digest of the job's definition (everything but its id).

        Two loads of an unchanged job give the same digest, so the runner can leave its state
        alone; any change that alters what runs or when gives another. Spelling that changes
        nothing does not count: ``"0  9 * * *"`` and ``"0 9 * * *"``, or ``at`` written with
        two offsets for the same instant.
        """
        definition: dict[str, object] = {}
        for spec_field in fields(self):  # every field: a new key counts without a change here
            value = getattr(self, spec_field.name)
            if spec_field.name == "cron" and value is not None:
                value = check_cron(value)
            elif spec_field.name == "at" and value is not None:
                value = value.timestamp()
            elif spec_field.name in _NOT_A_DEFINITION or (spec_field.name in _ADDED_LATER and value is None):
                continue
            definition[spec_field.name] = value
        del definition["job_id"]
        text = json.dumps(definition, sort_keys=True, separators=(",", ":"), default=_canonical)
        return hashlib.sha256(text.encode()).hexdigest()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, JobSpec):
            return NotImplemented
        return self.job_id == other.job_id and self.fingerprint() == other.fingerprint()

    def __hash__(self) -> int:
        return hash((self.job_id, self.fingerprint()))


@final
@dataclass(frozen=True, slots=True)
class JobFile:
    """A checked job file.

    Attributes:
        path: The file, absolute.
        workers: How many jobs may run at once.
        store: Where the jobs' state is kept: an SQLite file (a ``Path``, absolute), a
            PostgreSQL URL (a ``str``); ``None`` for ``":memory:"``.
        tz: The default zone of cron jobs, by name.
        jobs: The jobs, in the file's order.
        processes: How many worker processes run the ``executor = "process"`` jobs.
        hung_grace: Seconds a run past its ``timeout`` still gets before its worker is abandoned.
    """

    path: Path
    workers: int
    store: StoreName | None
    tz: str
    jobs: tuple[JobSpec, ...]
    processes: int = 0
    hung_grace: float = 5.0

    @property
    def folder(self) -> Path:
        """The job file's folder: relative paths and ``fn`` modules are found from here."""
        return self.path.parent


def load_jobfile(path: str | Path) -> JobFile:
    """Read and check the job file at ``path``.

    Raises:
        JobFileError: the file cannot be read, is not TOML, or breaks a rule; ``problems``
            lists every problem, each line naming the file (as ``path`` was given), and where
            there is one the job and the key.
    """
    return _whole(*read_jobfile(path))


def parse_jobfile(text: str, path: str | Path) -> JobFile:
    """Check the TOML ``text`` of the job file at ``path`` (used for messages and relative paths).

    Raises:
        JobFileError: as ``load_jobfile``.
    """
    return _whole(*_parse(text, path))


def read_jobfile(path: str | Path) -> tuple[JobFile | None, list[str]]:
    """Read the job file at ``path``: what of it is valid, and every problem (as ``load_jobfile``'s).

    The ``JobFile`` holds the jobs that broke no rule (and defaults for broken settings), so
    that their code can be checked too; ``None`` if the file cannot be read or is not TOML.
    """
    try:
        text = Path(path).read_bytes().decode("utf-8-sig")  # a byte-order mark is no error
    except OSError as error:
        return None, [f"{path}: cannot read the job file: {error.strerror or error}"]
    except UnicodeDecodeError as error:
        return None, [f"{path}: not UTF-8 text (at byte offset {error.start}), as TOML must be"]
    except ValueError as error:  # a path holding a NUL
        return None, [f"{path!r}: cannot read the job file: {error}"]
    return _parse(text, path)


def check_jobfile(path: str | Path, now: datetime) -> JobFile:
    """Read the job file at ``path`` and check everything a start would find wrong, in one pass.

    Its rules (``load_jobfile``), then for every job that keeps them, its code
    (``import_problems``: ``fn`` imports, is callable and takes the job's ``args``/``kwargs``;
    ``retry``'s exception classes import) and its trigger (``trigger_problems``, seen at ``now``).

    Raises:
        JobFileError: every problem found, the file's rules first, then the code's and the triggers'.
    """
    jobfile, problems = read_jobfile(path)
    if jobfile is not None:
        problems += store_problems(jobfile, str(path)) + import_problems(jobfile, str(path))
        problems += trigger_problems(jobfile, now, str(path))
    return _whole(jobfile, problems)


def store_problems(jobfile: JobFile, label: str | None = None) -> list[str]:
    """Return one line if the store cannot be used as written (a PostgreSQL URL: psycopg, its form).

    ``label`` names the file in the messages (default: its name).
    """
    problem = store_problem(jobfile.store)
    return [] if problem is None else [f"{label or jobfile.path.name}: [scheduler] key 'store': {problem}"]


def trigger_problems(jobfile: JobFile, now: datetime, label: str | None = None) -> list[str]:
    """Return one line per job whose trigger gives no next run at all (a cron that never fires).

    ``label`` names the file in the messages (default: its name).
    """
    problems = []
    for spec in jobfile.jobs:
        try:
            describe_next_runs(spec, now, 1)
        except (ValueError, OverflowError) as error:
            problems.append(f"{label or jobfile.path.name}: job {spec.job_id!r}: key {spec.kind!r}: {error}")
    return problems


def stored_argument_problems(jobfile: JobFile, label: str) -> list[str]:
    """Return one line per job whose ``args``/``kwargs`` the store cannot keep as JSON.

    For a store given after the file was read (``run --store``); the file's own store is
    checked with its rules.
    """
    problems: list[str] = []
    if jobfile.store is not None:
        for spec in jobfile.jobs:
            if spec.durable is not False:
                values = {"args": spec.args, "kwargs": spec.kwargs}
                _check_json(values, f"{label}: job {spec.job_id!r}", problems)
    return problems


def _whole(jobfile: JobFile | None, problems: list[str]) -> JobFile:
    if problems:
        raise JobFileError(problems)
    assert jobfile is not None
    return jobfile


def _parse(text: str, path: str | Path) -> tuple[JobFile | None, list[str]]:
    label = str(path)
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        return None, [_syntax_problem(label, text, str(error))]
    except RecursionError:  # tomllib recurses once per level: hundreds of levels exhaust the stack
        where = _nesting_position(text)
        return None, [f"{label}: {where}arrays or tables nested hundreds deep, too deep to read "
                      f"(a value may be nested {MAX_NESTING} deep)"]  # fmt: skip
    except ValueError as error:  # an integer longer than int() reads from text (4300 digits)
        return None, [_long_integer_problem(label, text, error)]
    absolute = Path(path).absolute()
    problems: list[str] = []
    for name, value in document.items():
        if name not in ("scheduler", "jobs"):
            problems.append(f"{label}: {_unknown_top_level(name, value)}")
    settings = _scheduler_settings(document.get("scheduler", {}), label, problems)
    default_store = absolute.with_suffix(".db").name
    store = store_name(settings.get("store", default_store), absolute.parent)
    tz = settings.get("tz", "UTC")
    processes = settings.get("processes", 0)
    jobs = _jobs(document.get("jobs"), label, _Context(tz, store is not None, processes), problems)
    jobfile = JobFile(
        absolute, settings.get("workers", 4), store, tz, jobs, processes, settings.get("hung_grace", 5.0)
    )
    return jobfile, problems


def import_problems(jobfile: JobFile, label: str | None = None) -> list[str]:
    """Import each job's ``fn`` and say which do not import, are not callable, or cannot take its arguments.

    The arguments are bound to the function's signature, as a call would (a function without
    a readable signature is not checked); a ``retry`` whose exception classes do not import is
    reported too.

    The job file's folder comes first on ``sys.path`` while this runs (``sys.path`` is restored
    afterwards); imported modules stay imported. Runs the imported modules' top-level code.

    Returns:
        One line per problem, naming the file (as ``label``; default: its name), the job and
        the key; empty if there is none.
    """
    saved_path = list(sys.path)
    sys.path.insert(0, str(jobfile.folder))
    importlib.invalidate_caches()  # a module written since the last import must be seen
    try:
        return code_problems(jobfile.jobs, label or jobfile.path.name)
    finally:
        sys.path[:] = saved_path


def describe_next_runs(spec: JobSpec, now: datetime, count: int = 3) -> list[datetime]:
    """Return when ``spec`` would run next, as seen at ``now`` (for the ``check`` command).

    ``every``/``delay``: ``now + initial_delay + k * interval`` (a first approximation: a
    fixed-delay job also waits for each run to finish). ``at``: the one time, if after
    ``now``. ``cron``: the next firing times, in the job's zone.

    Raises:
        ValueError: ``now`` is naive.
    """
    if now.utcoffset() is None:
        raise ValueError(f"now must be an aware datetime, got {now!r}")
    if spec.cron is not None:
        return next_fires(spec.cron, spec.tz or "UTC", now, count)
    if spec.at is not None:
        return [spec.at] if spec.at > now and count > 0 else []
    interval = spec.every or spec.delay or 0.0
    first = now + timedelta(seconds=spec.initial_delay or 0.0)
    return [first + timedelta(seconds=k * interval) for k in range(count)]


@dataclass(frozen=True, slots=True)
class _Context:
    """What a job's rules need from the rest of the file."""

    tz: str  # [scheduler].tz: the zone of a cron job without its own
    stored: bool  # there is a store (the job's arguments are written as JSON, unless durable = false)
    processes: int  # [scheduler].processes: 0 means executor = "process" cannot run


# -- assembling the file ---------------------------------------------------------------------------


def _scheduler_settings(table: object, label: str, problems: list[str]) -> dict[str, Any]:
    where = f"{label}: [scheduler]"
    if not isinstance(table, dict):
        problems.append(f"{label}: key 'scheduler': {wrong_type('a table ([scheduler])', table)}")
        return {}
    return _convert_keys(table, SCHEDULER_KEYS, where, problems)


def _jobs(table: object, label: str, context: _Context, problems: list[str]) -> tuple[JobSpec, ...]:
    if table is None:
        problems.append(f"{label}: no jobs: add a table [jobs.<id>] with fn and a trigger")
        return ()
    if not isinstance(table, dict):
        problems.append(f"{label}: key 'jobs': {wrong_type('a table of jobs ([jobs.<id>])', table)}")
        return ()
    specs = []
    for job_id, job in table.items():
        spec = _job(job_id, job, f"{label}: job {job_id!r}", context, problems)
        if spec is not None:
            specs.append(spec)
    return tuple(specs)


def _job(job_id: str, table: object, where: str, context: _Context, problems: list[str]) -> JobSpec | None:
    count = len(problems)
    if not job_id:
        problems.append(f"{where}: a job id must not be empty")
    elif _RESERVED_ID.fullmatch(job_id):
        problems.append(f"{where}: ids of the form 'task-<digits>' are the scheduler's own; rename the table")
    if not isinstance(table, dict):
        problems.append(f"{where}: {wrong_type(f'a table ([jobs.{job_id}])', table)}")
        return None
    values = _convert_keys(table, JOB_KEYS, where, problems)
    triggers = [key for key in table if key in JOB_KEYS and JOB_KEYS[key].trigger]
    if not triggers:
        problems.append(f"{where}: no trigger: give one of the keys {_quoted(TRIGGERS, 'or')}")
    for extra in triggers[1:]:
        problems.append(f"{where}: key {extra!r}: a job has one trigger, and it has {triggers[0]!r} already")
    if "fn" not in table:
        problems.append(
            f"{where}: key 'fn': missing; name the function to run, e.g. fn = \"tasks:heartbeat\""
        )
    kind = triggers[0] if triggers else None
    for key in table:
        allowed = JOB_KEYS[key].only_with if key in JOB_KEYS else ()
        if kind is not None and allowed and kind not in allowed:
            problems.append(
                f"{where}: key {key!r}: only with {_quoted(allowed, 'or')}, and this job has {kind!r}"
            )
    _check_options(values, where, context, problems)
    if values.get("overlap") == OVERLAP_ALLOW:
        _check_allow(values, kind, where, problems)
    if context.stored and values.get("durable") is not False:  # a stored job's arguments are JSON
        _check_json(values, where, problems)
    if len(problems) > count or kind is None:
        return None
    if kind == "cron":
        values["tz"] = values.get("tz", context.tz)
    return JobSpec(job_id=job_id, kind=cast(Kind, kind), **values)


def _check_options(values: dict[str, Any], where: str, context: _Context, problems: list[str]) -> None:
    if values.get("executor") == PROCESSES and context.processes == 0:
        problems.append(
            f"{where}: key 'executor': \"process\" needs worker processes: set processes = N in [scheduler]"
        )
    if values.get("durable") is True and not context.stored:
        memory = show(MEMORY_STORE)
        problems.append(f"{where}: key 'durable': true needs a store, and [scheduler] store is {memory}")
    _check_policies(values, where, problems)
    # The defaults written out are the same job as the defaults left out (and fingerprint alike).
    if values.get("keep_result") is False:
        values["keep_result"] = None
    if values.get("executor") == THREADS:
        values["executor"] = None
    if values.get("durable") is True and context.stored:
        values["durable"] = None


_POLICY_DEFAULTS: Final = (("overlap", "skip"), ("max_instances", None), ("catch_up", "latest"),
                           ("max_catch_up", 100), ("jitter", 0.0))  # fmt: skip


def _check_policies(values: dict[str, Any], where: str, problems: list[str]) -> None:
    """Ask the library's own rules (``check_policies``) about the job's policy keys together.

    Each key's value is checked alone already; this finds what only the whole says (today:
    ``max_instances`` above 1 needs ``overlap = "allow"``).
    """
    given = [(key, values.get(key, default)) for key, default in _POLICY_DEFAULTS]
    if all(key not in values for key, _ in _POLICY_DEFAULTS):
        return
    try:
        check_policies(*(value for _, value in given), recurring=True)
    except (TypeError, ValueError) as error:
        message = str(error)
        key = next((key for key, _ in given if message.startswith(key)), None)
        key = key or ("max_instances" if "max_instances" in values else "overlap")
        problems.append(f"{where}: key {key!r}: {message}")


def _check_allow(values: dict[str, Any], kind: str | None, where: str, problems: list[str]) -> None:
    """What ``overlap = "allow"`` does not combine with (the library refuses the same at the call)."""
    if kind == "delay":
        problems.append(f"{where}: key 'overlap': {ALLOW_ON_FIXED_DELAY}")


def _check_json(values: dict[str, Any], where: str, problems: list[str]) -> None:
    for key, args, kwargs in (("args", values.get("args", ()), {}), ("kwargs", (), values.get("kwargs", {}))):
        try:
            check_json_arguments(args, kwargs)
        except TypeError as error:
            problems.append(f"{where}: key {key!r}: {error}; or use store = {show(MEMORY_STORE)}")


def _convert_keys(
    table: dict[str, Any], keys: Mapping[str, Key], where: str, problems: list[str]
) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for key, raw in table.items():
        rule = keys.get(key)
        if rule is None:
            problems.append(f"{where}: key {key!r}: unknown key{_suggestion(key, keys)}")
            continue
        unusable = value_problem(raw)
        if unusable is not None:
            problems.append(f"{where}: key {key!r}: {unusable}")
            continue
        try:
            values[key] = rule.convert(raw)
        except (TypeError, ValueError) as error:
            problems.append(f"{where}: key {key!r}: {error}")
    return values


def _unknown_top_level(name: str, value: object) -> str:
    kind = "table" if isinstance(value, dict) else "key"
    for table, keys in (("[scheduler]", SCHEDULER_KEYS), ("a [jobs.<id>] table", JOB_KEYS)):
        if name in keys:
            return f"{kind} {name!r}: unknown at the top level; it belongs in {table}"
    suggestion = _suggestion(name, ("scheduler", "jobs"))
    return f"{kind} {name!r}: unknown{suggestion}; the tables are [scheduler] and [jobs.<id>]"


def _syntax_problem(label: str, text: str, message: str) -> str:
    match = _TOML_POSITION.fullmatch(message)
    if match is None:
        return f"{label}: not valid TOML: {message}"
    reason, where, line = match.group(1), match.group(2), match.group(3)
    if line is None:
        return f"{label}: at the end: not valid TOML: {reason}"
    lines = text.splitlines()
    number = int(line)
    source = f" (the line reads: {lines[number - 1].strip()})" if 0 < number <= len(lines) else ""
    return f"{label}: {where}: not valid TOML: {reason}{source}"


def _suggestion(name: str, choices: Mapping[str, object] | tuple[str, ...]) -> str:
    close = difflib.get_close_matches(name, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _quoted(names: tuple[str, ...], conjunction: str) -> str:
    quoted = [repr(name) for name in names]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} {conjunction} {quoted[-1]}"


def _canonical(value: object) -> object:
    """Write the TOML values JSON has no form for, tagged so that no other value reads the same."""
    if isinstance(value, datetime | date | time):
        return {"\x00toml": type(value).__name__, "value": value.isoformat()}
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, RetrySpec):
        return {spec_field.name: getattr(value, spec_field.name) for spec_field in fields(value)}
    raise TypeError(f"{value!r} has no canonical form")


def _nesting_position(text: str) -> str:
    """Where the brackets of ``text`` first nest deeper than ``MAX_NESTING`` (``"line 3, column 40: "``).

    A rough scan, for the message only: it skips strings and comments, and counts ``[`` and
    ``{`` against ``]`` and ``}``; empty if it finds no such place.
    """
    depth, line, line_start, quote, index = 0, 1, 0, "", 0
    while index < len(text):
        char = text[index]
        index += 1
        if char == "\n":
            line, line_start = line + 1, index
            if quote in ('"', "'"):
                quote = ""  # a one-line string ends with its line (a broken one too)
        elif quote:
            if char == "\\" and not quote.startswith("'"):
                index += 1
            elif text.startswith(quote, index - 1):
                index += len(quote) - 1
                quote = ""
        elif char in "\"'":
            quote = char * 3 if text.startswith(char * 3, index - 1) else char
            index += len(quote) - 1
        elif char == "#":
            while index < len(text) and text[index] != "\n":
                index += 1
        elif char in "[{":
            depth += 1
            if depth > MAX_NESTING:
                return f"line {line}, column {index - line_start}: "
        elif char in "]}":
            depth -= 1
    return ""


def _long_integer_problem(label: str, text: str, error: ValueError) -> str:
    match = _LONG_INTEGER.search(text)
    if match is None:  # tomllib raised it for another reason: say what it said
        return f"{label}: not valid TOML: {error}"
    line = text.count("\n", 0, match.start()) + 1
    return (
        f"{label}: line {line}: an integer of thousands of digits: TOML integers are 64-bit, -2^63 to 2^63-1"
    )
