"""The cost model's learned correction: a ridge fit of log(measured / predicted) per family, read from a
measurements CSV or a results database, applied to ranking, fitted once per tuning run."""

import csv
import itertools

import pytest

from kernelrl.jobs.measure import BenchError
from kernelrl.space import SPACES
from kernelrl.space.learned import MIN_SAMPLES, Correction, LearnError, samples_from
from kernelrl.space.model import predict_us, rank
from kernelrl.tune import TuneConfig
from kernelrl.workloads.hgemm import GemmProblem

SHAPES = [GemmProblem(m, n, k) for m, n, k in itertools.product((64, 256, 1024), (128, 512, 2048), (256, 4096))]


def made_up_samples(slowdown: dict[str, float], per_family: int = 150):
    """Measurements that are the model's prediction times a fixed factor per family."""
    out = []
    for family, factor in slowdown.items():
        points = list(itertools.islice(SPACES[family].points("fp32"), 40))
        pairs = [(v, p) for v in points for p in SHAPES if SPACES[family].supports(v, p) is None]
        for v, p in pairs[:per_family]:
            out.append((v, p, predict_us(v, p) * factor))
    return out


def test_a_uniform_slowdown_per_family_is_learned():
    corr = Correction.fit(made_up_samples({"small": 2.0, "mma_sync": 1.0}))
    v_small = next(v for v in SPACES["small"].points("fp32") if SPACES["small"].supports(v, SHAPES[0]) is None)
    v_mma = next(v for v in SPACES["mma_sync"].points("fp32") if SPACES["mma_sync"].supports(v, SHAPES[0]) is None)
    assert corr.factor(v_small, SHAPES[0]) == pytest.approx(2.0, rel=0.05)
    assert corr.factor(v_mma, SHAPES[0]) == pytest.approx(1.0, rel=0.05)


def test_too_few_measurements_are_refused():
    with pytest.raises(LearnError, match=f"at least {MIN_SAMPLES}"):
        Correction.fit(made_up_samples({"small": 1.0}, per_family=10))


def test_ranking_follows_the_correction():
    corr = Correction.fit(made_up_samples({"small": 50.0, "mma_sync": 1.0}))
    problem = GemmProblem(256, 512, 4096)
    points = [*itertools.islice(SPACES["small"].points("fp32"), 40),
              *itertools.islice(SPACES["mma_sync"].points("fp32"), 40)]
    assert rank(points, problem)[0][1].family == "small"  # the model alone prefers small tiles here
    assert rank(points, problem, correction=corr)[0][1].family == "mma_sync"


def write_csv(path, samples, extra_rows=()):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["m", "n", "k", "mode", "method", "time_us_median", "verified"])
        w.writeheader()
        for v, p, us in samples:
            w.writerow({"m": p.m, "n": p.n, "k": p.k, "mode": "device", "method": v.name, "time_us_median": us,
                        "verified": 1})
        for row in extra_rows:
            w.writerow(row)


def test_a_measurements_csv_gives_verified_device_rows_of_known_kernels(tmp_path):
    samples = made_up_samples({"small": 1.0}, per_family=5)
    write_csv(tmp_path / "m.csv", samples, [
        {"m": 64, "n": 64, "k": 64, "mode": "device", "method": "torch", "time_us_median": 3.0, "verified": 1},
        {"m": 64, "n": 64, "k": 64, "mode": "device", "method": samples[0][0].name, "time_us_median": 3.0,
         "verified": 0},
        {"m": 64, "n": 64, "k": 64, "mode": "offline", "method": samples[0][0].name, "time_us_median": 3.0,
         "verified": 1}])
    assert [(v.name, p, us) for v, p, us in samples_from(tmp_path / "m.csv")] == \
        [(v.name, p, pytest.approx(us)) for v, p, us in samples]


def test_measurements_of_several_gpus_are_refused(tmp_path):
    with open(tmp_path / "m.csv", "w", newline="") as f:
        f.write("m,n,k,mode,method,time_us_median,verified,gpu\n64,64,64,device,torch,3,1,NVIDIA H200\n"
                "64,64,64,device,torch,3,1,NVIDIA H100\n")
    with pytest.raises(LearnError, match="2 GPUs"):
        samples_from(tmp_path / "m.csv")


def test_a_tuning_run_fits_once_from_the_file_it_is_given(tmp_path):
    write_csv(tmp_path / "m.csv", made_up_samples({"small": 2.0, "mma_sync": 1.0}))
    cfg = TuneConfig(problems=SHAPES, families=["small", "mma_sync"], out=tmp_path / "lib",
                     learn_from=str(tmp_path / "m.csv"))
    assert cfg.correction is cfg.correction and cfg.correction.samples >= MIN_SAMPLES


def test_a_missing_measurements_file_is_one_clear_error(tmp_path):
    cfg = TuneConfig(problems=SHAPES, families=["small"], out=tmp_path / "lib", learn_from=str(tmp_path / "no.csv"))
    with pytest.raises(BenchError, match="no such file"):
        _ = cfg.correction
