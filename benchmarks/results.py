"""Result records and the small statistics helpers the workloads share."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

__all__ = ["Result", "Skip", "median", "percentile"]

Status = Literal["ok", "skipped", "failed"]


class Skip(Exception):
    """Raised by a measurement that cannot run for this peer (with a reason)."""


def median(values: Sequence[float]) -> float:
    """Median of ``values``; NaN when empty."""
    return statistics.median(values) if values else math.nan


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile ``q`` (0..100) of already sorted values."""
    if not sorted_values:
        return math.nan
    rank = max(1, math.ceil(q / 100.0 * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


@dataclass
class Result:
    """Outcome of one (workload, case, peer): medians over the repeats.

    ``samples`` keeps every repeat's value per metric; ``ratios`` holds, per
    metric, the median over repeats of this peer's value divided by the
    textbook's value measured in the same repeat.
    """

    workload: str
    case: str
    peer: str
    status: Status
    params: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)
    samples: dict[str, list[float]] = field(default_factory=dict)
    ratios: dict[str, float] = field(default_factory=dict)
    repeats: int = 0
    note: str = ""
    leaked_threads: list[str] = field(default_factory=list)
    extra: dict[str, list[float]] = field(default_factory=dict)

    def to_json(self, with_extra: bool = False) -> dict[str, Any]:
        """Plain dict for JSON output (NaN becomes None).

        Raw data in ``extra`` (e.g. every lateness sample) is left out unless
        ``with_extra`` is set, to keep the one-line-per-result stream short.
        """
        data = asdict(self)
        if not with_extra:
            data.pop("extra")
        cleaned: dict[str, Any] = _clean(data)
        return cleaned


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value
