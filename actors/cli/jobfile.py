"""The job file: a TOML description of a schedule, checked and turned into plain data.

``load_jobfile(path)`` reads one file and returns a ``JobFile``, or raises ``JobFileError``
listing *every* problem found, one line each, each naming the file, the job and the key. The
rules for each key are data, in ``actors/cli/jobkeys.py``: a new key is one entry there, its
converter, and (for a job key) a field of the same name on ``JobSpec``.

Nothing here reads a clock (``describe_next_runs`` takes ``now``) or imports user code, except
``import_problems``, whose whole point is to try.
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

from actors.cli.jobkeys import (
    JOB_KEYS,
    MEMORY_STORE,
    SCHEDULER_KEYS,
    TRIGGERS,
    Key,
    Kind,
    parse_duration,
    show,
    wrong_type,
)
from actors.cli.stores import StoreName, store_name
from actors.cron import check_cron, next_fires
from actors.errors import JobFileError
from actors.references import check_json_arguments, resolve

__all__ = [
    "JOB_KEYS",
    "SCHEDULER_KEYS",
    "JobFile",
    "JobSpec",
    "Key",
    "describe_next_runs",
    "import_problems",
    "load_jobfile",
    "parse_duration",
    "parse_jobfile",
]

_RESERVED_ID: Final = re.compile(r"task-\d+")  # the ids the scheduler mints (actors.facade)
_TOML_POSITION: Final = re.compile(r"(.*) \(at (line (\d+), column \d+|end of document)\)")


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
    """

    path: Path
    workers: int
    store: StoreName | None
    tz: str
    jobs: tuple[JobSpec, ...]

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
    try:
        text = Path(path).read_bytes().decode("utf-8-sig")  # a byte-order mark is no error
    except OSError as error:
        raise JobFileError([f"{path}: cannot read the job file: {error.strerror or error}"]) from None
    except UnicodeDecodeError as error:
        raise JobFileError(
            [f"{path}: not UTF-8 text (at byte offset {error.start}), as TOML must be"]
        ) from None
    return parse_jobfile(text, path)


def parse_jobfile(text: str, path: str | Path) -> JobFile:
    """Check the TOML ``text`` of the job file at ``path`` (used for messages and relative paths).

    Raises:
        JobFileError: as ``load_jobfile``.
    """
    label = str(path)
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise JobFileError([_syntax_problem(label, text, str(error))]) from None
    absolute = Path(path).absolute()
    problems: list[str] = []
    for name, value in document.items():
        if name not in ("scheduler", "jobs"):
            problems.append(f"{label}: {_unknown_top_level(name, value)}")
    settings = _scheduler_settings(document.get("scheduler", {}), label, problems)
    default_store = absolute.with_suffix(".db").name
    store = store_name(settings.get("store", default_store), absolute.parent)
    tz = settings.get("tz", "UTC")
    jobs = _jobs(document.get("jobs"), label, tz, store is not None, problems)
    if problems:
        raise JobFileError(problems)
    return JobFile(absolute, settings.get("workers", 4), store, tz, jobs)


def import_problems(jobfile: JobFile) -> list[str]:
    """Try to import each job's ``fn`` and say which do not import or are not callable.

    The job file's folder comes first on ``sys.path`` while this runs (``sys.path`` is restored
    afterwards); imported modules stay imported. Runs the imported modules' top-level code.

    Returns:
        One line per job whose ``fn`` fails, naming the file, the job and the key; empty if all import.
    """
    problems: list[str] = []
    saved_path = list(sys.path)
    sys.path.insert(0, str(jobfile.folder))
    importlib.invalidate_caches()  # a module written since the last import must be seen
    try:
        for spec in jobfile.jobs:
            try:
                resolve(spec.fn)
            except Exception as error:  # importing user code can raise anything
                problems.append(
                    f"{jobfile.path.name}: job {spec.job_id!r}: key 'fn': "
                    f"cannot use {spec.fn!r}: {type(error).__name__}: {error}"
                )
    finally:
        sys.path[:] = saved_path
    return problems


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


# -- assembling the file ---------------------------------------------------------------------------


def _scheduler_settings(table: object, label: str, problems: list[str]) -> dict[str, Any]:
    where = f"{label}: [scheduler]"
    if not isinstance(table, dict):
        problems.append(f"{label}: key 'scheduler': {wrong_type('a table ([scheduler])', table)}")
        return {}
    return _convert_keys(table, SCHEDULER_KEYS, where, problems)


def _jobs(
    table: object, label: str, default_tz: str, stored: bool, problems: list[str]
) -> tuple[JobSpec, ...]:
    if table is None:
        problems.append(f"{label}: no jobs: add a table [jobs.<id>] with fn and a trigger")
        return ()
    if not isinstance(table, dict):
        problems.append(f"{label}: key 'jobs': {wrong_type('a table of jobs ([jobs.<id>])', table)}")
        return ()
    specs = []
    for job_id, job in table.items():
        spec = _job(job_id, job, f"{label}: job {job_id!r}", default_tz, stored, problems)
        if spec is not None:
            specs.append(spec)
    return tuple(specs)


def _job(
    job_id: str, table: object, where: str, default_tz: str, stored: bool, problems: list[str]
) -> JobSpec | None:
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
    if stored:  # a stored job's arguments are written as JSON
        _check_json(values, where, problems)
    if len(problems) > count or kind is None:
        return None
    if kind == "cron":
        values["tz"] = values.get("tz", default_tz)
    return JobSpec(job_id=job_id, kind=cast(Kind, kind), **values)


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
    raise TypeError(f"{value!r} has no canonical form")
