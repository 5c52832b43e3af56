"""Each kernel family's representative points, through the whole evaluator on the GPU: verified on aligned, ragged
and skinny shapes with both accumulators. The first thing to run after a family changes."""

import pytest

from kernelrl.jobs.measure import BenchConfig, NullUI, run_bench
from kernelrl.build.toolchain import cutlass_include_dirs
from kernelrl.run.runner import RunSettings
from kernelrl.space import SPACES
from kernelrl.workloads.hgemm import parse_shapes

pytestmark = pytest.mark.gpu
SHAPES = "64x64x64,256x512x128,1000x2056x72,64x4096x4096,128x128x8192,4096x4096x4096"


def representatives(family: str, acc: str, count: int = 4):
    """Points that between them take as many knob values as `count` points can: in name order, each next point is
    the one adding the most (knob, value) pairs not seen yet (split-K, clusters, epilogues, schedules all run)."""
    points = sorted(SPACES[family].points(acc), key=lambda v: v.name)
    chosen, seen = [], set()
    while points and len(chosen) < count:
        best = max(points, key=lambda v: len(set(v.params) - seen))
        chosen.append(best)
        seen |= set(best.params)
        points.remove(best)
    return chosen


@pytest.mark.parametrize("acc", ["fp32", "fp16"])
@pytest.mark.parametrize("family", ["small", "mma_sync", "cutlass_sm90"])
def test_family_points_verify(tmp_path, family, acc):
    if family not in SPACES:
        pytest.skip(f"family {family} not available")
    if family == "cutlass_sm90" and not cutlass_include_dirs():
        pytest.skip("CUTLASS headers missing: pip install nvidia-cutlass (carry the wheel to the GPU machine)")
    variants = representatives(family, acc, count=3 if family == "cutlass_sm90" else 6)
    cfg = BenchConfig(problems=parse_shapes(SHAPES, acc=acc), modes=["device"], baselines=["cublas_nn"],
                      sources={v.name: v.source() for v in variants}, db_path=tmp_path / "r.db",
                      settings=RunSettings(rounds=3),
                      methods_for=lambda p: {v.name for v in variants if SPACES[family].supports(v, p) is None})
    rows = run_bench(cfg, NullUI()).rows
    bad = [(r["method"], r["m"], r["n"], r["k"], r["reason"]) for r in rows if not r["verified"]]
    assert not bad
    assert {r["method"] for r in rows} >= {v.name for v in variants}
