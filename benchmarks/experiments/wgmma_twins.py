"""Points of the wgmma family beside their twins (the same point with one knob changed), per shape, from a
`kernelrl bench` CSV of `benchmarks/device/wgmma.sh` (device mode, verified rows only):

  fixup     `..._fx` (split-K summed in-kernel by the last slice) against the same point with the reduce kernel;
  mainpdl   `..._pdlmain` (the main kernel launched programmatically) against the same point launched plainly;
  f16split  fp16-accumulator split-K points (`_kS_`, S > 1) against the same point with split_k 1;
  widths    tile widths off the 64-column box (BN % 64 != 0) against the same point at the multiples of 64 around
            them (the faster of the two).

Prints per pair and shape the twin's time over the point's (above 1: the point is faster), the geomean per point,
and per shape the best point of each side against cuBLASLt autotuning.

    python benchmarks/experiments/wgmma_twins.py CSV {fixup,mainpdl,f16split,widths} [--out FILE.md]
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from kernelrl.harness.stats import geomean  # noqa: E402
from kernelrl.space import Variant  # noqa: E402
from kernelrl.space.learned import variants_by_name  # noqa: E402

KINDS = ("fixup", "mainpdl", "f16split", "widths")


def read_times(path: str) -> dict[tuple[int, int, int], dict[str, float]]:
    times: dict[tuple[int, int, int], dict[str, float]] = defaultdict(dict)
    for r in csv.DictReader(open(path)):
        if r["mode"] == "device" and r["verified"] in ("1", "True"):
            times[(int(r["m"]), int(r["n"]), int(r["k"]))][r["method"]] = float(r["time_us_median"])
    return times


def twins_of(point: Variant | None, kind: str) -> list[Variant]:
    """The points a wgmma point is compared with: itself with one knob changed (empty: not a point of this kind)."""
    if point is None or point.family != "wgmma":
        return []
    p = point.p

    def moved(**knobs) -> Variant:
        return Variant.of("wgmma", point.acc, **{**p, **knobs})

    if kind == "fixup":
        return [moved(split_reduce="workspace")] if p["split_reduce"] == "fixup" else []
    if kind == "mainpdl":
        return [moved(main_pdl=False)] if p["main_pdl"] else []
    if kind == "f16split":
        return [moved(split_k=1)] if point.acc == "fp16" and p["split_k"] > 1 else []
    if p["BN"] % 64 == 0:
        return []
    below = p["BN"] // 64 * 64
    return [moved(BN=width) for width in (below, below + 64) if width <= 256]


def report(times: dict, kind: str, names: dict[str, Variant]) -> list[str]:
    """The tables, for the methods of `times` that `names` (procedural name -> point) knows."""
    def twins(method: str) -> list[str]:
        return [t.name for t in twins_of(names.get(method), kind)]

    lines = ["| point | twin | shapes | twin time / point time (geomean) | point faster on |",
             "|---|---|---:|---:|---:|"]
    per_point: dict[tuple[str, str], list[float]] = defaultdict(list)
    for _shape, methods in sorted(times.items()):
        for method, t in methods.items():
            present = [w for w in twins(method) if w in methods]
            if present:
                label = present[0] if len(present) == 1 else "faster of " + " / ".join(present)
                per_point[(method, label)].append(min(methods[w] for w in present) / t)
    everything = []
    for (point, twin), ratios in sorted(per_point.items()):
        everything += ratios
        lines.append(f"| {point} | {twin} | {len(ratios)} | {geomean(ratios):.3f} | {sum(r > 1 for r in ratios)} |")
    lines.append(f"| all pairs | | {len(everything)} | {geomean(everything):.3f} | {sum(r > 1 for r in everything)} |")
    lines += ["", "| shape | cuBLASLt auto (µs) | best point (µs) | best twin (µs) | cuBLASLt / best point |",
              "|---|---:|---:|---:|---:|"]
    for shape, methods in sorted(times.items()):
        points = {m: t for m, t in methods.items() if twins(m)}
        twin_times = [methods[w] for m in points for w in twins(m) if w in methods]
        lt = methods.get("cublaslt_auto_nn")
        if points and lt:
            best = min(points.values())
            best_twin = f"{min(twin_times):.1f}" if twin_times else "-"
            lines.append(f"| {'x'.join(map(str, shape))} | {lt:.1f} | {best:.1f} | {best_twin} | {lt / best:.3f} |")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("kind", choices=KINDS)
    ap.add_argument("--out")
    args = ap.parse_args()
    times = read_times(args.csv)
    names = {**variants_by_name("fp32"), **variants_by_name("fp16")}
    lines = report(times, args.kind, names)
    if len(lines) <= 4:
        print(f"{args.csv}: no {args.kind} point measured beside a twin")
        return 1
    text = "\n".join([f"# {args.kind}: points beside their twins", "",
                      f"`python benchmarks/experiments/wgmma_twins.py {args.csv} {args.kind}`", "", *lines, ""])
    if args.out:
        open(args.out, "w").write(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
