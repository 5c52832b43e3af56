"""Where the wgmma family's time goes against the faster fallback, from a tuned library's confirmation run (no GPU):
per shape whose confirmed best candidate is a wgmma point, its time against the faster of torch.matmul and autotuned
cuBLASLt measured in the same run (`benchmarks/suites/confirmed_vs_fallback.py` writes the CSV).

Two tables: by the fallback's time, the gap in µs and as a ratio (a constant µs gap on short calls is a fixed
per-call cost, a constant ratio on long ones is main-loop throughput); and by the best point's wave efficiency as
the cost model counts it (units / (waves × 132 SMs)), to see whether wave quantization explains the gap.

    python benchmarks/experiments/gap_regimes.py benchmarks/results/h200/tuned_wgmma/confirmed_vs_fallback.csv \
        [--out FILE.md]
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from kernelrl.harness.stats import geomean  # noqa: E402
from kernelrl.space import Variant  # noqa: E402
from kernelrl.space.learned import variants_by_name  # noqa: E402
from kernelrl.space.model import waves  # noqa: E402
from kernelrl.workloads.hgemm import GemmProblem  # noqa: E402

TIME_BUCKETS = [(10, "<10"), (30, "10-30"), (100, "30-100"), (300, "100-300"), (math.inf, ">=300")]
WAVE_BUCKETS = [(0.6, "<0.6"), (0.8, "0.6-0.8"), (0.95, "0.8-0.95"), (math.inf, ">=0.95")]


def bucket(value: float, buckets: list[tuple[float, str]]) -> str:
    return next(label for limit, label in buckets if value < limit)


def tables(rows: list[dict], names: dict[str, Variant]) -> list[str]:
    """The two tables, for the rows whose kernel `names` (procedural name -> point) knows as a wgmma point."""
    by_time: dict[str, list[tuple[float, float]]] = defaultdict(list)
    by_wave: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in rows:
        v = names.get(r["kernel"])
        if v is None or v.family != "wgmma":
            continue
        kernel_us, fallback_us = float(r["kernel_us"]), float(r["fallback_us"])
        by_time[bucket(fallback_us, TIME_BUCKETS)].append((kernel_us - fallback_us, kernel_us / fallback_us))
        m, n, k = (int(x) for x in r["shape"].split(":")[0].split("x"))
        _, _, efficiency = waves(v, GemmProblem(m, n, k, v.acc))
        by_wave[(r["class"], bucket(efficiency, WAVE_BUCKETS))].append(fallback_us / kernel_us)
    lines = ["| fallback time (µs) | shapes | kernel - fallback, median (µs) | p25 | p75 | kernel / fallback, median |",
             "|---|---:|---:|---:|---:|---:|"]
    for _, label in TIME_BUCKETS:
        pairs = by_time.get(label)
        if not pairs:
            continue
        gaps = sorted(g for g, _ in pairs)
        q = statistics.quantiles(gaps, n=4) if len(gaps) > 1 else [gaps[0]] * 3
        lines.append(f"| {label} | {len(pairs)} | {statistics.median(gaps):.2f} | {q[0]:.2f} | {q[2]:.2f} | "
                     f"{statistics.median(r for _, r in pairs):.3f} |")
    lines += ["", "| class | wave efficiency of the best point | shapes | fallback / best point (geomean) |",
              "|---|---|---:|---:|"]
    for (cls, label), ratios in sorted(by_wave.items()):
        lines.append(f"| {cls} | {label} | {len(ratios)} | {geomean(ratios):.3f} |")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("--out")
    args = ap.parse_args()
    rows = list(csv.DictReader(open(args.csv)))
    names = {**variants_by_name("fp32"), **variants_by_name("fp16")}
    lines = tables(rows, names)
    if len(lines) <= 5:
        print(f"{args.csv}: no shape's confirmed best candidate is a wgmma point")
        return 1
    text = "\n".join([f"`python benchmarks/experiments/gap_regimes.py {args.csv}`", "", *lines, ""])
    if args.out:
        Path(args.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
