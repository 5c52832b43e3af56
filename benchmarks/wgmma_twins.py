"""Points of the wgmma family beside their twins (the same point with one knob changed), per shape, from a
`kernelrl bench` CSV of `benchmarks/h200_wgmma.sh` (device mode, verified rows only):

  fixup     `..._fx` (split-K summed in-kernel by the last slice) against the same point with the reduce kernel;
  mainpdl   `..._pdlmain` (the main kernel launched programmatically) against the same point launched plainly;
  f16split  fp16-accumulator split-K points (`_kS_`, S > 1) against the same point with split_k 1;
  widths    tile widths off the 64-column box (BN % 64 != 0) against the same point at the multiples of 64 around
            them (the faster of the two).

Prints per pair and shape the twin's time over the point's (above 1: the point is faster), the geomean per point,
and per shape the best point of each side against cuBLASLt autotuning.

    python benchmarks/wgmma_twins.py CSV {fixup,mainpdl,f16split,widths} [--out FILE.md]
"""

from __future__ import annotations

import argparse
import csv
import math
import re
from collections import defaultdict

NAME = re.compile(r"^(wgmma_\w+?_(?:kn|nk))_(\d+)x(\d+)x64_(s\d+_r\d+)_k(\d+)_(co|pp)(.*)$")


def read_times(path: str) -> dict[tuple[int, int, int], dict[str, float]]:
    times: dict[tuple[int, int, int], dict[str, float]] = defaultdict(dict)
    for r in csv.DictReader(open(path)):
        if r["mode"] == "device" and r["verified"] in ("1", "True"):
            times[(int(r["m"]), int(r["n"]), int(r["k"]))][r["method"]] = float(r["time_us_median"])
    return times


def twins_of(method: str, kind: str) -> list[str]:
    """The twin names a point is compared with (empty: the method is not a point of this kind)."""
    found = NAME.match(method)
    if not found:
        return []
    head, bm, bn, stages, split, schedule, tail = found.groups()
    bm, bn, split = int(bm), int(bn), int(split)
    if kind == "fixup":
        return [method.removesuffix("_fx")] if tail.endswith("_fx") else []
    if kind == "mainpdl":
        return [method.replace("_pdlmain", "")] if "_pdlmain" in tail else []
    if kind == "f16split":
        return [f"{head}_{bm}x{bn}x64_{stages}_k1_{schedule}{tail}"] if head.startswith("wgmma_f16") and split > 1 else []
    if bn % 64 == 0:
        return []
    return [f"{head}_{bm}x{w}x64_{stages}_k{split}_{schedule}{tail}" for w in (bn // 64 * 64, bn // 64 * 64 + 64)
            if 0 < w <= 256]


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def report(times: dict, kind: str) -> list[str]:
    lines = [f"| point | twin | shapes | twin time / point time (geomean) | point faster on |", "|---|---|---:|---:|---:|"]
    per_point: dict[tuple[str, str], list[float]] = defaultdict(list)
    for shape, methods in sorted(times.items()):
        for method, t in methods.items():
            present = [(methods[w], w) for w in twins_of(method, kind) if w in methods]
            if present:
                twin_t, twin = min(present)
                per_point[(method, twin if len(present) == 1 else "faster of " + " / ".join(
                    w for w in twins_of(method, kind) if w in methods))].append(twin_t / t)
    everything = []
    for (point, twin), ratios in sorted(per_point.items()):
        everything += ratios
        lines.append(f"| {point} | {twin} | {len(ratios)} | {geomean(ratios):.3f} | {sum(r > 1 for r in ratios)} |")
    lines.append(f"| all pairs | | {len(everything)} | {geomean(everything):.3f} | {sum(r > 1 for r in everything)} |")
    lines += ["", "| shape | cuBLASLt auto (µs) | best point (µs) | best twin (µs) | cuBLASLt / best point |",
              "|---|---:|---:|---:|---:|"]
    for shape, methods in sorted(times.items()):
        points = {m: t for m, t in methods.items() if twins_of(m, kind)}
        twins = {w: methods[w] for m in points for w in twins_of(m, kind) if w in methods}
        lt = methods.get("cublaslt_auto_nn")
        if points and lt:
            best = min(points.values())
            best_twin = f"{min(twins.values()):.1f}" if twins else "-"
            lines.append(f"| {'x'.join(map(str, shape))} | {lt:.1f} | {best:.1f} | {best_twin} | {lt / best:.3f} |")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("kind", choices=["fixup", "mainpdl", "f16split", "widths"])
    ap.add_argument("--out")
    args = ap.parse_args()
    times = read_times(args.csv)
    lines = report(times, args.kind)
    if len(lines) <= 4:
        print(f"{args.csv}: no {args.kind} point measured beside a twin")
        return 1
    text = "\n".join([f"# {args.kind}: points beside their twins", "",
                      f"`python benchmarks/wgmma_twins.py {args.csv} {args.kind}`", "", *lines, ""])
    if args.out:
        open(args.out, "w").write(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
