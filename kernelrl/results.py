"""Long-format CSV of measurements and the paper-style summary: per baseline and mode, the geomean and mean
speedup and the win rate, overall and per size class."""

from __future__ import annotations

import csv
import math
from collections import defaultdict
from pathlib import Path

from kernelrl.baselines import BASELINES
from kernelrl.files import write_csv as write_table
from kernelrl.harness.stats import geomean
from kernelrl.workloads.hgemm import SIZE_CLASSES, size_class

CSV_COLUMNS = ["m", "n", "k", "acc", "mode", "method", "time_us_median", "time_us_p10", "time_us_p90", "tflops",
               "max_rel_err", "verified", "reason", "verdict", "cache", "qps", "samples", "gpu", "dispatch", "layout",
               "dtype"]
# Best-of-layout baselines, as the paper compares against (its 'cuBLAS-max' and friends).
COMBINED = {"cublas_best": ("cublas_nn", "cublas_tn"), "cublaslt_heur_best": ("cublaslt_heur_nn", "cublaslt_heur_tn"),
            "cublaslt_auto_best": ("cublaslt_auto_nn", "cublaslt_auto_tn")}


def write_csv(rows: list[dict], path: str | Path) -> None:
    """The measurements, sorted by shape, mode and method, written atomically."""
    write_table(path, sorted(rows, key=lambda r: (r["m"], r["n"], r["k"], r["acc"], r["mode"], r["method"])),
                CSV_COLUMNS)


def read_csv(path: str | Path) -> list[dict]:
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    for row in rows:
        for key in ("m", "n", "k"):
            row[key] = int(row[key])
        for key in ("time_us_median", "time_us_p10", "time_us_p90", "tflops", "max_rel_err"):
            row[key] = float(row[key]) if row.get(key) not in (None, "") else None
        row["verified"] = str(row.get("verified")).lower() in ("1", "true")
    return rows


def times_by_shape(rows: list[dict]) -> dict:
    """{(mode, (m, n, k, acc)): {method: time_us}} for verified measurements, with best-of-layout baselines added."""
    table: dict = defaultdict(dict)
    for r in rows:
        if r["verified"] and r["time_us_median"]:
            table[(r["mode"], (r["m"], r["n"], r["k"], r["acc"]))][r["method"]] = r["time_us_median"]
    for times in table.values():
        for combined, parts in COMBINED.items():
            present = [times[p] for p in parts if p in times]
            if len(present) == len(parts):
                times[combined] = min(present)
    return table


def summarize(rows: list[dict], baselines_vs_torch: bool = False) -> list[dict]:
    """One row per (mode, subject, baseline, size class incl. 'all'): geomean and mean speedup, win rate.

    Subjects are the candidates; with none (or with `baselines_vs_torch`), the library baselines are also
    compared with torch.matmul."""
    table = times_by_shape(rows)
    methods = {r["method"] for r in rows}
    candidates = sorted(m for m in methods if m not in BASELINES)
    pairs = [(c, b) for c in candidates for b in (*BASELINES, *COMBINED)]
    if baselines_vs_torch or not candidates:
        pairs += [(b, "torch") for b in (*BASELINES[1:], *COMBINED)]
    out = []
    modes = sorted({mode for mode, _ in table})
    for mode in modes:
        for subject, baseline in pairs:
            by_class = defaultdict(list)
            for (m, shape), times in table.items():
                if m == mode and subject in times and baseline in times:
                    speedup = times[baseline] / times[subject]
                    by_class[size_class(2 * shape[0] * shape[1] * shape[2])].append(speedup)
                    by_class["all"].append(speedup)
            for cls in ("all", *SIZE_CLASSES):
                values = by_class.get(cls, [])
                if not values:
                    continue
                out.append({"mode": mode, "method": subject, "baseline": baseline, "class": cls, "shapes": len(values),
                            "geomean": geomean(values), "mean": sum(values) / len(values),
                            "win_rate": sum(v > 1.0 for v in values) / len(values),
                            "min": min(values), "max": max(values)})
    return out


def failures(rows: list[dict]) -> list[dict]:
    return [r for r in rows if not r["verified"]]


def summary_markdown(summary: list[dict]) -> str:
    """Speedup table (baseline time / method time) with per-size-class geomeans beside the overall figures."""
    by_key = {(s["mode"], s["method"], s["baseline"], s["class"]): s for s in summary}
    lines = ["| mode | method | vs | shapes | geomean | mean | win rate | min | max | small | medium | large |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for s in summary:
        if s["class"] != "all":
            continue
        cls = [by_key.get((s["mode"], s["method"], s["baseline"], c)) for c in SIZE_CLASSES]
        lines.append(f"| {s['mode']} | {s['method']} | {s['baseline']} | {s['shapes']} | {s['geomean']:.3f} | "
                     f"{s['mean']:.3f} | {100 * s['win_rate']:.0f} % | {s['min']:.2f} | {s['max']:.2f} | "
                     + " | ".join(f"{c['geomean']:.3f}" if c else "—" for c in cls) + " |")
    return "\n".join(lines)


def is_finite(x) -> bool:
    return x is not None and math.isfinite(x)
