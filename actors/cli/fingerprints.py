"""The fingerprints file: each job's fingerprint as it was last scheduled, beside the store.

A store keeps what a task *is* (function, arguments, trigger), not which job-file text it
came from, so the runner records each job's ``JobSpec.fingerprint()`` in
``<store>.jobs.json`` after it has carried out a reconcile. It is written only by the process
that holds the store, and atomically (a temporary file renamed over the old one).

Order matters for a crash: the store is changed first, this file second. A crash between
the two leaves old or missing fingerprints, which make the next start *replace* the jobs
concerned (the same definition again, counters kept): never keep a job whose definition
changed.

Threads: called from the runner's main thread only.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["fingerprints_path", "read_fingerprints", "write_fingerprints"]

logger = logging.getLogger(__name__)

_SUFFIX = ".jobs.json"


def fingerprints_path(store: Path) -> Path:
    """Return where the fingerprints of the jobs kept in ``store`` are recorded."""
    return store.with_name(store.name + _SUFFIX)


def read_fingerprints(path: Path) -> dict[str, str]:
    """Return the recorded fingerprints by job id; none if the file is missing or unreadable.

    An unreadable file is logged and treated as empty: every job is then replaced once.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:
        logger.warning(
            "%s: cannot read the recorded job fingerprints (%s); every job is replaced", path, error
        )
        return {}
    jobs = data.get("jobs") if isinstance(data, dict) else None
    if not isinstance(jobs, dict):
        logger.warning("%s: not a fingerprints file; every job is replaced", path)
        return {}
    return {str(job_id): str(digest) for job_id, digest in jobs.items()}


def write_fingerprints(path: Path, fingerprints: Mapping[str, str]) -> None:
    """Record ``fingerprints`` (job id to digest) at ``path``, replacing what was there, atomically.

    Raises:
        OSError: the file cannot be written (the old one, if any, is left as it was).
    """
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    text = json.dumps({"jobs": dict(fingerprints)}, indent=1, sort_keys=True)
    try:
        with open(temporary, "w", encoding="utf-8") as file:
            file.write(text + "\n")
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
