"""How well the cost model ranks measured kernels, alone and with the learned correction, cross-validated by shape.

    python benchmarks/experiments/learned_model_cv.py benchmarks/results/h200x2/tune_one_measurements.csv [--folds 5]

The shapes are split into folds. For each fold, the correction (kernelrl/space/learned.py) is fitted on the other
folds' measurements. On the fold's shapes, each ranking's first choice among the candidates that were measured
there is compared with the measured best. Per size class the script prints: how often the first choice was the
best, how often the best was in the first three, and the geomean of (first choice's time / best time). No GPU
needed."""

import argparse
import math
import random
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from kernelrl.space.learned import Correction, samples_from  # noqa: E402
from kernelrl.space.model import predict_us  # noqa: E402
from kernelrl.workloads.hgemm import SIZE_CLASSES, size_class  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("measurements")
    ap.add_argument("--folds", type=int, default=5)
    args = ap.parse_args()
    by_shape = defaultdict(list)
    for v, p, us in samples_from(args.measurements):
        by_shape[(p.m, p.n, p.k)].append((v, p, us))
    shapes = sorted(by_shape)
    random.Random(0).shuffle(shapes)
    folds = [shapes[i::args.folds] for i in range(args.folds)]
    stats = defaultdict(lambda: defaultdict(list))
    for i, held_out in enumerate(folds):
        train = [s for j, fold in enumerate(folds) if j != i for shape in fold for s in by_shape[shape]]
        corr = Correction.fit(train)
        for shape in held_out:
            rows = by_shape[shape]
            if len(rows) < 3:
                continue
            best = min(rows, key=lambda r: r[2])
            # sorted() below calls the lambdas within this iteration, with this fold's `corr`
            for label, score in (("model", lambda r: predict_us(r[0], r[1])),
                                 ("learned", lambda r: predict_us(r[0], r[1]) * corr.factor(r[0], r[1]))):  # noqa: B023
                order = sorted(rows, key=score)
                stats[label][size_class(rows[0][1].flops)].append(
                    (order[0][2] / best[2], order[0] is best, order.index(best) < 3))
    print(f"{'ranking':8} {'class':7} {'shapes':>6} {'first is best':>14} {'best in top 3':>14} {'loss (geomean)':>15}")
    for label in ("model", "learned"):
        for cls in SIZE_CLASSES:
            v = stats[label][cls]
            if v:
                loss = math.exp(sum(math.log(x[0]) for x in v) / len(v))
                print(f"{label:8} {cls:7} {len(v):>6} {sum(x[1] for x in v):>14} {sum(x[2] for x in v):>14} "
                      f"{loss:>15.3f}")


if __name__ == "__main__":
    main()
