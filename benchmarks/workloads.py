"""The workloads, each expressed as a list of :class:`Case` objects.

The first six are here; the durable ones live in ``benchmarks/durable_workloads.py`` and
the million-task fill in ``benchmarks/million.py``.

A case's ``measure`` runs once against a freshly started adapter and returns
a :class:`Measurement`; the runner repeats it, interleaving peers, and takes
medians. Waiting for work is always done on :class:`Completions` (set from
inside the task) with a timeout, never by sleeping.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import random
import threading
import time
import tracemalloc
from collections.abc import Callable
from typing import Self

from benchmarks.adapters import Adapter, Completions
from benchmarks.cases import FAR_S, Case, Config, Measurement
from benchmarks.durable_workloads import durable_burst_cases, durable_schedule_cases, restart_cases
from benchmarks.executors import executors_cases
from benchmarks.million import million_cases
from benchmarks.results import percentile

__all__ = ["WORKLOADS", "Case", "Config", "Measurement", "build_cases"]


def _noop() -> None:
    """The task used where only scheduling matters."""


# ---------------------------------------------------------------------------
# 1. throughput


def measure_throughput(adapter: Adapter, n: int, timeout: float) -> Measurement:
    """N no-op tasks all due now; tasks/s from first schedule to last run."""
    done = Completions(n)
    fn = done.hit
    schedule = adapter.schedule_once
    t0 = time.perf_counter()
    for _ in range(n):
        schedule(fn, 0.0)
    if not done.wait(timeout):
        raise TimeoutError(f"only {done.count:,}/{n:,} tasks ran within {timeout:.0f} s")
    elapsed = time.perf_counter() - t0
    return Measurement({"tasks_per_s": n / elapsed})


# ---------------------------------------------------------------------------
# 2. cost vs size


def _timed_calls(
    calls: list[Callable[[], object]], budget_s: float, minimum: int = 20
) -> tuple[list[float], list[object]]:
    """Time each call (µs); stop early once ``budget_s`` is spent (>= minimum)."""
    times: list[float] = []
    returns: list[object] = []
    clock = time.perf_counter_ns
    deadline = time.perf_counter() + budget_s
    for call in calls:
        t = clock()
        returns.append(call())
        times.append((clock() - t) / 1000.0)
        if len(times) >= minimum and time.perf_counter() > deadline:
            break
    return times, returns


def measure_cost(adapter: Adapter, n: int, ops: int, budget_s: float, seed: int) -> Measurement:
    """Cost of one schedule / cancel call and bytes per task with N pending.

    The N pending tasks are due at random times 1-2 h ahead and share one
    function, so closure memory is not counted; tokens are not kept (the
    memory is what the scheduler itself retains). Memory is the tracemalloc
    difference around the fill, taken after ``absorb``. The extra schedule
    calls use random times in the same range, and the cancels remove exactly
    those extra tasks.
    """
    rng = random.Random(seed)
    delays = [FAR_S + rng.random() * FAR_S for _ in range(n)]
    extra = [FAR_S + rng.random() * FAR_S for _ in range(ops)]
    schedule = adapter.schedule_once
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for d in delays:
            schedule(_noop, d)
        adapter.absorb(timeout=300.0)
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    del delays
    gc.collect()

    sched_us, tokens = _timed_calls([functools.partial(schedule, _noop, d) for d in extra], budget_s)
    adapter.absorb(timeout=60.0)
    # Half the extra tasks are cancelled through their token, half by id (where the peer can).
    by_token, by_id = tokens[: len(tokens) // 2], tokens[len(tokens) // 2 :]
    if not adapter.cancels_by_id:
        by_token, by_id = tokens, []
    cancel_us, oks = _timed_calls([functools.partial(adapter.cancel, t) for t in by_token], budget_s)
    by_id_us, id_oks = _timed_calls([functools.partial(adapter.cancel_by_id, t) for t in by_id], budget_s)
    failed = sum(1 for ok in [*oks, *id_oks] if not ok)
    note = f"{failed} of {len(oks) + len(id_oks)} cancels of pending tasks returned False" if failed else ""
    sched_us.sort()
    cancel_us.sort()
    by_id_us.sort()
    metrics = {
        "schedule_us": percentile(sched_us, 50),
        "cancel_us": percentile(cancel_us, 50),
        "bytes_per_task": (after - before) / n,
        "schedule_calls": float(len(sched_us)),
        "cancel_calls": float(len(cancel_us)),
    }
    if by_id_us:
        metrics["cancel_by_id_us"] = percentile(by_id_us, 50)
    return Measurement(metrics, note=note)


# ---------------------------------------------------------------------------
# 3. lateness


class _BusyLoad:
    """Four plain threads doing 5 ms CPU busy loops with 0.5 ms pauses.

    The load is applied the same way to every peer (it does not go through
    the scheduler under test, so lateness is not mixed with queueing behind
    the load's own tasks); it competes for the GIL and the cores. Every
    thread of a scheduler that blocks (lock, condition, queue) must win the
    GIL back from these threads, which can take a switch interval (5 ms) each.
    """

    def __init__(self, threads: int = 4, burst_s: float = 0.005) -> None:
        self._stop = threading.Event()
        self._burst = burst_s
        self._threads = [
            threading.Thread(target=self._spin, name=f"busy-load-{i}", daemon=True) for i in range(threads)
        ]

    def _spin(self) -> None:
        clock = time.perf_counter
        while not self._stop.is_set():
            end = clock() + self._burst
            while clock() < end:
                pass
            self._stop.wait(0.0005)

    def __enter__(self) -> Self:
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(5.0)


class _Recorder:
    """Records the monotonic start time of task ``i``."""

    def __init__(self, n: int) -> None:
        self.started = [0.0] * n
        self.done = Completions(n)

    def task(self, i: int) -> Callable[[], None]:
        return functools.partial(self._run, i)

    def _run(self, i: int) -> None:
        self.started[i] = time.monotonic()
        self.done.hit()


def measure_lateness(
    adapter: Adapter, n: int, spread_s: float, lead_s: float, seed: int, loaded: bool
) -> Measurement:
    """N one-time tasks due at random moments; start minus due time (ms).

    Tasks are scheduled in random order, the first due ``lead_s`` after the
    schedule loop starts; with ``loaded`` four busy threads run from the end
    of the schedule loop until the last task ran.
    """
    rng = random.Random(seed)
    offsets = [lead_s + rng.random() * spread_s for _ in range(n)]
    rec = _Recorder(n)
    tasks = [rec.task(i) for i in range(n)]
    note = ""
    base = time.monotonic()
    due = [base + o for o in offsets]
    schedule = adapter.schedule_once
    clock = time.monotonic
    for i in range(n):
        schedule(tasks[i], due[i] - clock())
    fill_s = time.monotonic() - base
    if fill_s > lead_s:
        note = f"scheduling took {fill_s:.2f} s > lead {lead_s:.2f} s"
    # The load starts once every task is scheduled, so it slows the firing and
    # the running of tasks, not the caller's schedule loop (which would make
    # slow-to-schedule peers look late for a reason the idle case already shows).
    with _BusyLoad() if loaded else contextlib.nullcontext():
        if not rec.done.wait(lead_s + spread_s + 60.0):
            raise TimeoutError(f"only {rec.done.count:,}/{n:,} tasks ran")
    late_ms = sorted((s - d) * 1000.0 for s, d in zip(rec.started, due, strict=True))
    return Measurement(
        {
            "p50_ms": percentile(late_ms, 50),
            "p99_ms": percentile(late_ms, 99),
            "max_ms": late_ms[-1],
            "min_ms": late_ms[0],
        },
        extra={"late_ms": late_ms},
        note=note,
    )


# ---------------------------------------------------------------------------
# 4. idle cost


def measure_idle(adapter: Adapter, n: int, window_s: float) -> Measurement:
    """CPU time the whole process uses while N tasks wait an hour ahead."""
    for i in range(n):
        adapter.schedule_once(_noop, FAR_S + i * 1e-3)
    adapter.absorb(timeout=60.0)
    gc.collect()
    pause = threading.Event()
    pause.wait(0.2)  # let post-fill work (if any) finish before measuring
    c0, w0 = time.process_time(), time.monotonic()
    pause.wait(window_s)
    c1, w1 = time.process_time(), time.monotonic()
    return Measurement({"cpu_ms_per_5s": (c1 - c0) / (w1 - w0) * 5.0 * 1000.0})


# ---------------------------------------------------------------------------
# 5. fixed-rate accuracy


def measure_fixed_rate(adapter: Adapter, interval_s: float, duration_s: float) -> Measurement:
    """One task every ``interval_s`` for ``duration_s``: run count and drift.

    Ideal run k starts at ``t0 + k*interval`` (t0 just before the schedule
    call). ``runs`` counts runs started within the window (``duration`` plus
    half an interval of slack). ``drift_ms`` is the start of the last run in
    the window minus the ideal time of the nearest slot, so a skipped slot
    (a scheduler that skips missed slots after a stall) lowers ``runs``
    instead of showing up as a whole interval of drift; accumulated timing
    error (e.g. fixed-delay behaviour) shows up as both.
    """
    expected = round(duration_s / interval_s)
    starts: list[float] = []
    done = Completions(expected)

    def tick() -> None:
        starts.append(time.monotonic())
        done.hit()

    t0 = time.monotonic()
    token = adapter.schedule_at_fixed_rate(tick, interval_s)
    done.wait(duration_s + 1.0)  # returns as soon as the expected runs happened
    adapter.cancel(token)
    window_end = t0 + duration_s + interval_s / 2
    seen = sorted(s for s in list(starts) if s <= window_end)
    if not seen:
        raise TimeoutError("the fixed-rate task never ran within its window")
    last = seen[-1]
    slot = max(1, round((last - t0) / interval_s))
    drift_ms = (last - (t0 + slot * interval_s)) * 1000.0
    return Measurement(
        {"runs": float(len(seen)), "expected_runs": float(expected), "drift_ms": drift_ms},
        note="",
    )


# ---------------------------------------------------------------------------
# case lists


def _throughput(cfg: Config) -> list[Case]:
    return [
        Case(
            "throughput",
            f"n={n:,}",
            {"n": n},
            pending=n,
            repeats=cfg.repeats_for(n),
            units={"tasks_per_s": "tasks/s"},
            measure=functools.partial(measure_throughput, n=n, timeout=max(60.0, n / 500.0)),
        )
        for n in cfg.throughput_sizes
    ]


def _cost(cfg: Config) -> list[Case]:
    return [
        Case(
            "cost",
            f"n={n:,}",
            {"n": n, "ops": cfg.cost_ops},
            pending=n,
            repeats=cfg.repeats_for(n),
            units={
                "schedule_us": "µs",
                "cancel_us": "µs",
                "cancel_by_id_us": "µs",
                "bytes_per_task": "B",
                "schedule_calls": "calls",
                "cancel_calls": "calls",
            },
            measure=functools.partial(
                measure_cost,
                n=n,
                ops=cfg.cost_ops,
                budget_s=cfg.cost_budget_s,
                seed=cfg.seed,
            ),
        )
        for n in cfg.cost_sizes
    ]


def _lateness(cfg: Config) -> list[Case]:
    units = {"p50_ms": "ms", "p99_ms": "ms", "max_ms": "ms", "min_ms": "ms"}
    return [
        Case(
            "lateness",
            "loaded" if loaded else "idle",
            {
                "n": cfg.lateness_tasks,
                "spread_s": cfg.lateness_spread_s,
                "load": "4 threads x 5 ms busy loops" if loaded else "none",
            },
            pending=cfg.lateness_tasks,
            repeats=cfg.repeats,
            units=units,
            measure=functools.partial(
                measure_lateness,
                n=cfg.lateness_tasks,
                spread_s=cfg.lateness_spread_s,
                lead_s=cfg.lateness_lead_s,
                seed=cfg.seed,
                loaded=loaded,
            ),
        )
        for loaded in (False, True)
    ]


def _idle(cfg: Config) -> list[Case]:
    return [
        Case(
            "idle",
            f"n={cfg.idle_tasks:,}",
            {"n": cfg.idle_tasks, "window_s": cfg.idle_window_s},
            pending=cfg.idle_tasks,
            repeats=cfg.repeats,
            units={"cpu_ms_per_5s": "ms CPU / 5 s"},
            measure=functools.partial(measure_idle, n=cfg.idle_tasks, window_s=cfg.idle_window_s),
        )
    ]


def _fixed_rate(cfg: Config) -> list[Case]:
    return [
        Case(
            "fixed_rate",
            f"{cfg.rate_interval_s * 1000:g} ms x {cfg.rate_duration_s:g} s",
            {"interval_s": cfg.rate_interval_s, "duration_s": cfg.rate_duration_s},
            pending=1,
            repeats=cfg.repeats,
            units={"runs": "runs", "expected_runs": "runs", "drift_ms": "ms"},
            measure=functools.partial(
                measure_fixed_rate,
                interval_s=cfg.rate_interval_s,
                duration_s=cfg.rate_duration_s,
            ),
        )
    ]


# ---------------------------------------------------------------------------
# 6. short tasks beside CPU-bound ones

CPU_BOUND_TASKS = 4
CPU_BURN = "benchmarks.cpu:burn"


def measure_cpu_bound(
    adapter: Adapter, n: int, spread_s: float, burn_s: float, seed: int, in_process: bool
) -> Measurement:
    """Lateness (ms) of N short tasks while four CPU-bound tasks run, on threads or in processes.

    The four CPU-bound tasks (a pure Python loop, so they hold the GIL when on threads) start
    first; the short tasks are due at random moments over ``spread_s`` while they run. The
    pool has room for both (see the case's ``workers``).
    """
    rng = random.Random(seed)
    burners = Completions(CPU_BOUND_TASKS)
    for _ in range(CPU_BOUND_TASKS):
        adapter.schedule_cpu_bound(CPU_BURN, (burn_s,), 0.0, in_process=in_process)
    lead_s = 0.3  # the burners are running by then
    offsets = [lead_s + rng.random() * spread_s for _ in range(n)]
    rec = _Recorder(n)
    base = time.monotonic()
    due = [base + o for o in offsets]
    for i in range(n):
        adapter.schedule_once(rec.task(i), due[i] - time.monotonic())
    if not rec.done.wait(lead_s + spread_s + burn_s * CPU_BOUND_TASKS + 30.0):
        raise TimeoutError(f"only {rec.done.count:,}/{n:,} short tasks ran")
    late_ms = sorted((s - d) * 1000.0 for s, d in zip(rec.started, due, strict=True))
    del burners
    return Measurement(
        {"p50_ms": percentile(late_ms, 50), "p99_ms": percentile(late_ms, 99), "max_ms": late_ms[-1]},
        extra={"late_ms": late_ms},
    )


def _cpu_bound(cfg: Config) -> list[Case]:
    units = {"p50_ms": "ms", "p99_ms": "ms", "max_ms": "ms"}
    cases = []
    for in_process in (False, True):
        kwargs = {"workers": 8, "processes": 2} if in_process else {"workers": 8}
        cases.append(
            Case(
                "cpu_bound",
                "cpu tasks in 2 processes" if in_process else "cpu tasks on threads",
                {"n": cfg.cpu_short_tasks, "cpu_tasks": CPU_BOUND_TASKS, "burn_s": cfg.cpu_burn_s, **kwargs},
                pending=cfg.cpu_short_tasks,
                repeats=cfg.repeats,
                units=units,
                measure=functools.partial(
                    measure_cpu_bound,
                    n=cfg.cpu_short_tasks,
                    spread_s=cfg.cpu_spread_s,
                    burn_s=cfg.cpu_burn_s,
                    seed=cfg.seed,
                    in_process=in_process,
                ),
                adapter_kwargs=kwargs,
            )
        )
    return cases


#: Workload name -> builder of its cases, in run order.
WORKLOADS: dict[str, Callable[[Config], list[Case]]] = {
    "throughput": _throughput,
    "cost": _cost,
    "lateness": _lateness,
    "idle": _idle,
    "fixed_rate": _fixed_rate,
    "cpu_bound": _cpu_bound,
    "durable_schedule": durable_schedule_cases,
    "durable_burst": durable_burst_cases,
    "restart": restart_cases,
    "million": million_cases,
    "executors": executors_cases,
}


def build_cases(cfg: Config, only: list[str] | None = None) -> dict[str, list[Case]]:
    """Cases per workload, restricted to ``only`` when given."""
    names = only or list(WORKLOADS)
    return {name: WORKLOADS[name](cfg) for name in names}
