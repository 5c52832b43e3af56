"""CUDA-L1-style tables: numbers checked by hand; failures counted, excluded or zero per the flag."""

import math

import pytest

from kernelrl.kernelbench.aggregate import (BASELINES, TaskResult, aggregate, claims_table, pair_phases,
                                         phase_totals, verdict_counts)


def results():
    # candidate 10 µs against eager 20, 10, 5 µs -> speedups 2.0, 1.0, 0.5; one failed candidate.
    return [TaskResult("a", 10.0, {"eager": 20.0}), TaskResult("b", 10.0, {"eager": 10.0}),
            TaskResult("c", 10.0, {"eager": 5.0}), TaskResult("d", None, {"eager": 7.0}, reason="wrong values")]


def row(rows, baseline="eager"):
    return next(r for r in rows if r["baseline"] == baseline)


def test_failures_excluded_by_default():
    r = row(aggregate(results()))
    assert (r["tasks"], r["success"], r["faster"]) == (4, 3, 1)
    assert r["mean"] == pytest.approx(3.5 / 3) and r["max"] == 2.0
    assert (r["p75"], r["p50"], r["p25"]) == (pytest.approx(1.5), 1.0, pytest.approx(0.75))


def test_failures_as_zero():
    r = row(aggregate(results(), failed_as_zero=True))
    assert (r["tasks"], r["success"], r["faster"]) == (4, 3, 1)
    # speedups 0, 0.5, 1, 2: p75 = 1.25, p50 = 0.75, p25 = 0.375
    assert r["mean"] == pytest.approx(3.5 / 4)
    assert (r["p75"], r["p50"], r["p25"]) == (pytest.approx(1.25), pytest.approx(0.75), pytest.approx(0.375))


def test_faster_needs_more_than_one_percent():
    r = row(aggregate([TaskResult("a", 100.0, {"eager": 101.0}), TaskResult("b", 100.0, {"eager": 101.5})]))
    assert r["faster"] == 1


def test_one_row_per_baseline_and_unmeasured_baseline_left_out():
    rows = aggregate(results())
    assert [r["baseline"] for r in rows] == list(BASELINES)
    empty = row(rows, "cuda_graph")
    assert (empty["tasks"], empty["success"]) == (0, 0) and math.isnan(empty["mean"]) and math.isnan(empty["p50"])


def _row(task, verified, verdict="", speedup="", claimed="", strict="0", loose="0", baseline="eager", rule=""):
    return {"task": task, "candidate": task, "baseline": baseline, "verified": verified, "verdict": verdict,
            "speedup": speedup, "claimed_speedup": claimed, "correct_strict": strict, "correct_kernelbench": loose,
            "kernelbench_rule": rule}


CSV_ROWS = [_row("a", "1", speedup="2.0", claimed="4.0", strict="1", loose="1"),
            _row("a", "1", speedup="1.5", claimed="3.0", strict="1", loose="1", baseline="compile_default"),
            _row("b", "0", "wrong values", speedup="1.0", claimed="0.5", loose="1"),  # within the looser profile
            _row("c", "0", "returned an input", baseline="", rule="1"),
            _row("d", "0", "returned an input", baseline="", rule="")]


def test_verdicts_are_counted_once_per_pair_with_their_category():
    counts = {r["verdict"]: (r["category"], r["pairs"]) for r in verdict_counts(CSV_ROWS)}
    assert counts == {"correct": ("ok", 1), "wrong values": ("correctness", 1), "returned an input": ("defence", 2)}


def test_each_verdict_says_how_many_of_its_pairs_kernelbench_s_own_check_accepts_where_known():
    by = {r["verdict"]: (r["kernelbench_accepts"], r["kernelbench_known"]) for r in verdict_counts(CSV_ROWS)}
    assert by["returned an input"] == (1, 1) and by["correct"] == (0, 0)


def test_claims_are_compared_on_the_pairs_each_profile_passes():
    by = {r["profile"]: r for r in claims_table(CSV_ROWS, "eager")}
    assert by["strict"]["pairs"] == 1 and by["strict"]["measured_geomean"] == pytest.approx(2.0)
    assert by["strict"]["below_claim"] == 1
    assert by["kernelbench"]["pairs"] == 2 and by["kernelbench"]["claimed_geomean"] == pytest.approx(math.sqrt(2.0))
    assert by["kernelbench"]["below_claim"] == 1


def test_claims_count_the_pairs_that_ran_without_an_extension_that_did_not_build():
    fallback = {**_row("e", "1", speedup="1.0", claimed="5.0", strict="1", loose="1"),
                "notes": "extension 'k' failed to build in the build step (main.cpp:4:46: error: ...); ..."}
    by = {r["profile"]: r for r in claims_table([*CSV_ROWS, fallback], "eager")}
    assert (by["strict"]["pairs"], by["strict"]["without_extension"]) == (2, 1)


def _pair_records(load: float, time: float) -> list[dict]:
    account = {"candidate load": load, "candidate time": time}
    return [{"extra": {"task_phase_s": account}}, {"extra": {"task_phase_s": account}}]  # one per baseline


def test_phase_totals_sum_each_pairs_one_account_largest_first():
    totals = phase_totals(pair_phases(r) for r in [_pair_records(1.0, 3.0), _pair_records(2.5, 0.25), [{"extra": {}}]])
    assert totals == {"candidate load": 3.5, "candidate time": 3.25}
    assert list(totals) == ["candidate load", "candidate time"]
