"""The HGEMM referee (run/referee.py) on the GPU: honest libraries of the corpus and the examples, verified by their
worker, are accepted again by the referee (`kernelrl bench --referee`), with its runner-timed speedup recorded, in
both layouts and accumulators; a library whose values are wrong, called by the referee directly, gets its verdict."""

from pathlib import Path

import pytest

from kernelrl.harness.verdicts import Verdict
from kernelrl.jobs.measure import BenchConfig, NullUI, build, run_bench
from kernelrl.run import referee
from kernelrl.run.runner import RunSettings
from kernelrl.workloads.hgemm import parse_shapes

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "gpu" / "hgemm_corpus"


def config(tmp_path, files, shapes, acc="fp32", **kw) -> BenchConfig:
    return BenchConfig(problems=parse_shapes(shapes, acc=acc), modes=["offline"], candidates=[str(f) for f in files],
                       baselines=["torch"], db_path=tmp_path / "r.db", settings=RunSettings(rounds=3), **kw)


@pytest.mark.parametrize("acc, example", [("fp32", "hgemm_wmma.cu"), ("fp16", "hgemm_wmma_fp16acc.cu")])
def test_honest_libraries_pass_the_referee_with_a_runner_timed_speedup(tmp_path, acc, example):
    files = [ROOT / "examples" / example, CORPUS / "honest_naive.cu"]
    outcome = run_bench(config(tmp_path, files, "256x512x128,1024x256x4096", acc=acc, referee=True), NullUI())
    cands = [r for r in outcome.rows if r["method"] != "torch"]
    assert cands and all(r["verified"] for r in cands), [r["reason"] for r in cands if not r["verified"]]
    assert all(r["extra"].get("referee_speedup") for r in cands), [r["extra"] for r in cands]


def test_a_library_with_wrong_values_gets_the_referee_s_verdict(tmp_path):
    cfg = config(tmp_path, [CORPUS / "bad_wrong_values.cu"], "256x512x128")
    spec = next(s for s in build(cfg, NullUI(), {}).specs if s["kind"] == "candidate")
    ruling = referee.referee(cfg.problems[0], spec, "cuda", 60.0, 1.0)
    assert ruling.verdict is Verdict.REFEREE and "its outputs are wrong" in ruling.detail


def test_a_library_that_forges_its_worker_s_report_is_rejected_by_the_referee(tmp_path):
    """cheat_forges_worker_report: its zeros are reported verified and 3x torch by its own worker (the channel's
    tag is the worker's: tests/run/test_tamper.py shows the forge on the CPU); the referee's processes see zeros."""
    files = [CORPUS / "cheat_forges_worker_report.cu", CORPUS / "honest_wmma.cu"]
    outcome = run_bench(config(tmp_path, files, "256x512x128", referee=True), NullUI())
    rows = {r["method"]: r for r in outcome.rows}
    cheat = rows["cheat_forges_worker_report"]
    assert not cheat["verified"] and cheat["reason"].startswith("referee"), cheat["reason"]
    assert rows["honest_wmma"]["verified"], rows["honest_wmma"]["reason"]
