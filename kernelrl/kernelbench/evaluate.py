"""The CPU half of `kernelrl kb eval`: discover, inspect and match tasks and candidates, then run the static
checks on each matched pair. No candidate code runs here;
`worker.py` runs the dynamic evaluation in a spawned process."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from kernelrl.files import write_csv as write_table
from kernelrl.harness.tolerance import PROFILES, input_independent
from kernelrl.harness.verdicts import Verdict
from kernelrl.kernelbench.static_checks import scan, task_input_dtype
from kernelrl.kernelbench.tasks import PairCheck, check_pair, discover, inspect_candidate, inspect_task, match


@dataclass
class StaticReport:
    verdicts: list[PairCheck] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # bad paths and bad --map entries, one line each


def parse_mapping(entries: list[str] | None) -> tuple[dict[str, str], list[str]]:
    mapping, errors = {}, []
    for entry in entries or []:
        task, sep, cand = entry.partition("=")
        if not sep or not task.strip() or not cand.strip():
            errors.append(f"--map {entry}: expected task=candidate")
        else:
            mapping[task.strip()] = cand.strip()
    return mapping, errors


def static_eval(task_paths: list[str], candidate_paths: list[str], mapping_entries: list[str] | None = None) \
        -> StaticReport:
    report = StaticReport()
    task_files, errs = discover(task_paths)
    report.errors += errs
    cand_files, errs = discover(candidate_paths)
    report.errors += errs
    mapping, errs = parse_mapping(mapping_entries)
    report.errors += errs
    tasks = [inspect_task(p) for p in task_files]
    cands = [inspect_candidate(p) for p in cand_files]
    pairs, errs = match(tasks, cands, mapping)
    report.errors += errs
    for task, cand in pairs:
        v = check_pair(task, cand)
        if cand is not None and cand.error is None:
            dtype = task_input_dtype(task.source) if task is not None and task.error is None else "float32"
            v.findings = scan(cand.source, dtype)
        report.verdicts.append(v)
    return report


CSV_COLUMNS = ("task", "candidate", "baseline", "verified", "reason", "verdict", "candidate_us", "baseline_us",
               "speedup", "max_abs_err", "max_rel_err", "baseline_reason", "static", "mode", "gpu", "torch", "profile",
               *(f"correct_{p}" for p in PROFILES), "tightest_tolerance",
               "claimed_speedup", "phase_s", "rounds_run", "task_verdict", "tolerance_blind", "kernelbench_rule",
               "notes", "time_spread", "referee_speedup")


def task_verdict_text(task_verdicts: dict | None) -> str:
    """The CSV's `task_verdict`: why the task's reference ignores its input (kernelbench/trivial.py), or ""."""
    return next(iter(task_verdicts.values())) if task_verdicts and input_independent(task_verdicts) else ""


def tolerance_blind_text(task_verdicts: dict | None) -> str:
    """The CSV's `tolerance_blind`: the profiles whose atol = rtol cannot tell right from trivial on this task
    (where a stricter one can), and why; "" otherwise."""
    if input_independent(task_verdicts):
        return ""
    return "; ".join(f"{p}: {why}" for p, why in sorted((task_verdicts or {}).items()))


def csv_rows(verdicts: list[PairCheck], runnable: list[PairCheck], records: dict[int, list[dict]],
             env: dict | None = None, claims: dict[str, dict[str, float]] | None = None) -> list[dict]:
    """Long-format rows, HGEMM-CSV style: one per (evaluated pair, baseline), and one (no baseline) per pair that
    could not be evaluated (no candidate, a bad file, mismatched signatures), with its reason. `claims`: a
    published set's claimed speedups (the task file's resolved path -> baseline -> speedup), carried into
    `claimed_speedup`."""
    env, claims = env or {}, claims or {}
    rows = []
    index = {id(v): i for i, v in enumerate(runnable)}
    for v in verdicts:
        common = {"task": v.task.name if v.task else "", "candidate": v.candidate.name if v.candidate else "",
                  "static": "; ".join(str(f) for f in v.findings), "mode": "kb", "gpu": env.get("gpu", ""),
                  "torch": env.get("torch", "")}
        if id(v) not in index:
            rows.append({**common, "verified": False, "reason": "; ".join(v.reasons) or v.status,
                         "verdict": Verdict.CONTRACT.value if v.reasons else Verdict.NOT_EVALUATED.value})
            continue
        recs = [r for r in records.get(index[id(v)], []) if r.get("method") in ("candidate", "reference")]
        if not any(r.get("baseline") for r in recs):  # a crash or hang: the runner's verdict record
            failed = next((r for r in recs if not r.get("verified")), {})
            rows.append({**common, "verified": False, "reason": failed.get("reason") or "not evaluated",
                         "verdict": failed.get("verdict") or Verdict.NOT_EVALUATED.value})
            continue
        claimed = claims.get(str(v.task.path.resolve()), {}) if v.task else {}
        for r in recs:
            by_profile = {f"correct_{p}": ok for p, ok in (r.get("profiles") or {}).items()}
            by_profile["claimed_speedup"] = claimed.get(r.get("baseline", ""))
            extra = r.get("extra") or {}
            phases = extra.get("task_phase_s")  # where the worker's time went on this pair
            rows.append({**common, **{k: r.get(k) for k in CSV_COLUMNS if k in r}, **by_profile,
                         "profiles": r.get("profiles"), "rounds_run": extra.get("rounds_run"),
                         "task_verdicts": r.get("task_verdicts"),
                         "task_verdict": task_verdict_text(r.get("task_verdicts")),
                         "tolerance_blind": tolerance_blind_text(r.get("task_verdicts")),
                         "phase_s": json.dumps(phases, separators=(",", ":")) if phases else None,
                         # what the worker had to allow for or could not do (an extension that did not build, ...)
                         "notes": "; ".join(extra.get("notes") or ()) or None,
                         # each side's p10/p90 (µs) and timed calls: a ratio read beside its noise
                         "time_spread": json.dumps(spread, separators=(",", ":"))
                         if (spread := extra.get("time_spread")) else None})
    return rows


def exported_row(stored: dict) -> dict:
    """A kb_results row (kernelrl/db/database.py) as a CSV row: the profiles' verdicts and the environment's torch
    spread into their columns."""
    env = json.loads(stored.get("env") or "{}")
    profiles = stored.get("profiles") or {}
    return {**stored, "mode": "kb", "torch": env.get("torch", ""),
            **{f"correct_{p}": ok for p, ok in profiles.items()},
            "task_verdict": task_verdict_text(stored.get("task_verdicts")),
            "tolerance_blind": tolerance_blind_text(stored.get("task_verdicts"))}


def write_csv(path: str | Path, rows: list[dict]) -> None:
    """The pairs' rows under CSV_COLUMNS, written atomically."""
    write_table(path, rows, CSV_COLUMNS)
