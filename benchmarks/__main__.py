"""Command line: ``python -m benchmarks [--quick] [--only NAME] [--out DIR]``.

Prints the readable table on stdout at the end; progress goes to stderr.
Writes each result to ``results.jsonl`` in the output directory as soon as
it is measured (one JSON object a line: a long run that dies keeps what it
measured), then ``results.json``, ``table.txt`` and ``table.md``, and PNG
plots to ``docs/perf`` (full runs) or ``OUT/plots`` (``--quick``, so CI
never rewrites the docs).

Exit status is 1 when any workload produced no result at all, or when any
peer failed (including the library under test not being importable); a peer
skipped for a missing optional dependency or an infeasible size is fine.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks import report
from benchmarks.adapters import ADAPTERS, REPO_ROOT, Adapter
from benchmarks.results import Result
from benchmarks.runner import log, run_case
from benchmarks.workloads import WORKLOADS, Config, build_cases

PACKAGE_DIR = Path(__file__).resolve().parent


def _names(values: list[str] | None, allowed: list[str], what: str) -> list[str] | None:
    if not values:
        return None
    names = [n.strip() for v in values for n in v.split(",") if n.strip()]
    unknown = [n for n in names if n not in allowed]
    if unknown:
        raise SystemExit(f"unknown {what}: {', '.join(unknown)} (choose from {', '.join(allowed)})")
    return names


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options."""
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="1 repeat, small sizes (CI check mode)")
    p.add_argument(
        "--only",
        action="append",
        metavar="NAME",
        help=f"run only these workloads (repeatable or comma-separated): {', '.join(WORKLOADS)}",
    )
    p.add_argument(
        "--peers",
        action="append",
        metavar="NAME",
        help=f"run only these peers (default all): {', '.join(ADAPTERS)}",
    )
    p.add_argument("--repeats", type=int, help="repeats per case (default 3; quick 1)")
    p.add_argument(
        "--out",
        type=Path,
        default=PACKAGE_DIR / "results",
        help="directory for results.json and tables (default benchmarks/results)",
    )
    p.add_argument("--plots", type=Path, help="directory for PNG plots (default docs/perf)")
    p.add_argument("--no-plots", action="store_true", help="do not draw plots")
    p.add_argument(
        "--replot",
        type=Path,
        metavar="RESULTS_JSON",
        help="run nothing: redraw tables and plots from a saved results.json",
    )
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run the selected workloads; return the process exit status."""
    args = parse_args(argv)
    only = _names(args.only, list(WORKLOADS), "workload")
    peer_names = _names(args.peers, list(ADAPTERS), "peer") or list(ADAPTERS)
    peers: list[type[Adapter]] = [ADAPTERS[n] for n in peer_names]
    cfg = Config.for_mode(args.quick, args.repeats)
    command = "python -m benchmarks" + "".join(
        " " + shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv)
    )
    meta: dict[str, Any] = {
        "command": command,
        "config": cfg.__dict__,
        "machine": report.machine_info(),
    }

    for cls in peers:
        reason = cls.unavailable()
        if reason:
            log(f"note: peer {cls.name} unavailable: {reason}")

    started = time.monotonic()
    failed_workloads: list[str] = []
    if args.replot is not None:
        meta, results = report.read_json(args.replot)
    else:
        args.out.mkdir(parents=True, exist_ok=True)
        results, failed_workloads = run_all(cfg, only, peers, args.out / "results.jsonl")
        meta["elapsed_s"] = round(time.monotonic() - started, 1)
    out: Path = args.out
    table = write_outputs(args, meta, results)
    print()
    print(table)
    return summarize(results, failed_workloads, f"done in {meta.get('elapsed_s', 0)} s; results in {out}")


def run_all(
    cfg: Config, only: list[str] | None, peers: list[type[Adapter]], lines: Path
) -> tuple[list[Result], list[str]]:
    """Run the selected workloads, writing each result to ``lines`` at once; results, workloads without."""
    results: list[Result] = []
    failed_workloads: list[str] = []
    with lines.open("w", encoding="utf-8") as jsonl:

        def emit(res: Result) -> None:
            jsonl.write(json.dumps(res.to_json(), ensure_ascii=False) + "\n")
            jsonl.flush()

        for workload, cases in build_cases(cfg, only).items():
            log(f"== {workload}")
            produced: list[Result] = []
            for case in cases:
                produced += run_case(case, peers, emit)
            results += produced
            if not any(r.status == "ok" for r in produced):
                failed_workloads.append(workload)
    return results, failed_workloads


def write_outputs(args: argparse.Namespace, meta: dict[str, Any], results: list[Result]) -> str:
    """Write results.json (unless replotting), the tables and the plots; return the text table."""
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    if args.replot is None:
        report.write_json(out / "results.json", meta, results)
    table = report.text_table(results)
    (out / "table.txt").write_text(table + "\n")
    (out / "table.md").write_text(report.markdown_table(results) + "\n")
    if not args.no_plots:
        plot_dir = args.plots or (out / "plots" if args.quick else REPO_ROOT / "docs" / "perf")
        try:
            for path in report.plot_all(results, plot_dir):
                log(f"plot: {path}")
        except ImportError as exc:
            log(f"note: plots skipped, matplotlib missing ({exc})")
    return table


def summarize(results: list[Result], failed_workloads: list[str], done: str) -> int:
    """Log failures and leaks; the exit status (1 if anything failed)."""
    failures = [r for r in results if r.status == "failed"]
    for r in failures:
        log(f"FAILED: {r.workload} {r.case} {r.peer}: {r.note}")
    for name in failed_workloads:
        log(f"FAILED: workload {name} produced no result")
    leaks = sorted({t for r in results for t in r.leaked_threads})
    if leaks:
        log(f"WARNING: threads outlived their scheduler's shutdown: {leaks}")
    log(done)
    return 1 if failures or failed_workloads else 0


if __name__ == "__main__":
    status = main()
    sys.stdout.flush()
    sys.stderr.flush()
    stuck = [t for t in threading.enumerate() if t.is_alive() and not t.daemon]
    if len(stuck) > 1:  # besides the main thread: a leaked non-daemon thread
        os._exit(status)  # leak already reported; do not hang at interpreter exit
    sys.exit(status)
