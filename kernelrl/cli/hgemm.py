"""The HGEMM commands: `kernelrl bench` and `kernelrl eval` (build candidates, verify and time them beside the
baselines: the bench job, kernelrl.jobs.measure), `kernelrl record` (the GEMM shapes a script runs), `kernelrl tune`
(search the kernel spaces per shape, write a tuned library) and `kernelrl library build|info`. Loading this module
loads torch (kernelrl.jobs.measure, kernelrl.tune, kernelrl.library, kernelrl.workloads.record): the CLI imports it
only to run one of these commands."""

from __future__ import annotations

import runpy
import shlex
import sys
from pathlib import Path

from rich.table import Table

from kernelrl.build.builder import LocalBuilder
from kernelrl.build.toolchain import Toolchain
from kernelrl.cli.report import print_summary
from kernelrl.cli.ui import RichUI, console, err_console
from kernelrl.errors import BenchError
from kernelrl.harness.stats import geomean
from kernelrl.jobs.measure import (BenchConfig, default_db, expand_candidates, parse_baselines, parse_modes,
                                   run_bench)
from kernelrl.library.build import build_library, library_info
from kernelrl.library.policy import dispatch_label
from kernelrl.results import summarize
from kernelrl.run.runner import RunSettings
from kernelrl.space import SPACES
from kernelrl.tune import TuneConfig, prebuild, tune
from kernelrl.workloads.hgemm import parse_shapes, problems_from_shapes_file
from kernelrl.workloads.record import RecordError, record


def cmd_bench(args) -> int:
    """`kernelrl bench` and `kernelrl eval`."""
    shapes = args.shapes if args.command == "bench" else args.shape
    candidates = expand_candidates(args.candidates if args.command == "bench" else [args.file])
    cfg = BenchConfig(problems=parse_shapes(shapes, acc=args.acc, layout=args.layout, dtype=args.dtype),
                      modes=parse_modes(args.mode),
                      candidates=candidates, baselines=parse_baselines(args.baselines),
                      settings=RunSettings(cache=args.cache, qps=args.qps, rounds=args.rounds,
                                           hang_timeout_s=args.timeout),
                      db_path=Path(args.db) if args.db else default_db(), csv_path=args.csv, arch=args.arch,
                      runner=args.runner, command="kernelrl " + shlex.join(sys.argv[1:]),
                      cuda_l2_untimed_padding=args.untimed_padding, ray_address=args.ray,
                      referee=getattr(args, "referee", False),
                      library=Path(args.library) if getattr(args, "library", None) else None)
    if cfg.settings.rounds < 1:
        raise SystemExit("kernelrl: --rounds must be at least 1")
    ui = RichUI()
    try:
        outcome = run_bench(cfg, ui)
    finally:
        ui.finish()
    env = outcome.env
    console.print(f"[dim]{env.get('gpu')} · driver {env.get('driver')} · CUDA {env.get('cuda_runtime')} · "
                  f"torch {env.get('torch')} · cuBLAS {env.get('cublas')} · SM clock at start "
                  f"{env.get('sm_clock_mhz')} MHz[/]")
    if args.command == "eval":
        _print_eval(outcome.rows)
    else:
        print_summary(summarize(outcome.rows))
    console.print(f"measured {outcome.measured_tasks} shapes ({outcome.resumed_tasks} resumed) in "
                  f"{outcome.seconds:.1f} s; cuBLASLt autotuning search {outcome.lt_search_s:.1f} s; "
                  f"database {cfg.db_path}" + (f"; CSV {cfg.csv_path}" if cfg.csv_path else ""))
    return 0


def _print_eval(rows):
    table = Table(title="evaluation")
    for col in ("shape", "mode", "method", "µs (median)", "p10–p90", "TFLOP/s", "max err", "verdict"):
        table.add_column(col)
    for r in sorted(rows, key=lambda r: (r["m"], r["n"], r["k"], r["mode"], r["time_us_median"] or 1e30)):
        t = r["time_us_median"]
        table.add_row(f"{r['m']}x{r['n']}x{r['k']}", r["mode"], r["method"], f"{t:.2f}" if t else "—",
                      f"{r['time_us_p10']:.2f}–{r['time_us_p90']:.2f}" if t else "",
                      f"{r['tflops']:.1f}" if r["tflops"] else "",
                      f"{r['max_rel_err']:.2e}" if r["max_rel_err"] else "",
                      "[green]verified[/]" if r["verified"] else f"[red]{r['reason']}[/]")
    console.print(table)


def cmd_tune(args) -> int:
    families = sorted(SPACES) if args.families == "all" else [f.strip() for f in args.families.split(",") if f.strip()]
    if not families:
        raise BenchError("no kernel family is available: install kernelrl completely or pass --families")
    if args.min_gain < 1.0:
        raise BenchError(f"--min-gain {args.min_gain}: below 1 the library would dispatch kernels slower than its "
                         "fallback; pass 1 or more (1.01 is the default)")
    if args.from_db and (args.runner != "local" or args.ray or not args.db):
        raise BenchError("--from-db reads a database of real measurements: pass --db, and neither --runner dummy "
                         "nor --ray")
    if args.shapes.endswith(".json"):  # a kernelrl.record file: the model's own GEMMs (nt ones over an M grid)
        problems, notes = problems_from_shapes_file(args.shapes, acc=args.acc, m_grid=not args.no_m_grid)
        for line in notes:
            err_console.print(line)
    else:
        problems = parse_shapes(args.shapes, acc=args.acc, layout=args.layout, dtype=args.dtype)
    cfg = TuneConfig(problems=problems, families=families, out=Path(args.out),
                     top_k=args.top_k, neighbours=args.neighbours, batch=args.batch, refine=args.refine,
                     min_gain=args.min_gain, confirm=args.confirm, confirm_rounds=args.confirm_rounds,
                     budget_minutes=args.budget_minutes,
                     settings=RunSettings(rounds=args.rounds, hang_timeout_s=args.timeout),
                     db_path=Path(args.db) if args.db else None, arch=args.arch, runner=args.runner,
                     command="kernelrl " + shlex.join(sys.argv[1:]), ray_address=args.ray,
                     learn_from=args.learn_from, base=Path(args.base) if args.base else None,
                     stored_gpu=args.from_db)
    ui = RichUI()
    if args.build_only:
        try:
            built = prebuild(cfg, ui, workers=args.jobs)
        finally:
            ui.finish()
        failed = [b for b in built if not b.ok]
        console.print(f"{len(built) - len(failed)} of {len(built)} candidates in the build cache "
                      f"({sum(b.cached for b in built)} were there already)")
        for b in failed:
            console.print(f"  [red]{b.name}[/red]: {b.error}")
        return 1 if failed else 0
    try:
        results = tune(cfg, ui)
    finally:
        ui.finish()
    # over 40 shapes (a grid): one line per size class, the per-shape detail is in the manifest
    console.print(tune_summary(results) if len(results) > 40 else tune_table(results))
    return 0


def tune_table(results) -> Table:
    """One row per shape: its best kernel against the yardstick, and what the written library runs there
    (`ShapeResult.runs`, what `kernelrl library info` says too)."""
    table = Table(title="tuned shapes")
    for col in ("shape", "best kernel", "µs", "torch µs", "speedup", "dispatch"):
        table.add_column(col)
    for r in results:
        speed = r.yardstick_us / r.best_us if r.best_us and r.yardstick_us else None
        table.add_row(r.problem.name, r.best.name if r.best else "—", f"{r.best_us:.2f}" if r.best_us else "—",
                      f"{r.yardstick_us:.2f}" if r.yardstick_us else "—", f"{speed:.3f}" if speed else "—",
                      "kernel" if r.uses_kernel else dispatch_label(r.runs.name, r.problem.layout))
    return table


def tune_summary(results) -> Table:
    table = Table(title="tuned library vs torch.matmul (device mode; a shape uses its kernel only where it beats "
                        "the faster of torch.matmul and autotuned cuBLASLt)")
    for col in ("class", "shapes", "tuned", "use a kernel", "geomean", "best"):
        table.add_column(col)
    classes: dict[str, list] = {"small": [], "medium": [], "large": [], "all": []}
    for r in results:
        classes[r.problem.size_class].append(r)
        classes["all"].append(r)
    for cls, rs in classes.items():
        if not rs:
            continue
        tuned = [r for r in rs if r.yardstick_us]
        gains = [r.yardstick_us / r.library_us for r in tuned]
        table.add_row(cls, str(len(rs)), str(len(tuned)),
                      str(sum(1 for r in tuned if r.uses_kernel)),
                      f"{geomean(gains):.3f}×" if gains else "—", f"{max(gains):.2f}×" if gains else "—")
    return table


def cmd_library(args) -> int:
    """`kernelrl library build` and `kernelrl library info`."""
    if args.library_command == "info":
        print("\n".join(library_info(args.root)))
        return 0
    result = build_library(args.root, builder=LocalBuilder(Toolchain.discover(arch=args.arch)), workers=args.jobs,
                           kernels_only=args.kernels_only,
                           on_done=lambda r: print(f"{'built' if r.ok else 'FAILED'} {r.name}"
                                                   + ("" if r.ok else f": {(r.error or '').splitlines()[0][:200]}")))
    print(f"{args.root}: {len(result.built)} kernels built into lib/"
          + (f", {len(result.failed)} failed (those shapes stay on their fallback)" if result.failed else "")
          + ("; the cuBLAS shim left out (--kernels-only): build again on the GPU machine" if args.kernels_only
             else ""))
    return 1 if result.failed else 0


def cmd_record(args) -> int:
    """Run the script in this process, as `python SCRIPT ARGS` would, with the shape recorder around it."""
    argv = args.script[1:] if args.script[:1] == ["--"] else list(args.script)  # the script's own "--" stays
    if argv and Path(argv[0]).name.startswith("python"):
        argv = argv[1:]
    if not argv or not Path(argv[0]).is_file():
        raise RecordError(f"no script to run{f' ({argv[0]} not found)' if argv else ''}: "
                          f"kernelrl record -o shapes.json -- python SCRIPT [ARGS...]")
    saved = sys.argv
    sys.argv = argv
    try:
        with record(args.out) as rec:
            runpy.run_path(argv[0], run_name="__main__")
    finally:
        sys.argv = saved
    shapes = rec.shapes()
    print(f"recorded {len(shapes)} distinct GEMMs ({sum(s['calls'] for s in shapes)} calls) in {args.out}")
    return 0
