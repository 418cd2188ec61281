"""What a workload is made of: its sizes (:class:`Config`), its cases and their measurements."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from benchmarks.adapters import Adapter

__all__ = ["FAR_S", "Case", "Config", "Measurement"]

#: Pending tasks in "cost", "idle" and "million" are due this far ahead (seconds).
FAR_S = 3600.0


@dataclass(frozen=True)
class Config:
    """Sizes and durations; :meth:`quick` shrinks everything for CI."""

    quick: bool = False
    repeats: int = 3
    seed: int = 20240601
    throughput_sizes: tuple[int, ...] = (10_000, 100_000)
    cost_sizes: tuple[int, ...] = (1_000, 10_000, 100_000, 1_000_000)
    cost_ops: int = 1_000
    cost_budget_s: float = 2.0  # per kind of call, per run; at least 20 calls
    lateness_tasks: int = 2_000
    lateness_spread_s: float = 2.0
    lateness_lead_s: float = 2.5
    idle_tasks: int = 10_000
    idle_window_s: float = 5.0
    rate_interval_s: float = 0.010
    rate_duration_s: float = 2.0
    cpu_short_tasks: int = 300
    cpu_spread_s: float = 2.0
    cpu_burn_s: float = 2.5
    durable_calls: int = 2_000  # durable schedule calls timed, after the warm-up calls
    durable_warmup_calls: int = 200
    durable_burst_sizes: tuple[int, ...] = (10_000, 100_000)
    restart_tasks: int = 1_000_000
    million_tasks: int = 1_000_000
    probe_interval_s: float = 0.010

    @classmethod
    def for_mode(cls, quick: bool, repeats: int | None = None) -> Config:
        """Full configuration, or the small one used by ``--quick``.

        ``--quick`` checks that every workload and peer runs, not how fast: sizes and windows
        are as small as still exercise each path (45 s on 2 loaded vCPUs, 13 s of it CPU: most
        of it is the windows the workloads wait out, the slowest peers and the plots).
        """
        if not quick:
            return cls(repeats=repeats or 3)
        return cls(
            quick=True,
            repeats=repeats or 1,
            throughput_sizes=(1_000,),
            cost_sizes=(200, 1_000),
            cost_ops=100,
            cost_budget_s=0.2,
            lateness_tasks=200,
            lateness_spread_s=0.3,
            lateness_lead_s=0.2,
            idle_tasks=2_000,
            idle_window_s=0.3,
            rate_duration_s=0.3,
            cpu_short_tasks=20,
            cpu_spread_s=0.2,
            cpu_burn_s=0.2,
            durable_calls=50,
            durable_warmup_calls=10,
            durable_burst_sizes=(200,),
            restart_tasks=5_000,
            million_tasks=5_000,
        )

    def repeats_for(self, pending: int) -> int:
        """Fewer repeats for the million-task sizes so a full run stays short."""
        return 1 if pending >= 1_000_000 else self.repeats


@dataclass
class Measurement:
    """Metrics of one run, plus raw data (e.g. a latency distribution)."""

    metrics: dict[str, float]
    extra: dict[str, list[float]] = field(default_factory=dict)
    note: str = ""


@dataclass
class Case:
    """One measured situation of a workload, run for every peer."""

    workload: str
    label: str
    params: dict[str, Any]
    pending: int  # most tasks pending at once; adapters may refuse large ones
    repeats: int
    units: dict[str, str]
    measure: Callable[[Adapter], Measurement]
    # Settings for the adapter, e.g. a bigger pool, or durable=True (peers without the
    # setting are skipped for this case).
    adapter_kwargs: dict[str, Any] = field(default_factory=dict)
    # Not None: each run happens in a fresh child process (``benchmarks.isolated`` with these
    # extra arguments), so that memory and garbage-collector figures count only this run.
    child_args: tuple[str, ...] | None = None
