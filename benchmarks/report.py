"""Output: JSON results file, text/markdown tables, machine facts and plots."""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import json
import math
import os
import platform
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.results import Result

__all__ = [
    "DISPLAY",
    "machine_info",
    "markdown_table",
    "plot_all",
    "read_json",
    "text_table",
    "write_json",
]

#: Metrics shown in the tables, per workload: (metric key, row label).
DISPLAY: dict[str, list[tuple[str, str]]] = {
    "throughput": [("tasks_per_s", "tasks/s")],
    "cost": [
        ("schedule_us", "schedule µs/call"),
        ("cancel_us", "cancel µs/call"),
        ("cancel_by_id_us", "cancel by id µs/call"),
        ("bytes_per_task", "bytes/pending task"),
    ],
    "lateness": [("p50_ms", "p50 ms"), ("p99_ms", "p99 ms"), ("max_ms", "max ms")],
    "idle": [("cpu_ms_per_5s", "CPU ms per 5 s")],
    "fixed_rate": [("runs", "runs"), ("drift_ms", "drift of last run ms")],
    "cpu_bound": [("p50_ms", "p50 ms"), ("p99_ms", "p99 ms"), ("max_ms", "max ms")],
    "durable_schedule": [
        ("median_us", "durable schedule µs/call, median"),
        ("p99_us", "durable schedule µs/call, p99"),
    ],
    "durable_burst": [
        ("tasks_per_s", "run + committed, tasks/s"),
        ("schedule_per_s", "durable schedules/s (one thread)"),
    ],
    "restart": [
        ("ready_s", "s until ready (a due task ran)"),
        ("rss_bytes_per_task", "RSS B/task after load"),
        ("traced_bytes_per_task", "Python heap B/task (tracemalloc)"),
        ("longest_pause_ms", "longest stop of a 10 ms probe thread, ms"),
        ("longest_collection_ms", "longest collection while loading, ms"),
        ("collections_s", "time in collections while loading, s"),
        ("full_gc_ms", "one gc.collect() once loaded, ms"),
    ],
    "million": [
        ("fill_s", "s until all held"),
        ("tasks_per_s", "tasks/s"),
        ("gc_objects_per_task", "GC-tracked objects per task"),
        ("bytes_per_task", "RSS B/task"),
        ("full_gc_ms", "one gc.collect() at N, ms"),
        ("p50_ms", "probe late p50 ms (while filling)"),
        ("p99_ms", "probe late p99 ms"),
        ("max_ms", "probe late max ms"),
        ("full_collections", "automatic full collections while filling"),
        ("collections_s", "time in collections while filling, s"),
    ],
    "executors": [
        ("runs_per_s", "runs/s"),
        ("p50_ms", "due -> start p50 ms"),
        ("p99_ms", "due -> start p99 ms"),
    ],
}
RATIO_HEADER = "ours ÷ textbook"


def machine_info() -> dict[str, Any]:
    """nproc, CPU model, Python and peer versions, date."""
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions: dict[str, str | None] = {}
    for pkg in ("pykka", "apscheduler", "sqlalchemy", "matplotlib"):
        try:
            versions[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            versions[pkg] = None
    return {
        "nproc": os.cpu_count(),
        "cpu_model": model,
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "packages": versions,
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }


def write_json(path: Path, meta: dict[str, Any], results: Sequence[Result]) -> None:
    """All results (with raw samples) plus run metadata, as one JSON file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"meta": meta, "results": [r.to_json(with_extra=True) for r in results]}
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")


def read_json(path: Path) -> tuple[dict[str, Any], list[Result]]:
    """Load what :func:`write_json` wrote (for re-rendering tables and plots)."""
    data = json.loads(path.read_text())
    results = []
    for raw in data["results"]:
        for key in ("metrics", "ratios"):
            raw[key] = {k: (math.nan if v is None else v) for k, v in raw[key].items()}
        results.append(Result(**raw))
    return data["meta"], results


# ---------------------------------------------------------------------------
# tables


def _fmt(value: float) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    mag = abs(value)
    if mag >= 1000:
        return f"{value:,.0f}"
    if mag >= 100:
        return f"{value:.0f}"
    if mag >= 10:
        return f"{value:.1f}"
    if mag >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def _cell(res: Result | None, metric: str) -> str:
    if res is None:
        return ""
    if res.status == "skipped":
        return f"n/a ({res.note})"
    if res.status == "failed":
        return f"FAILED ({res.note})"
    if metric not in res.metrics:
        return "-"
    return _fmt(res.metrics[metric])


def _rows(results: Sequence[Result]) -> tuple[list[str], list[list[str]]]:
    peers: list[str] = []
    for r in results:
        if r.peer not in peers:
            peers.append(r.peer)
    by_key: dict[tuple[str, str], dict[str, Result]] = {}
    for r in results:
        by_key.setdefault((r.workload, r.case), {})[r.peer] = r
    header = ["workload", "case", "metric", *peers]
    with_ratio = "ours" in peers and "textbook" in peers
    if with_ratio:
        header.append(RATIO_HEADER)
    rows: list[list[str]] = []
    for (workload, case), cells in by_key.items():
        for metric, label in DISPLAY.get(workload, []):
            row = [workload, case, label, *(_cell(cells.get(p), metric) for p in peers)]
            if with_ratio:
                ours = cells.get("ours")
                ratio = ours.ratios.get(metric) if ours and ours.status == "ok" else None
                row.append(f"{ratio:.2f}" if ratio is not None else "-")
            rows.append(row)
    return header, rows


def text_table(results: Sequence[Result]) -> str:
    """Readable fixed-width table (peers as columns)."""
    header, rows = _rows(results)
    clipped = [[c if len(c) <= 40 else c[:37] + "..." for c in row] for row in rows]
    widths = [max(len(x) for x in col) for col in zip(header, *clipped, strict=True)]

    def line(cells: Iterable[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    out = [line(header), line("-" * w for w in widths)]
    out += [line(row) for row in clipped]
    return "\n".join(out)


def markdown_table(results: Sequence[Result]) -> str:
    """The same table in GitHub markdown; long "n/a (...)" reasons become footnotes."""
    header, rows = _rows(results)
    notes: list[str] = []

    def shorten(cell: str) -> str:
        if not (cell.startswith("n/a (") and cell.endswith(")")):
            return cell
        reason = cell[len("n/a (") : -1]
        if reason not in notes:
            notes.append(reason)
        return f"n/a [{notes.index(reason) + 1}]"

    body = [[shorten(c) for c in row] for row in rows]
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in body]
    if notes:
        out.append("")
        out += [f"[{i}] {reason}" + ("  " if i < len(notes) else "") for i, reason in enumerate(notes, 1)]
    return "\n".join(out)


# ---------------------------------------------------------------------------
# plots


def plot_all(results: Sequence[Result], out_dir: Path) -> list[Path]:
    """Write the cost-vs-size, lateness and million-fill probe plots as PNG; return the files written.

    Raises ImportError when matplotlib is missing (the caller notes and goes on).
    """
    import matplotlib

    matplotlib.use("Agg")
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    cost = [r for r in results if r.workload == "cost" and r.status == "ok"]
    if cost:
        written.append(_plot_cost(cost, out_dir / "cost_vs_size.png"))
    late = [r for r in results if r.workload == "lateness" and r.status == "ok"]
    if late:
        written.append(_plot_lateness(late, out_dir / "lateness.png"))
    million = [
        r for r in results if r.workload == "million" and r.status == "ok" and r.extra.get("probe_at_s")
    ]
    if million:
        written.append(_plot_probe(million, out_dir / "million_probe.png"))
    return written


def _plot_cost(results: Sequence[Result], path: Path) -> Path:
    import matplotlib.pyplot as plt

    metrics = [
        ("schedule_us", "schedule call (µs, median)"),
        ("cancel_us", "cancel call (µs, median)"),
        ("cancel_by_id_us", "cancel by id (µs, median)"),
        ("bytes_per_task", "memory per pending task (bytes)"),
    ]
    fig, axes = plt.subplots(1, 4, figsize=(20, 4.5))
    peers = list(dict.fromkeys(r.peer for r in results))
    for ax, (metric, title) in zip(axes, metrics, strict=True):
        for peer in peers:
            pts = sorted(
                (r.params["n"], r.metrics[metric]) for r in results if r.peer == peer and metric in r.metrics
            )
            if pts:
                xs, ys = zip(*pts, strict=True)
                ax.plot(xs, ys, marker="o", label=peer)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("tasks already pending (N)")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), frameon=False)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _plot_lateness(results: Sequence[Result], path: Path) -> Path:
    import matplotlib.pyplot as plt

    cases = list(dict.fromkeys(r.case for r in results))
    fig, axes = plt.subplots(1, len(cases), figsize=(7 * len(cases), 4.5), squeeze=False)
    floor = 0.01  # ms; earlier-than-due and sub-10 µs starts are drawn here
    for ax, case in zip(axes[0], cases, strict=True):
        for r in results:
            if r.case != case or not r.extra.get("late_ms"):
                continue
            xs = sorted(max(floor, v) for v in r.extra["late_ms"])
            ys = [(i + 1) / len(xs) for i in range(len(xs))]
            ax.step(xs, ys, where="post", label=r.peer)
        ax.set_xscale("log")
        ax.set_xlabel("start minus due time (ms, log)")
        ax.set_ylabel("fraction of tasks")
        ax.set_title(f"lateness CDF, {case}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _plot_probe(results: Sequence[Result], path: Path) -> Path:
    """Probe lateness over time while one thread fills the schedule, one panel per peer."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(results), 1, figsize=(11, 2.6 * len(results)), sharex=True, squeeze=False)
    floor = 0.01  # ms; earlier-than-due and sub-10 µs starts are drawn here
    top = max(max(r.extra["probe_late_ms"]) for r in results)
    for ax, r in zip(axes[:, 0], results, strict=True):
        xs = r.extra["probe_at_s"]
        ys = [max(floor, v) for v in r.extra["probe_late_ms"]]
        ax.plot(xs, ys, linewidth=0.7, marker=".", markersize=2)
        ax.set_yscale("log")
        ax.set_ylim(floor, max(1.0, top) * 2)
        filled = r.metrics.get("fill_s", math.nan)
        ax.set_title(
            f"{r.peer} ({r.case}): {r.params['n']:,} tasks held after {filled:.1f} s; "
            f"probe late p99 {r.metrics.get('p99_ms', math.nan):.0f} ms, "
            f"max {r.metrics.get('max_ms', math.nan):.0f} ms",
            fontsize=10,
        )
        ax.set_ylabel("late (ms, log)")
        ax.grid(True, which="both", alpha=0.3)
    axes[-1, 0].set_xlabel("seconds since the fill began (probes due every 10 ms)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
