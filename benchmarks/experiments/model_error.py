"""The analytical cost model's error on the small family, by cluster split: what CLUSTER_SPLIT_EFFICIENCY in
kernelrl/space/model.py was derived from (no GPU needed).

    python benchmarks/experiments/model_error.py benchmarks/results/h200x2/tune_one_measurements.csv

Prints, per cluster_k, the geomean of measured / predicted time over the verified device-mode measurements, with the
calibration switched off (the model as it was when the measurements were taken) and on."""

import math
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from kernelrl.space import model  # noqa: E402
from kernelrl.space.learned import samples_from  # noqa: E402


def errors(samples) -> dict[int, float]:
    by_ck = defaultdict(list)
    for v, p, us in samples:
        by_ck[v.p["cluster_k"]].append(math.log(us / model.predict_us(v, p)))
    return {ck: math.exp(sum(e) / len(e)) for ck, e in sorted(by_ck.items())}


def main(path: str) -> None:
    samples = [s for s in samples_from(path) if s[0].family == "small"]
    calibrated = errors(samples)
    kept, model.CLUSTER_SPLIT_EFFICIENCY = model.CLUSTER_SPLIT_EFFICIENCY, 1.0
    uncalibrated = errors(samples)
    model.CLUSTER_SPLIT_EFFICIENCY = kept
    counts = defaultdict(int)
    for v, _, _ in samples:
        counts[v.p["cluster_k"]] += 1
    print("small family: measured / predicted time (geomean)")
    print(f"{'cluster_k':>9} {'measurements':>12} {'uncalibrated':>12} {'calibrated':>10}")
    for ck in uncalibrated:
        print(f"{ck:>9} {counts[ck]:>12} {uncalibrated[ck]:>12.3f} {calibrated[ck]:>10.3f}")


if __name__ == "__main__":
    main(sys.argv[1])
