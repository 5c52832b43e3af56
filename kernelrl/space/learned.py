"""A correction to the analytical cost model, learned from what this GPU measured.

The model (`model.py`) is a roofline with a few leads; it knows tiles and waves, not how a family's pipeline behaves
on a given GPU. The correction is a ridge regression of log(measured / predicted) on per-family features (tile,
split, cluster, wave count and quantization, the shape, the prediction itself), fitted on verified measurements of
earlier tuning runs. Ranking by prediction × exp(correction) is what the tuner's short lists use when given
`--learn-from`. On the H200's paper-grid run it put the measured best candidate first on 149 of 304 small shapes
(29 without it) and 252 of 509 medium ones (144), cross-validated by shape (benchmarks/experiments/learned_model_cv.py).

The fit is deterministic and made once per run, before any short list: the candidate set stays known in advance, so
a CPU machine given the same measurements prebuilds the same kernels."""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kernelrl.db.database import Database
from kernelrl.errors import UserError
from kernelrl.space import SPACES, Variant
from kernelrl.space.model import predict_us, waves
from kernelrl.workloads.hgemm import GemmProblem

RIDGE = 1.0  # regularisation: few shapes of a family must not swing its correction far
MIN_SAMPLES = 200  # fewer verified measurements than this: no correction (the model alone)
FEATURES = ("bias", "log2_bm", "log2_bn", "log2_bk", "log2_split", "log2_cluster", "wave_efficiency", "log2_waves",
            "log2_m", "log2_n", "log2_k", "log_predicted")


class LearnError(UserError, ValueError):
    pass


def features(variant: Variant, problem: GemmProblem, predicted: float | None = None) -> list[float]:
    """The per-family feature block of one (variant, shape), zero for every other family. `predicted`: the model's
    time, when the caller has it already."""
    r = SPACES[variant.family].resources(variant)
    bm, bn, bk = r["tile"]
    cm, cn = r.get("cluster", (1, 1))
    _, n_waves, efficiency = waves(variant, problem)
    own = [1.0, math.log2(bm), math.log2(bn), math.log2(bk), math.log2(r.get("split_k", 1)), math.log2(cm * cn),
           efficiency, math.log2(n_waves), math.log2(problem.m), math.log2(problem.n), math.log2(problem.k),
           math.log(predicted if predicted is not None else predict_us(variant, problem))]
    out: list[float] = []
    for family in sorted(SPACES):
        out += own if family == variant.family else [0.0] * len(own)
    return out


@dataclass
class Correction:
    weights: list[float]
    families: list[str]
    samples: int

    def factor(self, variant: Variant, problem: GemmProblem, predicted: float | None = None) -> float:
        x = features(variant, problem, predicted)
        return math.exp(sum(w * f for w, f in zip(self.weights, x)))

    @classmethod
    def fit(cls, samples: list[tuple[Variant, GemmProblem, float]]) -> "Correction":
        """Ridge regression of log(measured µs / predicted µs) on the features."""
        if len(samples) < MIN_SAMPLES:
            raise LearnError(f"{len(samples)} verified measurements of known kernels: at least {MIN_SAMPLES} are "
                             "needed to learn a correction (tune without --learn-from, or give a larger run)")
        predicted = [predict_us(v, p) for v, p, _ in samples]
        X = np.array([features(v, p, t) for (v, p, _), t in zip(samples, predicted)])
        y = np.array([math.log(us / t) for (_, _, us), t in zip(samples, predicted)])
        weights = np.linalg.solve(X.T @ X + RIDGE * np.eye(X.shape[1]), X.T @ y)
        return cls([float(w) for w in weights], sorted(SPACES), len(samples))


def samples_from(path: str | Path, acc: str = "fp32") -> list[tuple[Variant, GemmProblem, float]]:
    """Verified device-mode measurements of kernels the spaces know, from a measurements CSV (as
    benchmarks/results/h200x2/tune_one_measurements.csv) or a results database."""
    path = Path(path)
    if not path.is_file():
        raise LearnError(f"{path}: no such file; pass a measurements CSV or a results database")
    if path.suffix == ".csv":
        with open(path, newline="") as f:
            rows = [r for r in csv.DictReader(f)]
    else:
        db = Database(path)
        try:
            rows = db.rows(modes=["device"], superseded=True)  # absolute times: a later run's do not void them
        finally:
            db.close()
    gpus = sorted({r["gpu"] for r in rows if r.get("gpu")})
    if len(gpus) > 1:
        raise LearnError(f"{path} holds measurements of {len(gpus)} GPUs ({', '.join(gpus)}): the correction is "
                         "per GPU, pass measurements of the one being tuned")
    names = variants_by_name(acc)
    out = []
    for r in rows:
        name, us = r.get("method"), r.get("time_us_median")
        if name not in names or str(r.get("verified")) not in ("1", "True") or not us or r.get("mode") != "device":
            continue
        out.append((names[name], GemmProblem(int(r["m"]), int(r["n"]), int(r["k"]), acc=acc), float(us)))
    return out


def variants_by_name(acc: str) -> dict[str, Variant]:
    """Every legal point of every kernel space (pruned ones too, not only the default grid), by procedural name."""
    names = {}
    for space in SPACES.values():
        for v in space.points(acc, full=True):
            names[v.name] = v
    return names


def learn(path: str | Path, acc: str = "fp32") -> Correction:
    return Correction.fit(samples_from(path, acc))

