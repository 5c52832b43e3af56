"""How well the cost model picks among each shape's measured wgmma candidates, with and without its per-unit
overhead of a persistent CTA (UNIT_OVERHEAD_US in kernelrl/space/model.py), and the constants that a 5-fold
cross-validation by shape fits (no GPU needed).

    python benchmarks/experiments/model_unit_overhead.py benchmarks/results/h200/tuned_wgmma/tune_measurements.csv
    python benchmarks/experiments/model_unit_overhead.py tune16.db --acc fp16
    # tune16.db: xz -dc .../tuned_fp16acc/tune.db.xz > tune16.db

Per shape with at least two verified device-mode wgmma measurements: is the model's first choice the measured
fastest, and its time over the fastest's (geomean over shapes). Cooperative units cost `c` µs each, ping-pong
units `c * f`; the grid is c in {0, 0.1, ..., 0.8} and f in {0.25, 0.5, 1}."""

from __future__ import annotations

import argparse
import math
import random
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from kernelrl.space import model  # noqa: E402
from kernelrl.space.learned import samples_from  # noqa: E402

GRID = [(c, f) for c in (0.0, 0.1, 0.2, 0.3, 0.5, 0.8) for f in (0.25, 0.5, 1.0)]


def by_shape(path: str, acc: str) -> dict[tuple, list]:
    """Per shape: (schedule, units of the busiest CTA, predicted µs without the overhead, measured µs)."""
    kept, model.UNIT_OVERHEAD_US = model.UNIT_OVERHEAD_US, {}
    try:
        shapes = defaultdict(list)
        for v, p, us in samples_from(path, acc):
            if v.family != "wgmma":
                continue
            units, _, _ = model.waves(v, p)
            shapes[(p.m, p.n, p.k)].append((v.p["schedule"], model.busiest_cta_units(units), model.predict_us(v, p),
                                            us))
    finally:
        model.UNIT_OVERHEAD_US = kept
    return {k: c for k, c in shapes.items() if len(c) >= 2}


def score(shapes: dict, keys: list, c: float, f: float) -> tuple[int, float]:
    hits, logs = 0, []
    for key in keys:
        cands = shapes[key]
        best = min(cands, key=lambda x: x[3])
        first = min(cands, key=lambda x: x[2] + x[1] * c * (f if x[0] == "pingpong" else 1.0))
        hits += first is best
        logs.append(math.log(first[3] / best[3]))
    return hits, math.exp(sum(logs) / len(logs))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("measurements", help="a measurements CSV or a results/tuning database")
    ap.add_argument("--acc", default="fp32", choices=["fp32", "fp16"])
    args = ap.parse_args()
    shapes = by_shape(args.measurements, args.acc)
    keys = sorted(shapes)
    c, f = model.UNIT_OVERHEAD_US["cooperative"], model.UNIT_OVERHEAD_US["pingpong"] / \
        model.UNIT_OVERHEAD_US["cooperative"]
    print(f"{args.measurements} ({args.acc}): {len(keys)} shapes, {sum(map(len, shapes.values()))} measurements")
    for label, (cc, ff) in (("without the overhead", (0.0, 1.0)), (f"with the model's ({c} us, x{f})", (c, f))):
        hits, ratio = score(shapes, keys, cc, ff)
        print(f"  {label}: first choice the fastest on {hits} of {len(keys)}, first / fastest {ratio:.4f}")
    random.Random(0).shuffle(keys)
    folds = [keys[i::5] for i in range(5)]
    hits, logs = 0, 0.0
    for i, test in enumerate(folds):
        train = [k for j, fold in enumerate(folds) if j != i for k in fold]
        fitted = min(GRID, key=lambda g: score(shapes, train, *g)[1])
        h, ratio = score(shapes, test, *fitted)
        hits, logs = hits + h, logs + math.log(ratio) * len(test)
        print(f"  fold {i}: fitted c={fitted[0]} us, f={fitted[1]}: {h} of {len(test)}, {ratio:.4f}")
    print(f"  cross-validated: first choice the fastest on {hits} of {len(keys)}, first / fastest "
          f"{math.exp(logs / len(keys)):.4f}")


if __name__ == "__main__":
    main()
