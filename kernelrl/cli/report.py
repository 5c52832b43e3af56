"""`kernelrl summarize` (speedup tables from result CSVs) and `kernelrl report` (one HTML page); print_summary is
also the table `kernelrl bench` ends with."""

from __future__ import annotations

import sys
from pathlib import Path

from rich.table import Table

from kernelrl.cli.ui import console
from kernelrl.errors import BenchError
from kernelrl.report import ReportError, build_report
from kernelrl.results import read_csv, summarize, summary_markdown


def cmd_summarize(args) -> int:
    rows = []
    for path in args.csv:
        if not Path(path).is_file():
            raise BenchError(f"{path}: no such CSV; pass files written by kernelrl bench --csv")
        rows += read_csv(path)
    summary = summarize(rows, baselines_vs_torch=args.vs_torch)
    if args.markdown:
        print(summary_markdown(summary))
    else:
        print_summary(summary, every_baseline=True)
    return 0


def cmd_report(args) -> int:
    try:
        info = build_report(args.results, args.output, manifest=args.manifest, method=args.method)
    except ReportError as exc:
        print(f"kernelrl: {exc}", file=sys.stderr)
        return 2
    console.print(f"report {info['path']}: {info['bytes'] / 1e6:.2f} MB, {info['maps']} maps, "
                  f"{info['seconds']:.1f} s", markup=False, highlight=False)
    return 0


def print_summary(summary, every_baseline: bool = False):
    table = Table(title="speedup (baseline time / method time), all shapes")
    for col in ("mode", "method", "vs", "shapes", "geomean", "mean", "win rate", "small", "medium", "large"):
        table.add_column(col, justify="right" if col not in ("mode", "method", "vs") else "left")
    by_key = {(s["mode"], s["method"], s["baseline"], s["class"]): s for s in summary}
    shown = ("torch", "cublas_best", "cublaslt_heur_best", "cublaslt_auto_best")
    for s in summary:
        if s["class"] != "all" or not every_baseline and s["baseline"] not in shown:
            continue
        cls = [by_key.get((s["mode"], s["method"], s["baseline"], c)) for c in ("small", "medium", "large")]
        table.add_row(s["mode"], s["method"], s["baseline"], str(s["shapes"]), f"{s['geomean']:.3f}",
                      f"{s['mean']:.3f}", f"{100 * s['win_rate']:.0f} %",
                      *[f"{c['geomean']:.2f}" if c else "—" for c in cls])
    console.print(table)
