"""Merge the reference-as-candidate CSVs of KernelBench's levels (benchmarks/suites/kb_public.py, one per level or per
part of a level: `--numbers`) into one table and one tolerance audit, and print the counts the evaluator is judged
by: tasks, correct under both profiles, carrying a task verdict (the reference ignores its input), blind under the
kernelbench profile only, anything else (named), and how many correct pairs read 0.95-1.05 over eager.

    python benchmarks/suites/kb_reference_merge.py --out benchmarks/results/h100/kernelbench/reference_250 \\
        benchmarks/results/h100/kernelbench/kb_level*_reference*.csv

writes OUT.csv and OUT_audit.csv (from each CSV's `*_audit.csv` beside it). A task that appears in more than one
input keeps its last row."""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path


def _rows(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _is_level_csv(path: Path) -> bool:
    return not path.stem.endswith("_audit")


def _blind_only(row: dict) -> bool:
    """A kernelbench-only flag: the column `tolerance_blind` where the CSV has it, else (CSVs written before it) a
    `task_verdict` naming the kernelbench profile alone ("kernelbench: ...", no "strict: ...")."""
    if "tolerance_blind" in row:
        return bool(row["tolerance_blind"])
    text = row.get("task_verdict") or ""
    return bool(text) and "strict:" not in text


def _task_level(row: dict) -> bool:
    return bool(row.get("task_verdict")) and not _blind_only(row)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csvs", nargs="+", type=Path, help="kb_public.py CSVs (their *_audit.csv are read beside them)")
    ap.add_argument("--out", required=True, type=Path, help="output path without .csv")
    args = ap.parse_args(argv)
    inputs = [p for p in args.csvs if _is_level_csv(p)]
    missing = [p for p in inputs if not p.is_file()]
    if missing:
        print(f"kb_reference_merge: no such file: {missing[0]}", file=sys.stderr)
        return 2
    by_task: dict[str, dict] = {}
    audit: dict[tuple, dict] = {}
    for path in inputs:
        for row in _rows(path):
            by_task[row["task"]] = row
        side = path.with_name(path.stem + "_audit.csv")
        for row in _rows(side) if side.is_file() else []:
            audit[(row["task"], row["profile"], row["output"])] = row
    rows = list(by_task.values())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for suffix, table in (("", rows), ("_audit", list(audit.values()))):
        if table:
            with open(args.out.with_name(args.out.name + suffix + ".csv"), "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=list(table[0]))
                w.writeheader()
                w.writerows(table)
    both = [r for r in rows if r.get("correct_strict") == "1" and r.get("correct_kernelbench") == "1"]
    task_level = [r for r in rows if _task_level(r)]
    blind = [r for r in rows if _blind_only(r) and r.get("correct_strict") == "1"]
    other = [r for r in rows if r not in both and r not in task_level and r not in blind]
    speeds = [float(r["speedup"]) for r in both if r.get("speedup")]
    near = sum(0.95 <= s <= 1.05 for s in speeds)
    print(f"tasks {len(rows)}; correct under both profiles {len(both)}; task verdict {len(task_level)}; blind "
          f"under kernelbench only (correct under strict) {len(blind)}; other {len(other)}")
    print(f"correct pairs within 0.95-1.05 over eager: {near} of {len(speeds)}")
    for r in other:
        print(f"  other: {r['task']}: {(r.get('reason') or '')[:150]}")
    if audit:
        trivial_correct = sum(a.get("kernelrl_correct") == "1" for a in audit.values())
        print(f"tolerance audit: {len(audit)} rows, kernelrl_correct on {trivial_correct}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
