"""Runs cases against peers: repeats interleaved, fresh scheduler per run.

Each run starts a new adapter, measures, shuts it down and then checks that
no thread it started outlived the shutdown (leaks are reported, and the
leaked threads are excluded from the next baseline). A case with
``child_args`` runs each time in a fresh child process (``benchmarks.isolated``),
which does the same there and sends back its measurement as JSON.
"""

from __future__ import annotations

import gc
import inspect
import json
import math
import os
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence

from benchmarks.adapters import REPO_ROOT, Adapter
from benchmarks.cases import Case, Measurement
from benchmarks.results import Result, Skip, median

__all__ = ["REFERENCE", "run_case"]

#: Ratios are taken against this peer, run for run.
REFERENCE = "textbook"
#: Peers whose absence or failure makes the run fail (the library under test).
REQUIRED = frozenset({"ours"})
SHUTDOWN_TIMEOUT_S = 15.0
#: A run longer than this is not repeated: its noise is small next to its value,
#: and repeating it would blow the time budget of a full run.
SLOW_RUN_S = 15.0
#: A run in a child process that takes longer than this is killed (and fails).
CHILD_TIMEOUT_S = 1800.0


def log(msg: str) -> None:
    """Progress goes to stderr; stdout carries only the final table (a child's: its one JSON result)."""
    print(msg, file=sys.stderr, flush=True)


def _new_threads(baseline: set[threading.Thread], timeout: float) -> list[str]:
    """Join threads not in ``baseline`` (within ``timeout``); names of survivors."""
    deadline = time.monotonic() + timeout
    for t in threading.enumerate():
        if t not in baseline and t is not threading.current_thread():
            t.join(max(0.0, deadline - time.monotonic()))
    return sorted(t.name for t in threading.enumerate() if t not in baseline and t.is_alive())


def _missing_setting(cls: type[Adapter], case: Case) -> str | None:
    """Why ``cls`` cannot run ``case``: a setting it does not have (``durable``, ...), or None."""
    accepted = inspect.signature(cls).parameters
    missing = [name for name in case.adapter_kwargs if name not in accepted]
    return f"{cls.name} has no {' or '.join(missing)} setting" if missing else None


def run_once(cls: type[Adapter], case: Case) -> tuple[Measurement, list[str]]:
    """One measurement on a fresh adapter; returns it and any leaked threads."""
    missing = _missing_setting(cls, case)
    if missing:
        raise Skip(missing)
    if case.child_args is not None:
        return run_in_child(cls, case)
    gc.collect()
    baseline = set(threading.enumerate())
    adapter = cls(**case.adapter_kwargs)
    try:
        adapter.start()
        measurement = case.measure(adapter)
    finally:
        try:
            adapter.shutdown(timeout=SHUTDOWN_TIMEOUT_S)
        finally:
            leaked = _new_threads(baseline, timeout=5.0)
    return measurement, leaked


def run_in_child(cls: type[Adapter], case: Case) -> tuple[Measurement, list[str]]:
    """Run ``run_once`` for ``cls`` in a fresh Python process; its measurement and leaked threads.

    The child rebuilds the case from its workload and label (``benchmarks.isolated``); its
    progress and errors go to this process's stderr, its result comes back on its stdout.
    """
    assert case.child_args is not None
    command = [sys.executable, "-m", "benchmarks.isolated", case.workload, case.label, cls.name]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    child = subprocess.run(
        [*command, *case.child_args],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO_ROOT,
        env=env,
        timeout=CHILD_TIMEOUT_S,
        check=False,
    )
    lines = child.stdout.strip().splitlines()
    if child.returncode != 0 or not lines:
        raise RuntimeError(f"the child process for {cls.name} exited with status {child.returncode}")
    data = json.loads(lines[-1])
    if "skip" in data:
        raise Skip(data["skip"])
    measurement = Measurement(data["metrics"], data["extra"], data["note"])
    return measurement, list(data["leaked"])


def run_case(
    case: Case,
    peers: Sequence[type[Adapter]],
    emit: Callable[[Result], None],
) -> list[Result]:
    """Run ``case`` for every peer, ``case.repeats`` rounds, peers interleaved."""
    results = {cls.name: _blank(case, cls) for cls in peers}
    active = [cls for cls in peers if results[cls.name].status == "ok"]
    runs: dict[str, list[Measurement | None]] = {cls.name: [] for cls in active}

    for rep in range(case.repeats):
        shift = rep % len(active) if active else 0
        for cls in active[shift:] + active[:shift]:  # rotate the order per repeat
            log(f"  [{case.workload} {case.label}] {cls.name} run {rep + 1}/{case.repeats}")
            res = results[cls.name]
            t0 = time.monotonic()
            try:
                measurement, leaked = run_once(cls, case)
            except Skip as exc:
                res.status, res.note = "skipped", str(exc)
                active.remove(cls)
                continue
            except Exception as exc:  # a peer's failure is a result, not a crash
                traceback.print_exc(file=sys.stderr)
                res.status, res.note = "failed", f"{type(exc).__name__}: {exc}"
                runs[cls.name].append(None)
                active.remove(cls)
                continue
            took = time.monotonic() - t0
            log(f"    {took:.1f} s")
            if took > SLOW_RUN_S and rep + 1 < case.repeats:
                active.remove(cls)
                measurement.note = _join(measurement.note, f"not repeated: run took {took:.0f} s")
            runs[cls.name].append(measurement)
            _record(res, measurement, leaked)

    _aggregate(results, runs)
    out = [results[cls.name] for cls in peers]
    for res in out:
        emit(res)
    return out


def _join(*notes: str) -> str:
    return "; ".join(n for n in notes if n)


def _blank(case: Case, cls: type[Adapter]) -> Result:
    """A result for ``cls`` in ``case``: "ok" so far, or skipped/failed upfront."""
    res = Result(case.workload, case.label, cls.name, "ok", params=dict(case.params))
    res.units = dict(case.units)
    missing = cls.unavailable()
    reason = missing or _missing_setting(cls, case) or cls.unsupported(case.pending, case.adapter_kwargs)
    if reason is not None:
        res.status = "failed" if missing and cls.name in REQUIRED else "skipped"
        res.note = reason
    return res


def _record(res: Result, measurement: Measurement, leaked: list[str]) -> None:
    """Merge one run's note and leaked threads into the peer's result."""
    if measurement.note and measurement.note not in res.note:
        res.note = _join(res.note, measurement.note)
    res.leaked_threads += [name for name in leaked if name not in res.leaked_threads]
    if leaked:
        log(f"  WARNING: {res.peer} left threads running: {leaked}")


def _aggregate(results: dict[str, Result], runs: dict[str, list[Measurement | None]]) -> None:
    """Medians over repeats, raw data, and ratios to the reference peer."""
    ref = runs.get(REFERENCE, [])
    for name, measured in runs.items():
        res = results[name]
        ok = [m for m in measured if m is not None]
        res.repeats = len(ok)
        if res.status == "ok" and not ok:
            res.status, res.note = "failed", res.note or "no measurement"
        for m in ok:
            for metric, value in m.metrics.items():
                res.samples.setdefault(metric, []).append(value)
            for key, values in m.extra.items():
                res.extra.setdefault(key, []).extend(values)
        res.metrics = {k: median(v) for k, v in res.samples.items()}
        if name != REFERENCE:
            res.ratios = _ratios(measured, ref)


def _ratios(measured: list[Measurement | None], reference: list[Measurement | None]) -> dict[str, float]:
    """Median over repeats of value / reference value from the same repeat."""
    per_metric: dict[str, list[float]] = {}
    for mine, ref in zip(measured, reference, strict=False):
        if mine is None or ref is None:
            continue
        for metric, value in mine.metrics.items():
            base = ref.metrics.get(metric)
            if base is None or base == 0 or math.isnan(base) or math.isnan(value):
                continue
            per_metric.setdefault(metric, []).append(value / base)
    return {k: median(v) for k, v in per_metric.items()}
