"""`kernelrl kb eval`: KernelBench-format tasks and candidates, matched, checked statically, then verified and timed
pair by pair in spawned workers (kernelrl.kernelbench); `kernelrl kb export`: a results database's pairs as CSV."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from rich.markup import escape
from rich.table import Table

from kernelrl.build.builder import cache_root
from kernelrl.cli.ui import console
from kernelrl.db.database import Database
from kernelrl.environment import gpu_info
from kernelrl.errors import UserError
from kernelrl.harness import sandbox
from kernelrl.kernelbench.aggregate import (aggregate, claims_table, pair_phases, phase_totals, profile_table,
                                           verdict_counts)
from kernelrl.kernelbench.evaluate import exported_row, static_eval, write_csv
from kernelrl.kernelbench.published import materialize, read_published
from kernelrl.kernelbench.requirements import missing_packages
from kernelrl.kernelbench.store import KBResultStore
from kernelrl.kernelbench.worker import (DEFAULT_BASELINES, KBSettings, pair_verdict, progress_line, run_pairs,
                                         task_result)


def cmd_kb(args) -> int:
    """`kernelrl kb eval`: the static checks here, then the dynamic evaluation in spawned workers."""
    if args.kb_command == "export":
        return _export(args)
    import torch  # only to ask whether CUDA is visible: the static checks and the parent side need no torch
    args.claims = _published(args)
    report = static_eval(args.tasks, args.candidates, args.map)
    for line in report.errors:
        print(f"kernelrl: {line}", file=sys.stderr)
    table = Table(title="KernelBench static verdicts")
    for col in ("task", "candidate", "verdict", "reasons"):
        table.add_column(col)
    for v in report.verdicts:
        colour = "green" if v.ok else "yellow" if v.status == "flagged" else "red"
        reasons = [*v.reasons, *map(str, v.findings)]
        table.add_row(escape(v.task.name) if v.task else "—", escape(v.candidate.name) if v.candidate else "—",
                      f"[{colour}]{v.status}[/]", escape("\n".join(reasons)))
    console.print(table)
    dynamic = not args.static_only and (args.device == "cpu" or torch.cuda.is_available())
    if dynamic:
        return _dynamic(args, report)
    why = " (--static-only)" if args.static_only else "" if args.device == "cuda" and torch.cuda.is_available() \
        else f" (--device {args.device}" + (": CUDA is unavailable here)" if args.device == "cuda" else ")")
    passed = sum(v.ok for v in report.verdicts)
    console.print(f"static checks only: no GPU evaluation yet{why}; {passed} of {len(report.verdicts)} pairs "
                  f"passed; no timings measured", markup=False, highlight=False)
    return 0 if passed == len(report.verdicts) and not report.errors else 1


def _export(args) -> int:
    """`kernelrl kb export`: the stored rows as kb eval's CSV."""
    if not Path(args.db).is_file():
        raise UserError(f"--db {args.db}: no such database; give the file kb eval --db wrote")
    db = Database(args.db)
    try:
        rows = [exported_row(r) for r in db.kb_rows() if args.run is None or r["run_id"] == args.run]
    finally:
        db.close()
    write_csv(args.csv, rows)
    _verdict_tables(rows, "eager")
    console.print(f"{len(rows)} rows of {len({(r['task'], r['candidate']) for r in rows})} pairs written to "
                  f"{args.csv}", markup=False, highlight=False)
    return 0


def _verdict_tables(rows: list[dict], baseline: str) -> None:
    """How many pairs got each verdict, and for a published set its claims against the measured speedups."""
    counts = Table(title="verdicts (a defence verdict names a behaviour KernelBench's own rule does not check)")
    for col in ("verdict", "category", "pairs", "KernelBench's own check accepts"):
        counts.add_column(col)
    for row in verdict_counts(rows):
        rule = f"{row['kernelbench_accepts']} of {row['kernelbench_known']}" if row["kernelbench_known"] else "—"
        counts.add_row(escape(row["verdict"]), row["category"], str(row["pairs"]), rule)
    console.print(counts)
    claims = [row for row in claims_table(rows, baseline) if row["pairs"]]
    if claims:
        table = Table(title=f"claimed against measured speedup over {baseline} (pairs correct under each profile)")
        for col in ("profile", "pairs", "measured geomean", "claimed geomean", "below claim",
                    "ran without its extension (did not build here)"):
            table.add_column(col)
        for row in claims:
            table.add_row(row["profile"], str(row["pairs"]), f"{row['measured_geomean']:.3f}",
                          f"{row['claimed_geomean']:.3f}", str(row["below_claim"]), str(row["without_extension"]))
        console.print(table)


def _published(args) -> dict | None:
    """With --published: the set written as task and candidate folders (args.tasks, args.candidates point there)
    and its claimed speedups; without: None, after checking that --tasks and --candidates were given."""
    if args.published is None:
        if not args.tasks or not args.candidates:
            raise UserError("kb eval needs --tasks and --candidates (files or folders), or --published FORMAT:PATH")
        return None
    if args.tasks or args.candidates:
        raise UserError("--published brings its own tasks and candidates: leave out --tasks and --candidates")
    fmt, kernels = read_published(args.published)
    if args.published_levels:
        try:
            levels = {int(x) for x in args.published_levels.split(",") if x.strip()}
        except ValueError:
            raise UserError(f"--published-levels {args.published_levels}: give level numbers, e.g. 1,2") from None
        kernels = [k for k in kernels if k.level in levels]
    m = materialize(fmt, kernels, Path(args.published_dir) if args.published_dir else cache_root() / "published")
    args.tasks, args.candidates = [str(m.tasks)], [str(m.candidates)]
    released = sum(k.kernel_text is not None for k in kernels)
    console.print(f"published set {args.published}: {len(kernels)} tasks, {released} kernels released, written "
                  f"under {m.tasks.parent}", markup=False, highlight=False)
    return m.claims


def _dynamic(args, report) -> int:
    """Verify and time every runnable pair (task and candidate load, signatures agree) in spawned workers, or with
    --resume take a pair's verdict and times from the database where an earlier run on this GPU stored them. A
    static finding only flags the pair: the dynamic verdict decides whether it is correct."""
    baselines = tuple(b.strip() for b in args.baselines.split(",") if b.strip()) if args.baselines else \
        (DEFAULT_BASELINES if args.device == "cuda" else ("eager",))
    unknown = [b for b in baselines if b not in DEFAULT_BASELINES]
    if unknown:
        raise SystemExit(f"kernelrl: unknown baseline {unknown[0]}; choose from {', '.join(DEFAULT_BASELINES)}")
    runnable = [v for v in report.verdicts if v.task and v.candidate and not v.reasons]
    settings = KBSettings(device=args.device, baselines=baselines, rounds=max(1, args.rounds),
                          hang_timeout_s=args.timeout, compile_timeout_s=args.compile_timeout,
                          build_jobs=args.build_jobs, tolerance_profile=args.tolerance,
                          memory_cap_gib=getattr(args, "memory_cap_gib", None),
                          own_kernels=getattr(args, "own_kernels", False),
                          referee=not getattr(args, "no_referee", False),
                          settle_spread=None if args.all_rounds else KBSettings.settle_spread)
    if not settings.referee:  # never silent: the results of this run rest on the worker alone
        print("--no-referee: accepted pairs are not run again outside their worker's process; a candidate that "
              "reaches the worker's objects through raw memory could have reported its own result", flush=True)
    env: dict = {}
    store = KBResultStore(args.db, " ".join(sys.argv), args.device, env, args.claims)
    started, done = time.perf_counter(), set()

    resumed = {}
    if args.resume:
        # the GPU's name as the workers report it, from nvidia-smi: no CUDA context in this process (another
        # card's name, or none, only means nothing is taken from the database)
        gpu = (gpu_info().get("gpu") or "unknown") if args.device == "cuda" else "cpu"
        for i, v in enumerate(runnable):
            if (recs := store.resume(v, gpu, baselines, args.tolerance)) is not None:
                resumed[i] = recs
        print(f"--resume: {len(resumed)} of {len(runnable)} pairs taken from {store.db.path} (the same task and "
              f"candidate sources, tolerance profile and GPU, not failed by the evaluator itself); "
              f"{len(runnable) - len(resumed)} to evaluate", flush=True)
        for why, n in store.unconfined.items():  # trusted as stored, but not protected when they were written
            print(f"--resume: {n} of them stored by a run whose workers were not confined (sandbox: {why}): its "
                  f"candidates could have written this database", flush=True)
    todo = [i for i in range(len(runnable)) if i not in resumed]
    built_at = [started]  # when the last extension build finished: the pairs' own time starts there

    def on_records(j, recs):
        i = todo[j]
        store.pair(runnable[i], recs)
        if i not in done:  # one progress line per pair, as it finishes
            done.add(i)
            ok, reason = pair_verdict(recs)
            now = time.perf_counter()
            print(progress_line(len(done), len(todo), f"{runnable[i].task.name} <- {runnable[i].candidate.name}",
                                'correct' if ok else reason, now - started, now - built_at[0]), flush=True)

    def on_build(outcome):
        built_at[0] = time.perf_counter()
        print(f"built {Path(outcome.path).name} in {outcome.seconds:.1f} s"
              + (f": {outcome.error.splitlines()[0][:200]}" if outcome.error else "")
              + (f" ({outcome.note})" if outcome.note else ""), flush=True)

    if todo:
        print(sandbox.describe(), flush=True)  # what the candidates' processes may write; "none" where unconfined
    try:
        fresh = run_pairs([(str(runnable[i].task.path), str(runnable[i].candidate.path)) for i in todo], settings,
                          on_env=env.update, on_records=on_records, on_build=on_build, ray_address=args.ray,
                          ray_workers=args.ray_workers) if todo else {}
        out = {**resumed, **{todo[j]: recs for j, recs in fresh.items()}}
        index = {id(v): i for i, v in enumerate(runnable)}
        for v in report.verdicts:
            if id(v) not in store.by_pair:  # not evaluated, or no record came back: its verdict row
                store.pair(v, out.get(index[id(v)], []) if id(v) in index else [])
    finally:
        store.close()
    table = Table(title=f"KernelBench dynamic verdicts ({args.device})")
    claimed_col = [f"claimed {baselines[0]}"] if args.claims and baselines else []
    for col in ("task", "candidate", "static", "verdict", "max abs err", "cand µs", *baselines, *claimed_col):
        table.add_column(col)
    results, passed = [], 0
    for i, v in enumerate(runnable):
        records = out.get(i, [])
        ok, reason = pair_verdict(records)
        passed += ok
        res = task_result(v.task.name, records, baselines)
        results.append(res)
        err = next((r.get("max_abs_err") for r in records if r.get("max_abs_err") is not None), None)
        verdict = ("[green]correct[/]" if not v.findings else "[yellow]correct (flagged)[/]") if ok else \
            f"[red]{escape(reason or '')}[/]"
        table.add_row(escape(v.task.name), escape(v.candidate.name), v.status, verdict,
                      f"{err:.2e}" if err is not None else "", f"{res.candidate_us:.1f}" if res.ok else "—",
                      *[f"{res.speedup(b):.2f}×" if res.speedup(b) else "—" for b in baselines],
                      *[_claimed(args.claims, v, baselines[0]) for _ in claimed_col])
    console.print(table)
    summary = Table(title="speedup over tasks (baseline time / candidate time; failed candidates left out)")
    for col in ("baseline", "tasks", "success", "faster", "mean", "max", "p75", "p50", "p25"):
        summary.add_column(col)
    for row in aggregate(results, baselines):
        summary.add_row(row["baseline"], str(row["tasks"]), str(row["success"]), str(row["faster"]),
                        *[f"{row[k]:.3f}" for k in ("mean", "max", "p75", "p50", "p25")])
    console.print(summary)
    if baselines:
        profiles = Table(title=f"KernelBench metrics by tolerance profile (over {baselines[0]}; every task "
                               f"counts, failed ones as not fast; {args.tolerance} decides the verdicts above)")
        rows = profile_table(results, baselines[0])
        for col in ("profile", "tasks", "excluded", "correct", *[k for k in rows[0] if k.startswith("fast_")],
                    "geomean"):
            profiles.add_column(col)
        for row in rows:  # excluded: tasks that cannot tell a right output from a trivial one under the profile
            profiles.add_row(row["profile"], str(row["tasks"]), str(row["excluded"]), str(row["correct"]),
                             *[f"{row[k]:.3f}" for k in row if k.startswith("fast_")], f"{row['geomean']:.3f}")
        console.print(profiles)
    _verdict_tables(store.rows(report.verdicts), baselines[0] if baselines else "eager")
    phases = phase_totals(pair_phases(out[i]) for i in todo if i in out)
    if phases:  # where the workers' time went, over the pairs evaluated now (each pair's own: the CSV's phase_s)
        console.print("worker time by phase: " + ", ".join(f"{k} {v:.1f} s" for k, v in list(phases.items())[:8]),
                      markup=False, highlight=False)
    lacking: dict[str, int] = {}
    for v in runnable:
        for package in missing_packages(v.candidate.path):
            lacking[package] = lacking.get(package, 0) + 1
    if lacking:  # once per run, beside each pair's own environment verdict
        console.print("this environment lacks " + ", ".join(f"{p} (needed by {n} candidate{'s' * (n > 1)})"
                                                            for p, n in lacking.items())
                      + ": install them where the evaluation runs to evaluate those pairs", markup=False,
                      highlight=False)
    if args.csv:
        write_csv(args.csv, store.rows(report.verdicts))
    console.print(f"{passed} of {len(report.verdicts)} pairs correct ({len(runnable)} evaluated on {args.device})",
                  markup=False, highlight=False)
    return 0 if passed == len(report.verdicts) and not report.errors else 1


def _claimed(claims: dict, pair, baseline: str) -> str:
    value = claims.get(str(pair.task.path.resolve()), {}).get(baseline)
    return f"{value:.2f}×" if value is not None else "—"
