"""The judge: a target spec as plain data, the evolve targets' screen and build, the evaluator's verdicts, and what
the reward needs beyond them (each shape's error and its tolerance)."""

import pytest

from kernelrl.train.targets import TargetSpec, code_name, judge, make_target
from kernelrl.verify.checks import tolerance
from tests import train_helpers as h


def hgemm(tmp_path, shapes=("64x64x64", "128x128x256")):
    return TargetSpec("hgemm", ("torch", "cublas_tn"), "torch", 1, 30.0, str(tmp_path), shapes=shapes,
                      runner="dummy")


def test_a_spec_round_trips_through_json():
    spec = TargetSpec("kernelbench", ("eager",), "eager", 2, 10.0, "/w", task_path="t.py", device="cpu")
    assert TargetSpec.from_json(spec.to_json()) == spec


def test_an_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="unknown target kind"):
        TargetSpec("conv")


def test_the_hgemm_target_measures_the_specs_shapes(tmp_path):
    t = make_target(hgemm(tmp_path))
    assert [p.name for p in t.problems] == ["64x64x64", "128x128x256"] and t.objective == "torch"


def test_code_names_depend_on_the_code_only():
    assert code_name(h.KERNEL) == code_name(h.KERNEL) != code_name(h.KERNEL_2)


def test_a_verified_kernel_has_times_errors_and_tolerances_per_shape(tmp_path):
    [j] = judge(hgemm(tmp_path), {"a": h.KERNEL}).values()
    assert j.category == "ok" and set(j.shapes) == {"64x64x64", "128x128x256"}
    d = j.shapes["128x128x256"]
    assert d["us"] > 0 and set(d["baselines"]) == {"torch", "cublas_tn"}
    assert d["max_rel_err"] is not None and d["tolerance"] == pytest.approx(tolerance("fp32", 256))


def test_the_code_length_is_recorded(tmp_path):
    [j] = judge(hgemm(tmp_path), {"a": h.KERNEL}).values()
    assert j.code_chars == len(h.KERNEL)


def test_a_known_cheat_is_rejected_by_the_static_screen(tmp_path):
    [j] = judge(hgemm(tmp_path), {"a": h.CHEAT}).values()
    assert j.category == "rejected" and "cuda-stream" in j.verdict and j.key == "static screen"


def test_a_file_without_the_entry_point_fails_the_contract(tmp_path):
    [j] = judge(hgemm(tmp_path), {"a": h.NO_ENTRY}).values()
    assert j.category == "compile" and j.verdict.startswith("contract:") and j.key == "contract"


def test_a_file_that_cannot_compile_is_a_compile_failure(tmp_path):
    [j] = judge(hgemm(tmp_path), {"a": h.UNBALANCED}).values()
    assert j.category == "compile" and j.verdict.startswith("compile error") and j.key == "compile error"


def test_several_candidates_are_judged_in_one_call(tmp_path):
    found = judge(hgemm(tmp_path), {"a": h.KERNEL, "b": h.CHEAT, "c": h.KERNEL_2})
    assert {n: j.category for n, j in found.items()} == {"a": "ok", "b": "rejected", "c": "ok"}


@pytest.fixture(scope="module")
def kb_spec(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("kbjudge")
    (tmp / "5_SumDim.py").write_text(h.SUM_TASK)
    return TargetSpec("kernelbench", ("eager",), "eager", 1, 60.0, str(tmp), task_path=str(tmp / "5_SumDim.py"),
                      device="cpu")


@pytest.fixture(scope="module")
def kb_judged(kb_spec):
    return judge(kb_spec, {"honest": h.SUM_HONEST, "wrong": h.SUM_WRONG, "cheat": "import threading\n" + h.SUM_HONEST})


def test_an_honest_module_is_verified_with_the_fp32_tolerance(kb_judged):
    j = kb_judged["honest"]
    assert j.category == "ok" and j.objective == "eager"
    [d] = j.shapes.values()
    assert d["tolerance"] == 1e-4 and d["max_rel_err"] <= 1e-4 and d["baselines"]["eager"] > 0


def test_a_wrong_module_gets_the_workers_verdict(kb_judged):
    assert kb_judged["wrong"].category == "wrong" and "wrong values" in kb_judged["wrong"].verdict


def test_a_module_with_threads_is_rejected_statically(kb_judged):
    assert kb_judged["cheat"].category == "rejected"
