"""Every cheat a kernel spec can ask for (kernelrl/space/tricks.py) is caught by the HGEMM evaluator, on every
spec family, beside the same point without the trick (which verifies): what an RL policy writing specs can reach
is never rewarded."""

import pytest

from kernelrl.jobs.measure import BenchConfig, NullUI, run_bench
from kernelrl.harness.verdicts import Category, category_of
from kernelrl.run.runner import RunSettings
from kernelrl.space.spec import parse_spec
from kernelrl.space.tricks import TRICKS
from kernelrl.workloads.hgemm import parse_shapes

pytestmark = pytest.mark.gpu
POINTS = {"wgmma": "wgmma BM=128 BN=128 stages=4", "mma_sync": "mma_sync BM=128 BN=128 WM=64 WN=64",
          "small": "small BM=32 BN=64"}
SHAPES = {"wgmma": "256x512x128,128x256x4096", "mma_sync": "256x512x128,128x256x4096",
          "small": "64x128x128,64x64x4096"}


@pytest.mark.parametrize("family", sorted(POINTS))
def test_every_trick_is_caught_and_the_honest_point_verifies(tmp_path, family):
    honest = POINTS[family]
    sources = {"honest": parse_spec(honest).source("fp32")}
    sources.update({t: parse_spec(f"{honest} trick={t}").source("fp32") for t in TRICKS})
    cfg = BenchConfig(problems=parse_shapes(SHAPES[family]), modes=["device"], baselines=["cublas_nn"],
                      sources=sources, db_path=tmp_path / "r.db", settings=RunSettings(rounds=3, hang_timeout_s=60))
    rows = run_bench(cfg, NullUI()).rows
    by = {}
    for r in rows:
        by.setdefault(r["method"], []).append(r)
    assert all(r["verified"] for r in by["honest"]), [r["reason"] for r in by["honest"]]
    for trick in TRICKS:
        assert by[trick] and not any(r["verified"] for r in by[trick]), (trick, [r["reason"] for r in by[trick]])
        cats = {category_of(r) for r in by[trick]}
        assert cats <= {Category.CORRECTNESS, Category.DEFENCE}, (trick, [r["reason"] for r in by[trick]])
