"""The referee on HGEMM candidates (run/referee.py): a library its worker verified runs again alone, beside torch
alone, in processes it cannot reach. On the CPU the libraries are host code with the same entry point (the C
compiler builds them; the GPU path is the same code on CUDA tensors)."""

import shutil
import subprocess
from pathlib import Path

import pytest

from kernelrl.harness.verdicts import Verdict
from kernelrl.jobs import measure
from kernelrl.run import referee
from kernelrl.run.runner import RunSettings, Task
from kernelrl.workloads.hgemm import GemmProblem

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs a C compiler (gcc) for host libraries")

PROBLEM = GemmProblem(64, 48, 32)
ENTRY = ("#include <stddef.h>\n"
         "typedef _Float16 h;\n"
         "static int calls;\n"
         "int kernelrl_hgemm(const h* a, const h* b, h* c, int m, int n, int k, void* ws, size_t wsb, void* s) {\n"
         "  ++calls;\n")
PRODUCT = ("  for (int i = 0; i < m; ++i) for (int j = 0; j < n; ++j) {\n"
           "    float acc = 0.f;\n"
           "    for (int p = 0; p < k; ++p) acc += (float)a[i * k + p] * (float)b[p * n + j];\n"
           "    c[i * n + j] = (h)acc;\n"
           "  }\n"
           "  return 0;\n}\n")
HONEST = ENTRY + PRODUCT
ZEROS = ENTRY + "  for (int i = 0; i < m * n; ++i) c[i] = (h)0.f;\n  return 0;\n}\n"
# right on its first three calls (the two checked values and the warm-up), then nothing: the timed calls skip work
SKIPS_TIMED = ENTRY + "  if (calls > 3) return 0;\n" + PRODUCT
FAILS = ENTRY + "  return 7;\n}\n"


def library(tmp_path: Path, source: str) -> dict:
    src, lib = tmp_path / "cand.c", tmp_path / "cand.so"
    src.write_text(source)
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    return {"name": "cand", "lib_path": str(lib)}


def rule(tmp_path: Path, source: str, claimed: float | None = 1.0):
    return referee.referee(PROBLEM, library(tmp_path, source), "cpu", 60.0, claimed)


def test_an_honest_library_gets_no_verdict_and_a_runner_timed_speedup(tmp_path):
    ruling = rule(tmp_path, HONEST)
    assert ruling.verdict is None, ruling.detail
    assert ruling.speedup is not None and ruling.speedup > 0


def test_a_library_whose_outputs_are_wrong_outside_its_worker_gets_the_verdict(tmp_path):
    ruling = rule(tmp_path, ZEROS)
    assert ruling.verdict is Verdict.REFEREE and "its outputs are wrong" in ruling.detail


def test_timed_calls_that_skip_their_work_answer_a_digest_that_is_not_the_reference_s(tmp_path):
    ruling = rule(tmp_path, SKIPS_TIMED)
    assert ruling.verdict is Verdict.REFEREE and "did not compute what its checked ones did" in ruling.detail


def test_a_library_that_returns_an_error_outside_its_worker_gets_the_verdict(tmp_path):
    ruling = rule(tmp_path, FAILS)
    assert ruling.verdict is Verdict.REFEREE and "kernelrl_hgemm returned 7" in ruling.detail


def test_a_speedup_far_beyond_what_the_runner_times_earns_only_the_runner_s(tmp_path):
    ruling = rule(tmp_path, HONEST, claimed=1e6)
    assert ruling.verdict is None and ruling.speedup is not None, ruling
    assert ruling.scale == pytest.approx(1e6 / ruling.speedup)


def test_a_candidate_with_untimed_staging_gets_a_note_and_no_ruling(tmp_path):
    ruling = referee.referee(PROBLEM, {"name": "cand", "lib_path": "x.so", "untimed_stage": True}, "cpu", 60.0, 2.0)
    assert ruling.verdict is None and ruling.scale is None and ruling.notes[0].startswith("not refereed")


def records(cand_us: float = 10.0, verified: bool = True) -> list[dict]:
    return [{"method": "torch", "mode": "offline", "verified": True, "time_us_median": 20.0, "extra": {}},
            {"method": "cand", "mode": "offline", "verified": verified, "time_us_median": cand_us,
             "time_us_p10": cand_us, "time_us_p90": cand_us, "tflops": 1.0, "extra": {}}]


def test_the_claimed_speedup_is_torch_s_time_over_the_candidate_s():
    assert referee.claimed_speedup(records(cand_us=10.0), "cand") == pytest.approx(2.0)


def test_a_candidate_verified_in_any_record_of_a_shape_is_refereed():
    failed_device = [{**records(verified=False)[1], "mode": "device"}]
    assert referee.to_referee(records(verified=True) + failed_device, {"cand"}) == ["cand"]
    assert referee.to_referee(records(verified=False), {"cand"}) == []


def test_a_referee_verdict_makes_the_candidate_s_records_unverified_and_leaves_torch_s():
    out = referee.apply(records(), "cand", referee.Ruling(Verdict.REFEREE, "its outputs are wrong", 1.0))
    assert [r["method"] for r in out] == ["cand"]
    assert out[0]["verified"] is False and out[0]["verdict"] == "referee"
    assert "its outputs are wrong" in out[0]["reason"]


def test_a_speed_not_believed_scales_the_candidate_s_times():
    out = referee.apply(records(cand_us=10.0), "cand", referee.Ruling(None, "", 0.5, ["slow"], scale=4.0))
    assert out[0]["verified"] is True and out[0]["time_us_median"] == 40.0 and out[0]["tflops"] == 0.25
    assert out[0]["extra"]["notes"] == ["referee: slow"] and out[0]["extra"]["referee_speedup"] == 0.5


def test_a_measured_shape_s_forged_acceptance_is_stored_over_with_the_referee_s_verdict(tmp_path):
    spec = {"kind": "candidate", **library(tmp_path, ZEROS)}
    stored, said = [], []

    class UI:
        def stage(self, text):
            said.append(text)

    measure._referee_task(Task(0, PROBLEM, ["offline"]), records(), [spec, {"kind": "torch", "name": "torch"}],
                          RunSettings(hang_timeout_s=60.0), UI(), lambda task, rs: stored.extend(rs), device="cpu")
    assert [(r["method"], r["verified"], r["verdict"]) for r in stored] == [("cand", False, "referee")]
    assert said and said[0].startswith("referee, cand on 64x48x32: referee")


def test_without_torch_the_claimed_speedup_is_over_the_first_baseline_measured():
    rows = [{**r, "method": "cublas_tn"} if r["method"] == "torch" else r for r in records(cand_us=5.0)]
    assert referee.claimed_speedup(rows, "cand", {"cand"}) == pytest.approx(4.0)
