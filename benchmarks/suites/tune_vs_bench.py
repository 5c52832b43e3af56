"""How a library's tuning-time gains held up when the library was measured afterwards: per shape that dispatches a
tuned kernel, the gain over its fallback in the screening run, in the confirmation run (the one that picked), and in
a later `kernelrl bench --library` run (the `kernelrl` row against the fallback's own baseline row, same run).
Gains under 1 % at screening time re-measure as often slower as faster (the winner's curse); this says whether the
confirmation round removed that.

    python benchmarks/suites/tune_vs_bench.py LIB/manifest.json BENCH.csv OUT.csv [--mode device]
"""

from __future__ import annotations

import argparse
import csv
import json
import math

FALLBACK_ROW = {"torch": "torch", "cublaslt_auto_nn": "cublaslt_auto_nn", "cublaslt_auto_tn": "cublaslt_auto_tn"}


def rows(manifest: dict, bench: list[dict], mode: str) -> list[dict]:
    times: dict[tuple, float] = {}
    for r in bench:
        if r.get("mode", mode) == mode and str(r.get("verified")) in ("1", "True") and r.get("time_us_median"):
            key = (int(r["m"]), int(r["n"]), int(r["k"]), r.get("dtype", "fp16"), r.get("layout", "nn"), r["method"])
            times[key] = float(r["time_us_median"])
    out = []
    for entry in manifest["shapes"].values():
        if entry.get("dispatch") != "kernel":
            continue
        shape = (entry["m"], entry["n"], entry["k"], entry.get("dtype", "fp16"), entry.get("layout", "nn"))
        fallback = (entry.get("fallback") or {}).get("method", "torch")
        confirmed_fallback = (entry.get("fallback") or {}).get("time_us") or entry.get("yardstick_us")
        screening = entry.get("screening") or {}
        ours, theirs = times.get((*shape, "kernelrl")), times.get((*shape, FALLBACK_ROW.get(fallback, fallback)))
        out.append({
            "m": shape[0], "n": shape[1], "k": shape[2], "dtype": shape[3], "layout": shape[4],
            "kernel": entry["kernel"], "fallback": fallback,
            "screening_gain": _ratio(screening.get("fallback_us"), screening.get("time_us")),
            "confirmed_gain": _ratio(confirmed_fallback, entry.get("time_us")),
            "bench_gain": _ratio(theirs, ours),
        })
    return out


def _ratio(a, b):
    return round(a / b, 4) if a and b else ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("manifest")
    ap.add_argument("bench")
    ap.add_argument("out")
    ap.add_argument("--mode", default="device")
    args = ap.parse_args()
    table = rows(json.load(open(args.manifest)), list(csv.DictReader(open(args.bench))), args.mode)
    if not table:
        print(f"{args.manifest}: no shape dispatches a tuned kernel")
        return 1
    with open(args.out, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(table[0]))
        writer.writeheader()
        writer.writerows(table)
    benched = [r for r in table if r["bench_gain"] != ""]
    if benched:
        geo = math.exp(sum(math.log(r["bench_gain"]) for r in benched) / len(benched))
        print(f"{len(table)} kernel shapes, {len(benched)} benched: bench gain over the fallback geomean {geo:.3f}, "
              f"{sum(r['bench_gain'] > 1 for r in benched)} faster; {args.out}")
    else:
        print(f"{len(table)} kernel shapes, none in {args.bench}; {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
