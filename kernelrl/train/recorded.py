"""Recorded rewards: a replay of committed measurements (spec x shape -> time or verdict) in place of the GPU.

The same trainer and the same reward code run against it, so learning can be tested on a CPU: a table of what
the evaluator said on the H200 about each spec on each shape, side by side with a baseline measured in the same
run. A spec the table never measured on a shape is `unrecorded` (reward 0, counted apart): the replay knows only
what was measured, and says so. Table columns: spec (canonical text), shape (MxNxK), acc, us, baseline,
baseline_us, verdict (empty when verified), source (where the row was measured)."""

from __future__ import annotations

import csv
import functools
from pathlib import Path

from kernelrl.errors import UserError
from kernelrl.evolve.verdicts import categorize
from kernelrl.harness.verdicts import migrate_reason
from kernelrl.space.spec import spec_text_of
from kernelrl.train.reward import Judgement

COLUMNS = ("spec", "shape", "acc", "us", "baseline", "baseline_us", "verdict", "source")


class RecordedError(UserError, ValueError):
    pass


@functools.lru_cache(maxsize=4)
def load_table(path: str) -> dict[tuple[str, str, str], dict]:
    p = Path(path)
    if not p.is_file():
        raise RecordedError(f"{path}: no such recorded-reward table (make one with "
                            f"benchmarks/suites/learning_table.py)")
    with open(p, newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in COLUMNS[:7] if c not in (reader.fieldnames or [])]
        if missing:
            raise RecordedError(f"{path}: not a recorded-reward table (no column {', '.join(missing)})")
        return {(r["spec"], r["shape"], r["acc"]): r for r in reader}


def write_table(path: str | Path, rows: list[dict]) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)


def judge_recorded(table_path: str, shapes: tuple[str, ...], acc: str, objective: str,
                   codes: dict[str, str]) -> dict[str, Judgement]:
    """One Judgement per rendered spec source, read from the table."""
    table = load_table(table_path)
    out = {}
    for name, code in codes.items():
        spec = spec_text_of(code)
        if spec is None:
            out[name] = Judgement("malformed", "not recorded: the replay judges kernel specs only", objective)
            continue
        detail, failed = {}, None
        for shape in shapes:
            row = table.get((spec, shape, acc))
            if row is None:
                failed = Judgement("unrecorded", f"not recorded: {spec} was never measured on {shape}", objective)
                break
            if row["verdict"]:  # the table keeps reason lines only: their keys are read through the migration
                key = migrate_reason(row["verdict"])
                failed = Judgement(categorize({"verdict": key and key.value, "reason": row["verdict"]}), row["verdict"],
                                   objective, key=key and key.value)
                break
            detail[shape] = {"us": float(row["us"]), "baselines": {row["baseline"]: float(row["baseline_us"])},
                             "max_rel_err": None, "tolerance": None}  # errors are not replayed
        out[name] = failed or Judgement("ok", None, objective, detail, code_chars=len(code))
    return out

