"""Every verification defence, on the GPU: each deliberately broken candidate must fail for its named reason,
the honest reference must pass, and every baseline (cuBLASLt included) must run and verify."""

from pathlib import Path

import pytest

from kernelrl.harness.sandbox import landlock_abi
from kernelrl.jobs.measure import BenchConfig, NullUI, run_bench
from kernelrl.run.runner import RunSettings
from kernelrl.workloads.hgemm import parse_shapes

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "gpu" / "hgemm_corpus"  # honest_*, cheat_* and bad_* candidates



def evaluate(tmp_path, files, shapes="256x512x128", baselines=("cublas_nn",), modes=("device",), acc="fp32",
             timeout=60.0):
    cfg = BenchConfig(problems=parse_shapes(shapes, acc=acc), modes=list(modes), candidates=[str(f) for f in files],
                      baselines=list(baselines), db_path=tmp_path / "r.db",
                      settings=RunSettings(rounds=3, hang_timeout_s=timeout))
    return run_bench(cfg, NullUI())


def verdict(outcome, method):
    rows = [r for r in outcome.rows if r["method"] == method]
    assert rows, f"no rows for {method}"
    return rows[0]


@pytest.mark.parametrize("name, reason", [
    ("bad_wrong_values", "wrong values"),
    ("bad_unwritten_tail", "unwritten output"),
    ("bad_oob_write", "out-of-bounds write"),
    ("cheat_modifies_input", "modified inputs"),
    ("cheat_first_calls_only", "unwritten output"),
    ("cheat_cache_by_pointer", "unwritten output"),
    ("cheat_side_stream", "unwritten output"),
    ("cheat_content_cache", "stale result"),
    ("cheat_persisting_l2", "device state"),
    ("cheat_background_thread", "background activity"),
    ("cheat_gpu_work_at_load", "background activity"),
    ("cheat_timer_at_load", "device state"),
    ("cheat_python_at_load", "harness patch"),
    ("cheat_replaces_worker_judge", "harness patch"),
    ("bad_illegal_address", "crash"),
    ("bad_returns_error", "returned error: 1"),
    ("bad_no_entry", "no entry point"),
    ("bad_compile_error", "compile error"),
])
def test_broken_candidate_is_rejected_for_its_reason(tmp_path, name, reason):
    outcome = evaluate(tmp_path, [CORPUS / f"{name}.cu"])
    row = verdict(outcome, name)
    assert not row["verified"]
    assert reason in row["reason"], row["reason"]
    assert verdict(outcome, "cublas_nn")["verified"], "the run must go on for the others"


@pytest.mark.skipif(not landlock_abi()[0], reason="needs Linux Landlock (harness/sandbox.py)")
@pytest.mark.parametrize("name", ["cheat_writes_results_db", "cheat_links_results_db"])
def test_a_library_that_writes_the_results_database_at_load_leaves_it_as_it_was(tmp_path, monkeypatch, name):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "results.db").write_text("measured")
    monkeypatch.setenv("KERNELRL_CACHE", str(cache))  # the worker inherits it; the bench's own db is r.db
    outcome = evaluate(tmp_path, [CORPUS / f"{name}.cu"])
    assert (cache / "results.db").read_text() == "measured"
    assert verdict(outcome, name)["verified"]  # the write failed; the GEMM is honest


def test_hang_becomes_a_verdict(tmp_path):
    outcome = evaluate(tmp_path, [CORPUS / "bad_hang.cu"], timeout=20.0)
    row = verdict(outcome, "bad_hang")
    assert not row["verified"] and row["reason"].startswith("hang")
    assert verdict(outcome, "cublas_nn")["verified"]


def test_fp16_accumulation_claiming_fp32_fails_at_large_k(tmp_path):
    outcome = evaluate(tmp_path, [CORPUS / "cheat_fp16_acc_claims_fp32.cu"], shapes="128x128x16384")
    row = verdict(outcome, "cheat_fp16_acc_claims_fp32")
    assert not row["verified"] and "tolerance" in row["reason"]


def test_fp16_accumulation_claiming_fp32_is_caught_at_small_k(tmp_path):
    """At K = 128 its error on random inputs is inside the fp32 tolerance; the accumulator inputs catch it."""
    outcome = evaluate(tmp_path, [CORPUS / "cheat_fp16_acc_claims_fp32.cu", CORPUS / "honest_wmma.cu"],
                       shapes="256x512x128")
    row = verdict(outcome, "cheat_fp16_acc_claims_fp32")
    assert not row["verified"] and row["reason"].startswith("precision"), row["reason"]
    assert verdict(outcome, "honest_wmma")["verified"]


@pytest.mark.parametrize("acc, example", [("fp32", "hgemm_wmma.cu"), ("fp16", "hgemm_wmma_fp16acc.cu")])
def test_reference_candidate_and_every_baseline_verify(tmp_path, acc, example):
    outcome = evaluate(tmp_path, [ROOT / "examples" / example], shapes="64x64x64,333x200x72,1024x256x4096",
                       baselines=("torch", "cublas_nn", "cublas_tn", "cublaslt_heur_nn", "cublaslt_heur_tn",
                                  "cublaslt_auto_nn", "cublaslt_auto_tn"), modes=("device", "offline"), acc=acc)
    bad = [(r["method"], r["m"], r["n"], r["k"], r["reason"]) for r in outcome.rows if not r["verified"]]
    assert not bad
    assert all(r["time_us_median"] > 0 for r in outcome.rows)


def test_verdicts_do_not_depend_on_the_other_candidates(tmp_path):
    """An input writer benched beside honest kernels: the honest ones verify on every shape, before or after it."""
    files = [CORPUS / "honest_wmma.cu", CORPUS / "cheat_modifies_input.cu", CORPUS / "honest_naive.cu"]
    outcome = evaluate(tmp_path, files, shapes="256x512x128,128x256x4096", modes=("device", "offline"))
    rows = {(r["method"], r["m"], r["k"], r["mode"]): r for r in outcome.rows}
    assert all(r["verified"] for (m, *_), r in rows.items() if m.startswith("honest_")), \
        [r["reason"] for r in rows.values() if not r["verified"]]
    assert all(not r["verified"] and "modified inputs" in r["reason"]
               for (m, *_), r in rows.items() if m.startswith("cheat_"))
