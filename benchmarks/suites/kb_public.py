"""KernelBench's own material through the evaluator, from a local clone (never copied into this repository):

  level1     every level-1 task against itself (ModelNew = its Model renamed), eager baseline: every pair should be
             correct with a speedup near 1; the whole run's wall time is the evaluator's speed on real tasks.
  level2, level3  the same for those levels; --every N keeps every Nth task (a quick sample of a level).
  examples   the few-shot pairs (prompts/few_shot/model_ex_* with model_new_ex_*), the add examples
             (model_new_ex_add*.py against model_ex_add.py) and the unit-test kernels (unit_tests/test_kernels/*.py
             against level1/1_Square_matrix_multiplication_.py), which must be rejected.

    python benchmarks/suites/kb_public.py --kernelbench PATH/KernelBench --what level1 --csv OUT/kb_level1_reference.csv
    python benchmarks/suites/kb_public.py --kernelbench PATH/KernelBench --what examples \
        --csv OUT/kb_public_examples.csv

Each CSV gets an `.md` beside it: the environment, the command, the counts, the wall time and where the worker's
time went (seconds per method and phase, summed over the pairs; each row's own in its `phase_s` column)."""

from __future__ import annotations

import argparse
import csv
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from kernelrl import environment  # noqa: E402
from kernelrl.harness.verdicts import Verdict, key_of  # noqa: E402
from kernelrl.harness.tolerance import PROFILES  # noqa: E402
from kernelrl.kernelbench.aggregate import TaskResult, phase_totals, profile_table  # noqa: E402
from kernelrl.kernelbench.evaluate import task_verdict_text, tolerance_blind_text  # noqa: E402
from kernelrl.kernelbench.tasks import check_pair, inspect_candidate, inspect_task  # noqa: E402
from kernelrl.kernelbench.worker import (KBSettings, failed_record, pair_verdict, progress_line, run_pairs,  # noqa: E402
                                         task_result)

COLUMNS = ("task", "candidate", "expect", "verified", "verdict", "reason", "candidate_us", "eager_us", "speedup",
           "max_abs_err", "tolerance", "correct_strict", "correct_kernelbench", "tightest_tolerance", "phase_s",
           "task_verdict", "tolerance_blind", "time_spread")
AUDIT_COLUMNS = ("task", "profile", "output", "within_tolerance", "kernelrl_correct")


def audit_rows(task: str, records: list[dict]) -> list[dict]:
    """The tolerance audit of one task (the worker's `trivial_audit`, kernelbench/trivial.py): for each profile and
    trivial output (zeros, a constant from other inputs' outputs, the output of other inputs), whether the
    profile's atol = rtol alone accepts it (a finding about KernelBench) and whether kernelrl's judge does."""
    audit = next(((r.get("extra") or {}).get("trivial_audit") for r in records
                  if (r.get("extra") or {}).get("trivial_audit")), None) or {}
    return [{"task": task, "profile": p, "output": name, "within_tolerance": int(within),
             "kernelrl_correct": int(correct)}
            for p, by_output in audit.items() for name, (within, correct) in by_output.items()]


def parse_numbers(text: str) -> set[int]:
    """The task numbers of "21-60" or "45,51-52,96" (ValueError for anything else, an empty or reversed range
    included)."""
    out: set[int] = set()
    for part in text.split(","):
        first, _, last = part.strip().partition("-")
        lo, hi = int(first), int(last or first)
        if hi < lo:
            raise ValueError(f"reversed range {part!r}")
        out.update(range(lo, hi + 1))
    return out


def self_pairs(root: Path, level: str, work: Path, every: int = 1,
               numbers: set[int] | None = None) -> list[tuple[Path, Path, str]]:
    """Each task of `level` (every `every`th; with `numbers`, only the tasks so numbered) against itself."""
    pairs = []
    tasks = sorted((root / "KernelBench" / level).glob("*.py"), key=lambda p: int(p.stem.split("_")[0]))
    if numbers is not None:
        tasks = [t for t in tasks if int(t.stem.split("_")[0]) in numbers]
    for task in tasks[::every]:
        text = re.sub(r"\bModel\b", "ModelNew", task.read_text())
        cand = work / task.name
        cand.write_text(text)
        pairs.append((task, cand, "correct"))
    return pairs


def example_pairs(root: Path) -> list[tuple[Path, Path, str]]:
    prompts = root / "src" / "kernelbench" / "prompts"
    pairs = [(p, prompts / "few_shot" / p.name.replace("model_ex_", "model_new_ex_"), "correct")
             for p in sorted((prompts / "few_shot").glob("model_ex_*.py"))]
    for name in ("model_new_ex_add.py", "model_new_ex_add_triton.py", "model_new_ex_add_cute.py"):
        pairs.append((prompts / "model_ex_add.py", prompts / name, "correct"))
    matmul = root / "KernelBench" / "level1" / "1_Square_matrix_multiplication_.py"
    pairs += [(matmul, p, "rejected") for p in sorted((root / "src" / "kernelbench" / "unit_tests" /
                                                       "test_kernels").glob("*.py"))]
    return [(t, c, e) for t, c, e in pairs if c.exists()]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernelbench", required=True, help="a clone of github.com/ScalingIntelligence/KernelBench")
    ap.add_argument("--what", choices=("level1", "level2", "level3", "examples"), required=True)
    ap.add_argument("--every", type=int, default=1, help="a level's every Nth task only (default: all)")
    ap.add_argument("--numbers", default=None, metavar="LIST",
                    help="only the level's tasks so numbered: ranges and single numbers, comma-separated (21-60: a "
                         "level split over device calls, each with its own --csv; 45,51-52,96: tasks to measure again)")
    ap.add_argument("--csv", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    ap.add_argument("--tolerance", default="strict", choices=PROFILES, help="the profile that decides `verified`")
    args = ap.parse_args(argv)
    root = Path(args.kernelbench)
    work = Path(tempfile.mkdtemp(prefix="kb_public_"))
    numbers = None
    if args.numbers:
        try:
            numbers = parse_numbers(args.numbers)
        except ValueError:
            print(f"kb_public: --numbers takes ranges and numbers, comma-separated (e.g. 21-60 or 45,51-52,96), not "
                  f"{args.numbers!r}", file=sys.stderr)
            return 2
    pairs = example_pairs(root) if args.what == "examples" else \
        self_pairs(root, args.what, work, args.every, numbers)
    if not pairs:
        print(f"kb_public: no {args.what} tasks under {root}: --kernelbench must be a KernelBench clone (with "
              f"KernelBench/level1..3 and src/kernelbench/prompts)", file=sys.stderr)
        return 2
    started = time.perf_counter()
    static = {}
    for i, (t, c, _) in enumerate(pairs):
        reasons = check_pair(inspect_task(t), inspect_candidate(c)).reasons
        if reasons:
            static[i] = reasons[0]
    runnable = [i for i in range(len(pairs)) if i not in static]
    settings = KBSettings(device=args.device, baselines=("eager",), rounds=args.rounds, hang_timeout_s=args.timeout,
                          tolerance_profile=args.tolerance)
    env: dict = {}
    done = [0]

    seen: set[int] = set()
    records: dict[int, list[dict]] = {}  # runnable index -> the pair's records so far
    path = Path(args.csv)
    path.parent.mkdir(parents=True, exist_ok=True)

    def row(i: int) -> dict | None:
        t, c, expect = pairs[i]
        if i in static:
            return {"task": t.stem, "candidate": c.name, "expect": expect, "verified": 0, "verdict": "contract",
                    "reason": static[i]}
        recs = records.get(runnable.index(i))
        if not recs:
            return None  # not evaluated (yet): no row
        ok, reason = pair_verdict(recs)
        res = task_result(t.stem, recs, ("eager",))
        cand = next((r for r in recs if r.get("method") == "candidate"), {})
        extra = cand.get("extra") or {}
        key = key_of(failed_record(recs) or Verdict.NOT_EVALUATED)  # the failed record's key, never its text
        return {"task": t.stem, "candidate": c.name, "expect": expect, "verified": int(ok),
                "verdict": key.value if key and not ok else "", "reason": reason or "",
                "candidate_us": res.candidate_us, "eager_us": res.baseline_us.get("eager"),
                "speedup": res.speedup("eager"), "max_abs_err": cand.get("max_abs_err"),
                "tolerance": cand.get("tolerance"),
                **{f"correct_{p}": int(ok) for p, ok in (cand.get("profiles") or {}).items()},
                "tightest_tolerance": cand.get("tightest_tolerance"),
                "task_verdict": task_verdict_text(cand.get("task_verdicts")),
                "tolerance_blind": tolerance_blind_text(cand.get("task_verdicts")),
                "phase_s": json.dumps(extra.get("task_phase_s") or {}, separators=(",", ":")),
                # each side's p10/p90 (µs) and number of timed calls: why a self-pair reads off 1.00
                "time_spread": json.dumps(extra.get("time_spread") or {}, separators=(",", ":"))}

    def write_rows() -> list[dict]:
        """Every pair evaluated so far, rewritten after each pair: a run stopped by a time limit keeps its rows."""
        rows = [r for r in (row(i) for i in range(len(pairs))) if r is not None]
        tmp = path.with_suffix(".tmp")
        with open(tmp, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
            w.writeheader()
            for r in rows:
                w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})
        tmp.replace(path)
        audit = [a for i, recs in sorted(records.items()) for a in audit_rows(pairs[runnable[i]][0].stem, recs)]
        with open(path.with_name(path.stem + "_audit.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=AUDIT_COLUMNS)
            w.writeheader()
            w.writerows(audit)
        return rows

    def progress(index, recs):
        records[index] = list(recs)
        if recs and index not in seen:
            seen.add(index)
            done[0] += 1
            ok, reason = pair_verdict(recs)
            t, c, _ = pairs[runnable[index]]
            print(progress_line(done[0], len(runnable), f"{t.stem} <- {c.name}", 'correct' if ok else reason,
                                time.perf_counter() - started), flush=True)
            write_rows()

    run_pairs([(str(pairs[i][0]), str(pairs[i][1])) for i in runnable], settings, on_env=env.update,
              on_records=progress)
    seconds = time.perf_counter() - started
    rows = write_rows()
    results = [task_result(pairs[runnable[i]][0].stem, recs, ("eager",)) for i, recs in records.items()]
    results += [TaskResult(pairs[i][0].stem, None, {}, static[i]) for i in static]  # failed, counted in tasks
    correct = sum(r["verified"] for r in rows if r["expect"] == "correct")
    expected = sum(r["expect"] == "correct" for r in rows)
    rejected = sum(not r["verified"] for r in rows if r["expect"] == "rejected")
    speedups = [r["speedup"] for r in rows if r.get("speedup")]
    near = sum(0.95 <= s <= 1.05 for s in speedups)
    run_env = environment.collect({"mode": "kb", "gpu": env.get("gpu"), "torch": env.get("torch"),
                                   "cuda_runtime": env.get("cuda_runtime")})
    lines = [f"# KernelBench {args.what} through kernelrl's evaluator", "",
             f"- command: `python {' '.join(sys.argv)}`",
             f"- environment: {run_env}",
             f"- date: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}",
             f"- pairs: {len(rows)}; correct where expected: {correct} of {expected}; rejected where expected: "
             f"{rejected} of {len(rows) - expected}",
             f"- speedup over eager within 0.95-1.05: {near} of {len(speedups)} timed"
             + (f" (median {statistics.median(speedups):.3f})" if speedups else ""),
             f"- wall time of the whole run (build step, worker start-ups, every pair): {seconds:.0f} s", "",
             f"- tasks whose reference ignores its input, a trivial output passing even the strict profile "
             f"scale-aware (task_verdict): {sum(bool(r.get('task_verdict')) for r in rows)}; tasks where only "
             f"the kernelbench profile's atol = rtol cannot tell (tolerance_blind): "
             f"{sum(bool(r.get('tolerance_blind')) for r in rows)}",
             "", "| profile | tasks | excluded (task verdict) | correct | fast_0 | fast_1 | fast_1.5 | fast_2 | "
             "geomean over eager |", "|---|---|---|---|---|---|---|---|---|"]
    for t in profile_table(results, "eager"):
        lines.append(f"| {t['profile']} | {t['tasks']} | {t['excluded']} | {t['correct']} | " + " | ".join(
            f"{t[k]:.3f}" for k in ("fast_0", "fast_1", "fast_1.5", "fast_2", "geomean")) + " |")
    lines += ["", "| where the worker's time went (summed over pairs) | seconds |", "|---|---|"]
    phases = phase_totals(json.loads(r.get("phase_s") or "{}") for r in rows)
    lines += [f"| {k} | {v:.1f} |" for k, v in phases.items()]
    lines += ["", "| task | candidate | expect | verdict | speedup |", "|---|---|---|---|---|"]
    for r in rows:
        if not r["verified"] or r["expect"] == "rejected" or not (0.95 <= (r.get("speedup") or 0) <= 1.05):
            lines.append(f"| {r['task']} | {r['candidate']} | {r['expect']} | {r['reason'][:160] or 'correct'} | "
                         f"{r.get('speedup') or ''} |")
    path.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[:lines.index("| task | candidate | expect | verdict | speedup |") - 1]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
