"""Where the HGEMM headroom is on a card: each shape's time against the floor the card could not beat, by GFLOP band.

    python benchmarks/experiments/headroom.py BENCH.csv --card h100 [--step-us 1.3] [--md OUT.md]

BENCH.csv is `kernelrl bench --csv` output with the library (`kernelrl`) and the cuBLAS baselines measured in one run
(one mode, one card). A shape's floor is `step + max(2MNK / peak FLOP/s, 2(MK + KN + MN) bytes / HBM bytes/s)`:
the dense fp16 tensor peak and the HBM bandwidth of the card's datasheet (`CARDS`), and `step`, a trivial kernel's
step in a replayed CUDA graph on that card (1.3 us measured on the H200; pass the card's own with --step-us). Ratios
are geomeans over a band's shapes; "cuBLAS" is the best of its NN and TN calls per shape; "own kernel" counts the
shapes whose library dispatch is a kernel of ours (not cuBLASLt's stored algorithm or the yardstick)."""

from __future__ import annotations

import argparse
import csv
import math
import sys
from collections import defaultdict
from pathlib import Path

# dense fp16/bf16 tensor FLOP/s and HBM bytes/s (SXM datasheets)
CARDS = {"h100": (989e12, 3.35e12), "h200": (989e12, 4.8e12)}
BANDS = [(0, 0.01), (0.01, 0.1), (0.1, 1), (1, 10), (10, 100), (100, math.inf)]  # GFLOP
FALLBACK_DISPATCH = ("cuBLASLt", "torch.matmul", "F.linear")


def floor_us(m: int, n: int, k: int, peak: float, hbm: float, step_us: float) -> float:
    return step_us + 1e6 * max(2 * m * n * k / peak, 2 * (m * k + k * n + m * n) / hbm)


def band_name(lo: float, hi: float) -> str:
    return f">= {lo:g}" if hi == math.inf else (f"< {hi:g}" if lo == 0 else f"{lo:g}-{hi:g}")


def read(path: Path) -> dict[tuple, dict[str, dict]]:
    """(m, n, k) -> method -> its verified row (a row that failed verification is no time)."""
    shapes: dict[tuple, dict[str, dict]] = defaultdict(dict)
    for row in csv.DictReader(open(path)):
        if row.get("verified") in ("1", "True", "true") and row.get("time_us_median"):
            shapes[(int(row["m"]), int(row["n"]), int(row["k"]))][row["method"]] = row
    return shapes


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else math.nan


def table(shapes: dict[tuple, dict[str, dict]], peak: float, hbm: float, step_us: float) -> list[dict]:
    """One row per GFLOP band and one for all shapes that have the library, cuBLAS and cuBLASLt autotuning."""
    per_band: dict[str, list[tuple]] = defaultdict(list)
    for (m, n, k), methods in shapes.items():
        cublas = [float(methods[x]["time_us_median"]) for x in ("cublas_nn", "cublas_tn") if x in methods]
        auto = [float(methods[x]["time_us_median"]) for x in ("cublaslt_auto_nn", "cublaslt_auto_tn") if x in methods]
        if "kernelrl" not in methods or not cublas or not auto:
            continue
        lib = float(methods["kernelrl"]["time_us_median"])
        own = not methods["kernelrl"].get("dispatch", "").startswith(FALLBACK_DISPATCH)
        sample = (lib, min(cublas), min(auto), floor_us(m, n, k, peak, hbm, step_us), own)
        gflop = 2 * m * n * k / 1e9
        band = next(band_name(lo, hi) for lo, hi in BANDS if lo <= gflop < hi)
        per_band[band].append(sample)
        per_band["all"].append(sample)
    rows = []
    for band in [band_name(lo, hi) for lo, hi in BANDS] + ["all"]:
        samples = per_band.get(band)
        if not samples:
            continue
        rows.append({"band": band, "shapes": len(samples),
                     "library/floor": geomean([s[0] / s[3] for s in samples]),
                     "cublas/floor": geomean([s[1] / s[3] for s in samples]),
                     "library vs cublas": geomean([s[1] / s[0] for s in samples]),
                     "library vs cublaslt-auto": geomean([s[2] / s[0] for s in samples]),
                     "own kernel": sum(s[4] for s in samples)})
    return rows


def markdown(rows: list[dict]) -> str:
    lines = ["| GFLOP | shapes | library / floor | cuBLAS / floor | library vs cuBLAS | library vs cuBLASLt-auto | "
             "own kernel |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['band']} | {r['shapes']} | {r['library/floor']:.2f} | {r['cublas/floor']:.2f} | "
                     f"{r['library vs cublas']:.3f} | {r['library vs cublaslt-auto']:.3f} | {r['own kernel']} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", type=Path)
    ap.add_argument("--card", choices=sorted(CARDS), required=True, help="the card that measured the CSV")
    ap.add_argument("--step-us", type=float, default=1.3, help="a trivial kernel's step on that card (us)")
    ap.add_argument("--md", type=Path, default=None, help="also write the table here")
    args = ap.parse_args(argv)
    if not args.csv.is_file():
        print(f"{args.csv}: no such file; pass a `kernelrl bench --csv` output", file=sys.stderr)
        return 2
    rows = table(read(args.csv), *CARDS[args.card], args.step_us)
    if not rows:
        print(f"{args.csv}: no shape with kernelrl, cuBLAS and cuBLASLt autotuning rows all verified", file=sys.stderr)
        return 2
    text = markdown(rows)
    print(text, end="")
    if args.md:
        args.md.write_text(f"`python benchmarks/experiments/headroom.py {args.csv} --card {args.card} "
                           f"--step-us {args.step_us}`\n\n{text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
