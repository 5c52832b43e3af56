"""benchmarks/suites/confirmed_vs_fallback.py: each tuned shape's best kernel against the faster of its fallbacks, both
from the confirmation run, with per-class geomeans and win counts."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks" / "suites"))
import confirmed_vs_fallback  # noqa: E402

MANIFEST = {"shapes": {
    "1024x1024x1024:fp32": {"m": 1024, "n": 1024, "k": 1024, "kernel": "a", "time_us": 8.0, "dispatch": "fallback",
                            "measured_us": {"torch": 7.0, "cublaslt_auto_nn": 6.0, "a": 8.0},
                            "screening": {"kernel": "a", "time_us": 6.0, "fallback_us": 6.6}},
    "2048x2048x2048:fp32": {"m": 2048, "n": 2048, "k": 2048, "kernel": "b", "time_us": 100.0, "dispatch": "kernel",
                            "measured_us": {"torch": 110.0, "b": 100.0}},
    "64x64x64:fp32": {"m": 64, "n": 64, "k": 64, "kernel": None, "time_us": None, "dispatch": "fallback",
                      "measured_us": {}}}}


def test_the_faster_fallback_of_the_confirmation_run_is_the_yardstick():
    first, second = confirmed_vs_fallback.rows(MANIFEST)  # the untuned shape is left out
    assert (first["fallback"], first["confirmed_gain"], first["screening_gain"]) == ("cublaslt_auto_nn", 0.75, 1.1)
    assert (second["class"], second["confirmed_gain"], second["screening_gain"]) == ("medium", 1.1, "")


def test_the_summary_counts_wins_and_dispatches_per_class():
    lines = confirmed_vs_fallback.summary(confirmed_vs_fallback.rows(MANIFEST))
    medium = next(line for line in lines if line.startswith("medium")).split()
    assert medium[1:] == ["2", f"{(0.75 * 1.1) ** 0.5:.3f}", "1", "1"]
