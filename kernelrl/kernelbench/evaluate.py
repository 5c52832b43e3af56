"""The CPU half of `kernelrl kb eval`: discover, inspect and match tasks and candidates, then run the static
checks on each matched pair. No candidate code runs here;
`worker.py` runs the dynamic evaluation in a spawned process."""

from __future__ import annotations

from dataclasses import dataclass, field

from kernelrl.kernelbench.static_checks import scan, task_input_dtype
from kernelrl.kernelbench.tasks import Verdict, check_pair, discover, inspect_candidate, inspect_task, match


@dataclass
class StaticReport:
    verdicts: list[Verdict] = field(default_factory=list)
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
            ok_task = task is not None and task.error is None
            v.findings = scan(cand.source, task_input_dtype(task.source) if ok_task else "float32")
        report.verdicts.append(v)
    return report
