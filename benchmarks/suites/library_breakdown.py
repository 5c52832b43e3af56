"""Where a tuned library sends each shape, and whether its tuning-time choices held when it was measured again.

    python benchmarks/suites/library_breakdown.py RESULTS.csv MANIFEST.json
    (e.g. benchmarks/results/h200/tuned_paper_device.csv benchmarks/results/h200/tuned_library/manifest.json)

RESULTS.csv: a `kernelrl bench --library` run in device mode (the method `kernelrl` beside the seven baselines).
Prints two markdown tables:
  1. per dispatch (tuned kernel by family, cuBLASLt with the stored algorithm, torch.matmul): shapes per size class
     and the geomean of baseline time / library time against best-of-layout cuBLAS and autotuned cuBLASLt;
  2. the shapes that use a kernel, bucketed by the kernel's gain over its fallback at tuning time (manifest), with
     the gain the bench measured against the faster of torch.matmul and cuBLASLt NN (the winner's curse)."""

import argparse
import collections
import csv
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from kernelrl.harness.stats import geomean  # noqa: E402
from kernelrl.workloads.hgemm import size_class  # noqa: E402

BUCKETS = [(1.0, 1.01), (1.01, 1.02), (1.02, 1.03), (1.03, 1.05), (1.05, 1.1), (1.1, math.inf)]


def times_by_shape(path: str) -> tuple[dict, dict]:
    times, dispatch = collections.defaultdict(dict), {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["mode"] != "device" or r["verified"] not in ("1", "True") or not r["time_us_median"]:
                continue
            key = (int(r["m"]), int(r["n"]), int(r["k"]))
            times[key][r["method"]] = float(r["time_us_median"])
            if r["method"] == "kernelrl":
                dispatch[key] = r["dispatch"]
    return times, dispatch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("manifest")
    args = ap.parse_args()
    times, dispatch = times_by_shape(args.results)
    manifest = json.loads(Path(args.manifest).read_text())
    family = {name: k.get("family") for name, k in manifest["kernels"].items()}

    groups = collections.defaultdict(list)
    for key, where in dispatch.items():
        t = times[key]
        ours = t["kernelrl"]
        vs_cublas = min(t["cublas_nn"], t["cublas_tn"]) / ours
        vs_lt = min(t["cublaslt_auto_nn"], t["cublaslt_auto_tn"]) / ours
        label = f"kernel: {family[where]}" if where in family else where
        groups[label].append((vs_cublas, vs_lt, size_class(2 * key[0] * key[1] * key[2])))
    print("| dispatch | shapes | small/medium/large | vs cuBLAS-best | wins | vs cuBLASLt-auto-best | wins |")
    print("|---|---:|---|---:|---:|---:|---:|")
    for label, rows in sorted(groups.items()):
        c = collections.Counter(cls for *_, cls in rows)
        print(f"| {label} | {len(rows)} | {c['small']}/{c['medium']}/{c['large']} "
              f"| {geomean([a for a, _, _ in rows]):.3f} | {sum(a > 1 for a, _, _ in rows)} "
              f"| {geomean([b for _, b, _ in rows]):.3f} | {sum(b > 1 for _, b, _ in rows)} |")

    pairs = []
    for e in manifest["shapes"].values():
        key = (e["m"], e["n"], e["k"])
        if e["dispatch"] != "kernel" or key not in times:
            continue
        fallback_us = (e.get("fallback") or {}).get("time_us") or e["measured_us"].get("torch")
        t = times[key]
        pairs.append((fallback_us / e["time_us"], min(t["torch"], t["cublaslt_auto_nn"]) / t["kernelrl"]))
    print()
    print("| gain at tuning time | shapes | gain measured by the bench (geomean) | still faster |")
    print("|---|---:|---:|---:|")
    for lo, hi in BUCKETS:
        measured = [b for a, b in pairs if lo <= a < hi]
        if measured:
            print(f"| [{lo}, {hi}) | {len(measured)} | {geomean(measured):.3f} | {sum(b > 1 for b in measured)} |")


if __name__ == "__main__":
    main()
