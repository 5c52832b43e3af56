"""The `kernelrl evolve` command: builds the targets, the population, the model client and the loop from the
command line, runs it with live progress, then prints the best candidates and exports them."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from rich.markup import escape
from rich.table import Table

from kernelrl.build.builder import cache_root
from kernelrl.evolve.budget import Budget
from kernelrl.evolve.client import LLMClient, LLMConfig
from kernelrl.evolve.export import export_best
from kernelrl.evolve.hardware import detect
from kernelrl.evolve.hgemm_target import DEFAULT_BASELINES, HgemmTarget
from kernelrl.evolve.kb_target import KernelBenchTarget
from kernelrl.evolve.loop import EvolveConfig, Evolver
from kernelrl.evolve.population import Population
from kernelrl.evolve.profile import parse_sets
from kernelrl.evolve.ui import RichEvolveUI
from kernelrl.evolve.usage import UsageLog, read_usage, totals
from kernelrl.jobs.measure import BenchError, parse_baselines
from kernelrl.kernelbench.tasks import discover
from kernelrl.run.runner import RunSettings
from kernelrl.workloads.hgemm import parse_shapes


def default_db() -> Path:
    return cache_root() / "evolve.db"


def expand_seeds(paths: list[str]) -> list[Path]:
    """Files as given; folders contribute their .cu and .py files, sorted."""
    out = []
    for text in paths:
        p = Path(text)
        if p.is_dir():
            out += sorted(f for f in p.iterdir() if f.suffix in (".cu", ".py") and not f.name.startswith("_"))
        elif p.is_file():
            out.append(p)
        else:
            raise BenchError(f"seed {text!r} not found: pass .cu files (or folders of them, e.g. LIB/kernels/)")
    return out


def make_targets(args, db: Path, command: str) -> list:
    if args.shapes:
        baselines = parse_baselines(args.baselines) if args.baselines else list(DEFAULT_BASELINES)
        settings = RunSettings(rounds=args.rounds, hang_timeout_s=args.timeout or 60.0)
        return [HgemmTarget(parse_shapes(args.shapes, acc=args.acc), db, baselines, args.objective, args.runner,
                            settings, args.arch, command, referee=getattr(args, "referee", False))]
    files, errors = discover(args.tasks)
    if errors:
        raise BenchError(errors[0])
    if not files:
        raise BenchError("no task files found: pass KernelBench-format .py files or folders to --tasks")
    kb_baselines = tuple(b.strip() for b in args.baselines.split(",") if b.strip()) if args.baselines else None
    work = db.parent / f"{db.stem}_kb"
    return [KernelBenchTarget(f, work, args.kb_device, kb_baselines, args.objective, args.rounds, args.timeout or 120.0,
                              own_kernels=getattr(args, "own_kernels", False))
            for f in files]


def run_command(args, console) -> int:
    db = Path(args.db) if args.db else default_db()
    command = "kernelrl " + shlex.join(sys.argv[1:])
    targets = make_targets(args, db, command)
    seeds = expand_seeds(args.seed)
    profile_sets = parse_sets(args.profile)
    for t in targets:
        t.preflight()  # before any model call is spent
    budget = Budget(args.budget_calls, args.budget_tokens, args.budget_minutes)
    usage_path = Path(args.usage_log) if args.usage_log else db.with_name(db.stem + ".usage.jsonl")
    usage = UsageLog(usage_path)
    client = None
    if args.budget_calls != 0:
        cfg = LLMConfig.resolve({"base_url": args.base_url, "model": args.model, "temperature": args.temperature,
                                 "top_p": args.top_p, "max_tokens": args.max_tokens, "timeout_s": args.request_timeout,
                                 "context_tokens": args.context_tokens, "tokenizer": args.tokenizer,
                                 "retries": args.retries, "concurrency": args.concurrency}, args.llm_config)
        client = LLMClient(cfg, budget, usage)
        client.resolve_model()
        console.print(f"[dim]model {cfg.model} at {cfg.base_url}; budget: {args.budget_calls} calls"
                      + (f", {args.budget_tokens} tokens" if args.budget_tokens else "")
                      + (f", {args.budget_minutes:g} min" if args.budget_minutes else "")
                      + (f"; prompts fitted to {cfg.context_tokens} tokens less max_tokens {cfg.max_tokens}, "
                         f"counted by {cfg.tokenizer}" if cfg.context_tokens else "; prompts not fitted to a context "
                         "(--context-tokens)") + "[/]", highlight=False)
    hardware = detect()
    pop = Population(db)
    ui = RichEvolveUI(console, total_calls=args.budget_calls)
    evolve_cfg = EvolveConfig(islands=args.islands, migrate_every=args.migrate_every, per_island=args.per_island,
                              top_k=args.top_k, negatives=args.negatives, repair=not args.no_repair,
                              generations=args.generations, profile_sets=profile_sets, rng_seed=args.rng_seed,
                              turns=args.turns, overlap=args.overlap)
    evolver = Evolver(targets, pop, client, hardware.describe(), evolve_cfg, budget, ui, usage)
    try:
        added = evolver.add_seeds(seeds)
        if added:
            ui.stage(f"{len(added)} seed kernels added: {', '.join(c.name for c in added)}")
        summary = evolver.run()
    finally:
        ui.finish()
    _print_best(console, pop, targets)
    counts = ", ".join(f"{n} {cat}" for cat, n in sorted(summary.outcomes.items())) or "no candidates judged"
    used = totals(read_usage(usage_path)) if usage_path.exists() else {}
    repairs = f"{summary.repairs} repair turn{'s' * (summary.repairs != 1)}"
    console.print(f"this run: {summary.generations} generations; {counts}; {repairs}; "
                  f"{summary.duplicates} repeats" + (f", {summary.copies} renamed copies" if summary.copies else "")
                  + f"; {budget.calls} calls, {budget.tokens} tokens; stopped: {summary.stop_reason}", highlight=False,
                  markup=False)
    wall = evolver.busy["wall"]
    if wall > 0:
        console.print(f"busy: evaluator {evolver.busy['evaluator'] / wall:.0%} and generator "
                      f"{evolver.busy['generator'] / wall:.0%} of {wall:.0f} s"
                      + (" (overlapped)" if args.overlap else " (one after the other; --overlap runs them at once)"),
                      highlight=False, markup=False)
    for turn, rows in _by_turn(summary.turns).items():  # multi-turn runs: how each turn did, summed over generations
        attempts, verified = sum(r["attempts"] for r in rows), sum(r["verified"] for r in rows)
        best = max((r["best_so_far"] for r in rows if r["best_so_far"]), default=None)
        console.print(f"turn {turn}: {verified} of {attempts} attempts verified; best speedup so far "
                      + (f"{best:.3f}×" if best else "none"), highlight=False, markup=False)
    console.print(f"population {db} (run again to resume); usage log {usage_path}"
                  + (f" ({used['attempts']} attempts logged in all)" if used else ""), highlight=False, markup=False)
    if args.export:
        for t in targets:
            paths = export_best(pop, t, args.export, args.export_top)
            console.print(f"exported {len(paths)} candidates of {t.title} to {args.export}", highlight=False,
                          markup=False)
    pop.close()
    return 0


def _print_best(console, pop: Population, targets: list) -> None:
    for t in targets:
        counts = pop.counts(t.key)
        table = Table(title=f"{t.title}: best verified candidates "
                            f"({', '.join(f'{n} {c}' for c, n in sorted(counts.items()))})")
        for col in ("name", "origin", "gen", "island", f"× {t.objective}", "other speedups", "regs", "smem B",
                    "spills B"):
            table.add_column(col)
        for c in pop.best(t.key, 5):
            r = c.resources or {}
            others = ", ".join(f"{s:.3f}× {b}" for b, s in c.speedups.items() if b != t.objective)
            table.add_row(escape(c.name), c.origin, str(c.generation), "seed" if c.island is None else str(c.island),
                          f"{c.score:.3f}", others, str(r.get("registers", "")), str(r.get("smem_bytes", "")),
                          str(r.get("spill_bytes", "")))
        console.print(table)


def _by_turn(rows: list[dict]) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {}
    for r in rows:
        out.setdefault(r["turn"], []).append(r)
    return dict(sorted(out.items()))
