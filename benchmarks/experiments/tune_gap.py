"""Where the tuned kernels stand against the libraries, from a tuning run's measurements (no GPU needed).

    python benchmarks/experiments/tune_gap.py benchmarks/results/h200x2/tune_one_measurements.csv

Per size class: the fastest verified candidate of each shape against the faster of the two fallbacks measured beside
it in the same run (torch.matmul and autotuned cuBLASLt), as percentiles and a geomean. Also which family the
fastest candidate came from, and how much autotuned cuBLASLt gains over torch.matmul. A ratio below 1 is a shape where
no kernel of ours came close: the library dispatches a fallback there, and only better kernels can move it."""

import csv
import math
import sys
from collections import Counter, defaultdict

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[2]))
from kernelrl.baselines import BASELINES  # noqa: E402
from kernelrl.workloads.hgemm import SIZE_CLASSES, size_class  # noqa: E402

FALLBACKS = ("torch", "cublaslt_auto_nn")


def device_times(path: str) -> dict[tuple, dict[str, float]]:
    """(m, n, k) -> {method: median µs} of the verified device-mode rows of a measurements CSV."""
    times: dict[tuple, dict[str, float]] = defaultdict(dict)
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["mode"] == "device" and r["verified"] == "1" and r["time_us_median"]:
                times[(int(r["m"]), int(r["n"]), int(r["k"]))][r["method"]] = float(r["time_us_median"])
    return times


def fastest_candidates(path: str):
    """(m, n, k, fastest candidate, faster fallback's time / its time, times) per shape that has both fallbacks."""
    for (m, n, k), t in device_times(path).items():
        cands = {name: us for name, us in t.items() if name not in BASELINES}  # kernels only, never a library
        if cands and all(b in t for b in FALLBACKS):
            best = min(cands, key=cands.get)
            yield m, n, k, best, min(t[b] for b in FALLBACKS) / cands[best], t


def main(path: str) -> None:
    ours, lt_gain, family = defaultdict(list), defaultdict(list), defaultdict(Counter)
    for m, n, k, best, ratio, t in fastest_candidates(path):
        cls = size_class(2 * m * n * k)
        ours[cls].append(ratio)
        lt_gain[cls].append(t["torch"] / t["cublaslt_auto_nn"])
        family[cls][best.split("_f")[0]] += 1
    print("ratio = faster fallback's time / fastest candidate's time (>1: a kernel of ours wins)")
    print(f"{'class':8} {'shapes':>6} {'geomean':>8} {'p10':>6} {'p50':>6} {'p90':>6} {'wins':>5}   "
          f"cuBLASLt-auto/torch geomean   fastest candidate's family")
    for cls in SIZE_CLASSES:
        v = sorted(ours[cls])
        if not v:
            continue
        g = math.exp(sum(map(math.log, v)) / len(v))
        lt = math.exp(sum(map(math.log, lt_gain[cls])) / len(lt_gain[cls]))
        print(f"{cls:8} {len(v):>6} {g:>8.3f} {v[len(v) // 10]:>6.3f} {v[len(v) // 2]:>6.3f} "
              f"{v[9 * len(v) // 10]:>6.3f} {sum(x > 1 for x in v):>5}   {lt:>27.3f}   {dict(family[cls])}")


if __name__ == "__main__":
    main(sys.argv[1])
