"""CUDA-L1-style tables: numbers checked by hand; failures counted, excluded or zero per the flag."""

import math

import pytest

from kernelrl.kernelbench.aggregate import BASELINES, TaskResult, aggregate


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
