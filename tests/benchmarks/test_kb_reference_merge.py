"""benchmarks/suites/kb_reference_merge.py: per-level reference CSVs merged into one table and one audit, with the
counts the evaluator is judged by (correct under both profiles, task verdicts, kernelbench-only blindness, the rest)."""

import csv
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("kb_reference_merge", ROOT / "benchmarks/suites/kb_reference_merge.py")
merge = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(merge)

COLUMNS = ["task", "verified", "reason", "speedup", "correct_strict", "correct_kernelbench", "task_verdict",
           "tolerance_blind"]


def _write(path, rows, columns=COLUMNS):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns)
        w.writeheader()
        w.writerows(rows)


def test_levels_merge_and_each_pair_is_counted_once(tmp_path, capsys):
    _write(tmp_path / "l1.csv", [
        {"task": "a", "verified": 1, "speedup": 1.0, "correct_strict": 1, "correct_kernelbench": 1},
        {"task": "b", "verified": 0, "reason": "input-independent reference", "correct_strict": 0,
         "correct_kernelbench": 0, "task_verdict": "the reference's output barely depends on its input"}])
    _write(tmp_path / "l2.csv", [
        {"task": "c", "verified": 1, "speedup": 0.8, "correct_strict": 1, "correct_kernelbench": 0,
         "tolerance_blind": "kernelbench: ..."},
        {"task": "d", "verified": 0, "reason": "wrong values", "correct_strict": 0, "correct_kernelbench": 0}])
    _write(tmp_path / "l2_audit.csv", [{"task": "c", "profile": "strict", "output": "zeros", "within_tolerance": 1,
                                        "kernelrl_correct": 0}],
           ["task", "profile", "output", "within_tolerance", "kernelrl_correct"])
    assert merge.main([str(tmp_path / "l1.csv"), str(tmp_path / "l2.csv"), "--out", str(tmp_path / "ref")]) == 0
    out = capsys.readouterr().out
    assert "tasks 4; correct under both profiles 1; task verdict 1; blind under kernelbench only" in out
    assert "only (correct under strict) 1; other 1" in out and "other: d: wrong values" in out
    assert "tolerance audit: 1 rows, kernelrl_correct on 0" in out
    assert len(list(csv.DictReader(open(tmp_path / "ref.csv")))) == 4


def test_a_missing_input_is_one_line(tmp_path, capsys):
    assert merge.main([str(tmp_path / "none.csv"), "--out", str(tmp_path / "ref")]) == 2
    assert capsys.readouterr().err.count("\n") == 1
