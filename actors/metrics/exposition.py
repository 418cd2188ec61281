"""``MetricsText``: the text of a scheduler's ``/metrics``, as ``generate_latest`` writes it, for less.

A scrape of a scheduler that has labelled its 1,000 tasks is about 1,000 lines of
``taskscheduler_runs_total{outcome="completed",task="..."} 5.0``, and prometheus_client
writes each line anew every time: a ``Sample`` per line, then the label names checked and
escaped and the value formatted, about 15 µs a line, on a thread that shares the scheduler's
interpreter lock (``docs/web.md``, Speed). Most of those lines are the same from one scrape
to the next (a task that did not run since). ``MetricsText`` writes the ``LABELLED`` families
itself, from the counts, keeping each line it wrote with the count it shows: a line is
written again only when its count moved. The few other families (histograms, gauges) go
through ``generate_latest``. The text is the same, byte for byte (``tests/web/test_metrics.py``
holds them equal). What is kept is bounded as the labels are (``max_tasks`` tasks, a few
outcomes and reasons each).

Threads: ``render`` runs on the scraping thread (a web request's); two scrapes at once may
write the same line twice, never a wrong one (each keeps whole lines, keyed by what they show).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Final

from prometheus_client import generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.utils import floatToGoString

from actors.metrics.collector import LABELLED, SchedulerCollector

__all__ = ["MetricsText"]


class MetricsText:
    """The ``/metrics`` text of one ``SchedulerCollector`` (see the module)."""

    def __init__(self, collector: SchedulerCollector) -> None:
        self._collector = collector
        # (family, label value, other label's value) -> (count, its line)
        self._lines: dict[tuple[str, str, str], tuple[int, str]] = {}

    def render(self) -> bytes:
        """What ``generate_latest`` of a registry holding only the collector says now (one scrape)."""
        snapshot = self._collector.tally.snapshot()
        parts: list[str] = []
        for (name, documentation, labels), counts in zip(
            LABELLED, (snapshot.runs, snapshot.missed), strict=True
        ):
            total = f"{name}_total"
            parts.append(f"# HELP {total} {_help(documentation)}\n# TYPE {total} counter\n")
            parts.extend(self._family(total, labels, counts))
        rest = generate_latest(_Families(self._collector.unlabelled(snapshot)))
        return "".join(parts).encode() + rest

    def _family(
        self, total: str, labels: tuple[str, str], counts: Mapping[tuple[str, str], int]
    ) -> Iterator[str]:
        """Each line of a ``LABELLED`` family, in ``collect``'s order (by task, then the other label)."""
        kept = self._lines
        task_label, other_label = labels  # the line shows them sorted by name: "outcome"/"reason" first
        assert other_label < task_label
        for (task, other), count in sorted(counts.items()):
            key = (total, task, other)
            known = kept.get(key)
            if known is not None and known[0] == count:
                yield known[1]
                continue
            shown = f'{other_label}="{_value(other)}",{task_label}="{_value(task)}"'
            line = f"{total}{{{shown}}} {_number(count)}\n"
            kept[key] = (count, line)
            yield line


_number: Final[Callable[[float], str]] = floatToGoString
"""A sample's value as prometheus_client writes it (``1.0``, ``1.234567e+06``)."""


class _Families:
    """Families already made, as a collector for ``generate_latest``."""

    def __init__(self, families: Iterable[Metric]) -> None:
        self._families = families

    def collect(self) -> Iterable[Metric]:
        return self._families


def _help(text: str) -> str:
    return text.replace("\\", r"\\").replace("\n", r"\n")


def _value(text: str) -> str:
    """A label value as the text format escapes it (backslash, newline, double quote)."""
    return text.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")
