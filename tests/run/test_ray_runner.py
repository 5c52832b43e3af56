"""The Ray runner on a local Ray cluster (CPUs only) with the dummy runner inside each actor: the same records as
one process, committed by the driver."""

import pytest

from kernelrl.jobs.measure import NullUI
from kernelrl.tune import TuneConfig, tune
from kernelrl.workloads.hgemm import parse_shapes

ray = pytest.importorskip("ray")
import tests.tune.test_tune  # noqa: E402,F401  (registers the made-up "toy" family)


def test_tune_over_ray_matches_one_process(tmp_path, local_cluster):
    shapes = parse_shapes("64x64x64,128x128x128,256x64x512,4096x4096x4096,64x4096x128")
    common = dict(problems=shapes, families=["toy"], runner="dummy", top_k=3, batch=5)
    alone = tune(TuneConfig(out=tmp_path / "a", db_path=tmp_path / "a.db", **common), NullUI())
    spread = tune(TuneConfig(out=tmp_path / "b", db_path=tmp_path / "b.db", ray_address="local", **common), NullUI())
    assert [(r.problem, r.best, r.best_us) for r in spread] == [(r.problem, r.best, r.best_us) for r in alone]


def test_a_cluster_without_gpus_is_one_clear_error(tmp_path, local_cluster):
    from kernelrl.run.ray_runner import RayRunner
    from kernelrl.run.runner import RunnerError, RunSettings, Task
    with pytest.raises(RunnerError, match="no GPU"):
        RayRunner(address="local", inner="local").run([Task(0, parse_shapes("64x64x64")[0], ["device"])], [],
                                                      RunSettings(), lambda t, r: None)


def test_a_call_deals_tasks_round_robin_into_one_share_per_actor():
    from kernelrl.run.ray_runner import stripes
    assert stripes(list(range(7)), 2) == [[0, 2, 4, 6], [1, 3, 5]]


def test_shares_are_never_empty_and_batch_caps_their_size():
    from kernelrl.run.ray_runner import stripes
    assert stripes([1, 2], 4) == [[1], [2]]
    assert [len(s) for s in stripes(list(range(10)), 2, batch=3)] == [3, 3, 2, 2]


def test_bench_of_a_library_over_ray_matches_one_process(tmp_path, local_cluster):
    from kernelrl.jobs.measure import BenchConfig, run_bench
    from tests.tune.test_tune import toy_library
    toy_library(tmp_path / "lib")

    def rows(**extra):
        cfg = BenchConfig(problems=parse_shapes("64x64x64,128x128x128"), modes=["device"], baselines=["torch"],
                          runner="dummy", library=tmp_path / "lib", **extra)
        return sorted((r["m"], r["method"], r.get("dispatch"), r["time_us_median"])
                      for r in run_bench(cfg, NullUI()).rows)

    spread = rows(db_path=tmp_path / "b.db", ray_address="local")
    assert spread == rows(db_path=tmp_path / "a.db") and (64, "kernelrl", "toy") in {r[:3] for r in spread}
