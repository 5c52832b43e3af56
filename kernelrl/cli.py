"""The `kernelrl` command."""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from kernelrl.version import __version__

from kernelrl.errors import UserError
from kernelrl.train.eval_args import EVAL_HELP, add_eval_arguments
from kernelrl.workloads.hgemm import DTYPES, LAYOUTS

# Logs from a GPU machine are read as text: give tables room there instead of rich's 80-column default.
console = Console(width=None if sys.stdout.isatty() else 150)
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 150)


class RichUI:
    """Progress for the bench job: a bar over shapes and a line saying what runs now."""

    def __init__(self, quiet: bool = False):
        self.quiet = quiet
        self.bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), TextColumn("{task.fields[now]}"), console=console,
                                 disable=quiet, transient=False)
        self.task = None

    def stage(self, text: str):
        if not self.quiet:
            console.print(f"[dim]{text}[/]")

    def build_done(self, result):
        if result.ok:
            res = result.resources
            detail = f"{res.get('registers', '?')} regs, {res.get('smem_bytes', 0)} B smem, " \
                     f"{res.get('spill_bytes', 0)} B spills" if res else ""
            self.stage(f"  built {result.name} ({'cached' if result.cached else f'{result.seconds:.1f} s'}) {detail}")
        else:
            console.print(f"  [red]build failed[/] {result.name}: {result.error}")

    def start_tasks(self, total: int, resumed: int):
        if resumed:
            self.stage(f"{resumed} shapes already measured in the database: resumed, not measured again")
        self.bar.start()
        self.task = self.bar.add_task("shapes", total=total, now="")

    def progress_update(self, text: str):
        if self.task is not None:
            self.bar.update(self.task, now=text)

    def progress(self, task, method, phase):
        if task is not None and method is not None:  # method None: the worker is closing a task's report
            self.progress_update(f"{task.problem.name} {method} {phase}")

    def task_done(self, task, records):
        bad = {(r["method"], r["reason"]) for r in records if not r["verified"] and r["reason"] != "not timed"}
        for method, reason in sorted(bad, key=str):
            self.bar.console.print(f"  [yellow]{task.problem.name}[/] {method}: {reason}")
        if self.task is not None and task.id >= 0 and any(r["verified"] or r["reason"] for r in records):
            self.bar.advance(self.task)

    def finish(self):
        self.bar.stop()


def _add_common(p: argparse.ArgumentParser):
    p.add_argument("--acc", default="fp32", choices=["fp32", "fp16"], help="accumulator precision")
    p.add_argument("--layout", default="nn", choices=list(LAYOUTS),
                   help="nn: A @ B (B K x N, the paper's); nt: A @ W^T (W N x K, nn.Linear's x @ W^T)")
    p.add_argument("--dtype", default="fp16", choices=list(DTYPES), help="of A, B and C (bf16: with --acc fp32)")
    p.add_argument("--mode", default="device", help="device, offline, server (comma-separated)")
    p.add_argument("--cache", default="hot", choices=["hot", "cold"], help="device mode: hot L2 or rotated inputs")
    p.add_argument("--qps", type=float, default=100.0, help="server mode: mean calls per second")
    p.add_argument("--baselines", default="all", help="all, none, or a comma-separated list")
    p.add_argument("--rounds", type=int, default=7, help="interleaved timing rounds per shape")
    p.add_argument("--db", default=None, help="results database (default: $KERNELRL_CACHE/results.db)")
    p.add_argument("--csv", default=None, help="write the long-format CSV here")
    p.add_argument("--arch", default=None, help="build for this architecture (default: the GPU's), e.g. sm_90a")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds without progress before a hang verdict")
    p.add_argument("--runner", default="local", choices=["local", "dummy"],
                   help="dummy makes up times on the CPU (pipeline checks)")
    p.add_argument("--ray", default=None, metavar="ADDRESS",
                   help="spread shapes over a Ray cluster's GPUs (an address, or 'local' to start one here)")
    p.add_argument("--untimed-padding", action="store_true",
                   help="CUDA-L2 kernel files: pad and transpose the inputs outside the timed call, as CUDA-L2's "
                        "own harness does (default: inside it)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kernelrl", description="Verify and time HGEMM kernels on your GPU "
                                     "against torch.matmul, cuBLAS and cuBLASLt.")
    parser.add_argument("--version", action="version", version=f"kernelrl {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    bench = sub.add_parser("bench", help="measure baselines and candidates on a set of shapes")
    bench.add_argument("--shapes", default="sample:50:0",
                       help="paper, small, medium, large, sample:N:SEED or MxNxK[,MxNxK...]")
    bench.add_argument("--candidates", nargs="*", default=[], help="candidate .cu files or folders of them")
    bench.add_argument("--library", default=None, metavar="LIB",
                       help="a tuned library folder (kernelrl tune --out): measured as the method 'kernelrl'")
    _add_common(bench)
    ev = sub.add_parser("eval", help="verify and time one candidate, with its verdict and reasons")
    ev.add_argument("file", help="candidate .cu file")
    ev.add_argument("--shape", default="4096x4096x4096", help="shape spec, as --shapes of bench")
    _add_common(ev)
    ev.set_defaults(baselines="torch,cublas_nn,cublas_tn")
    tu = sub.add_parser("tune", help="search the kernel spaces per shape and write a tuned library")
    tu.add_argument("--shapes", default="sample:20:0",
                    help="as bench --shapes (paper for the whole grid), or a shapes.json from kernelrl record")
    tu.add_argument("--no-m-grid", action="store_true",
                    help="with a shapes.json: only the recorded M of each nt GEMM, not also M = 1, 2, 4 ... 16384")
    tu.add_argument("--out", required=True, help="library folder to write (manifest.json, kernels/, lib/)")
    tu.add_argument("--families", default="all", help="comma-separated kernel families, or all")
    tu.add_argument("--top-k", type=int, default=9, help="candidates per shape chosen by the cost model")
    tu.add_argument("--neighbours", type=int, default=2, help="extra candidates: winners of the nearest tuned shapes")
    tu.add_argument("--refine", type=int, default=0, metavar="N",
                    help="a second round: measure each winner again beside up to N one-step neighbours (other "
                         "stages, tiles, clusters, raster/swizzle) and keep the fastest")
    tu.add_argument("--confirm", type=int, default=3, metavar="N",
                    help="measure each shape's best N candidates again beside both fallbacks in a fresh run with "
                         "more rounds, and let that run pick (the fastest of a few noisy times is biased low); 0: off")
    tu.add_argument("--confirm-rounds", type=int, default=15, help="rounds of the confirmation run")
    tu.add_argument("--batch", type=int, default=100, help="shapes measured per worker run")
    tu.add_argument("--min-gain", type=float, default=1.01, metavar="X",
                    help="dispatch a kernel only where it beats the faster fallback by more than this factor (near "
                         "ties go to the library, which re-measures no worse)")
    tu.add_argument("--budget-minutes", type=float, default=None, help="stop starting new batches after this")
    tu.add_argument("--acc", default="fp32", choices=["fp32", "fp16"])
    tu.add_argument("--layout", default="nn", choices=list(LAYOUTS),
                    help="nt tunes kernels that take nn.Linear's weight as it is (N x K), for kernelrl.linear")
    tu.add_argument("--dtype", default="fp16", choices=list(DTYPES), help="of A, B and C (bf16: with --acc fp32)")
    tu.add_argument("--rounds", type=int, default=5)
    tu.add_argument("--db", default=None)
    tu.add_argument("--arch", default=None)
    tu.add_argument("--timeout", type=float, default=60.0)
    tu.add_argument("--runner", default="local", choices=["local", "dummy"])
    tu.add_argument("--build-only", action="store_true",
                    help="only compile every candidate these shapes can need into the build cache (no GPU needed "
                         "with --arch); the cache can then travel to the GPU machine")
    tu.add_argument("--jobs", type=int, default=None, help="parallel nvcc processes (default: one per core)")
    tu.add_argument("--base", default=None, metavar="LIB",
                    help="extend this tuned library: its shapes this run does not tune are kept as they are (with "
                         "their measurements, marked carried_from), and each shape this run tunes measures the "
                         "base's kernel beside the new short list")
    tu.add_argument("--learn-from", default=None, metavar="MEASUREMENTS",
                    help="correct the cost model with what this GPU measured before (a results database or a "
                         "measurements CSV of an earlier tuning run); fitted once, before any short list")
    tu.add_argument("--ray", default=None, metavar="ADDRESS",
                    help="spread shapes over a Ray cluster's GPUs (an address, or 'local' to start one here)")
    tu.add_argument("--from-db", default=None, metavar="GPU",
                    help="write the library from what --db holds for this GPU (its name as the runs recorded it, "
                         "e.g. 'NVIDIA H200'), measuring nothing: on a machine without that GPU (with --arch) it "
                         "writes the library a run there would (with this kernelrl version, whose kernel sources "
                         "and cost model make the short lists, and that run's options: --batch, --top-k, --confirm "
                         "...); batches the database lacks stay untuned")
    rec = sub.add_parser("record", help="run a Python script and record the GEMM shapes it runs (M, N, K, dtype, "
                                        "layout, bias, batch, calls)")
    rec.add_argument("-o", "--out", required=True, help="shapes file to write (JSON)")
    rec.add_argument("script", nargs=argparse.REMAINDER, help="-- python SCRIPT [ARGS...] (or SCRIPT [ARGS...])")
    lib = sub.add_parser("library", help="a tuned library folder: build its lib/ here, or show what it holds")
    lib_sub = lib.add_subparsers(dest="library_command", required=True)
    lb = lib_sub.add_parser("build", help="compile lib/ from kernels/*.cu on this machine (cached, in parallel)")
    lb.add_argument("root", help="library folder (manifest.json, kernels/)")
    lb.add_argument("--jobs", type=int, default=None, help="parallel nvcc processes (default: one per core)")
    lb.add_argument("--arch", default=None, help="build for this architecture (default: this machine's GPU), e.g. "
                                                 "sm_90a on a CPU machine building ahead")
    lb.add_argument("--kernels-only", action="store_true",
                    help="leave out the cuBLAS shim the cuBLASLt fallbacks call (it needs cuBLAS's headers): for "
                         "building the kernels ahead, into the build cache, on a machine without them")
    li = lib_sub.add_parser("info", help="what the library holds and where each shape goes")
    li.add_argument("root", help="library folder")
    sm = sub.add_parser("summarize", help="speedup tables (geomean, mean, win rate, per size class) from CSVs")
    sm.add_argument("csv", nargs="+", help="long-format result CSVs written by bench")
    sm.add_argument("--markdown", action="store_true", help="print a Markdown table")
    sm.add_argument("--vs-torch", action="store_true", help="also compare every library baseline with torch")
    rp = sub.add_parser("report", help="one self-contained HTML page: speedup maps, win rates, failures")
    rp.add_argument("results", nargs="+", help="result CSVs written by bench --csv (or kernelrl .db files)")
    rp.add_argument("-o", "--output", default="report.html", help="the HTML page to write (default: report.html)")
    rp.add_argument("--manifest", default=None, help="a kernel library's manifest.json: adds the family map")
    rp.add_argument("--method", default=None, help="the candidate to map when the results hold several")
    kb = sub.add_parser("kb", help="KernelBench-format tasks (Model / get_inputs / get_init_inputs) and candidates")
    kb_sub = kb.add_subparsers(dest="kb_command", required=True)
    kbe = kb_sub.add_parser("eval", help="match candidates (ModelNew) to tasks, run the static checks, then "
                            "verify and time each pair in a spawned worker",
                            description="Loads tasks and candidates (files or folders; KernelBench's level1/ "
                            "level2/ level3/ layout works as is), matches them by file name or --map, compares "
                            "constructor and forward signatures and scans candidates for known cheats (static "
                            "checks: a finding marks the pair flagged). Then, on --device cuda when a GPU is "
                            "visible (or --device cpu explicitly, a dry run against eager only), each pair runs in "
                            "a spawned worker: outputs checked over several seeds and two input distributions, "
                            "then timed beside the baselines; the dynamic verdict decides correctness. Exit code "
                            "1 when any pair fails.")
    kbe.add_argument("--tasks", nargs="+", required=True, help="task .py files or folders of them")
    kbe.add_argument("--candidates", nargs="+", required=True, help="candidate .py files or folders of them")
    kbe.add_argument("--map", nargs="*", default=[], metavar="TASK=CANDIDATE",
                     help="explicit pairs (stems, levelN/stem or paths), before matching by file name")
    kbe.add_argument("--device", default="cuda", choices=["cpu", "cuda"],
                     help="where the dynamic evaluation runs (cuda: static checks only when no GPU is visible)")
    kbe.add_argument("--static-only", action="store_true", help="skip the dynamic evaluation")
    kbe.add_argument("--baselines", default=None,
                     help="comma-separated: eager, compile_default, compile_reduce_overhead, cuda_graph "
                          "(default: all on cuda, eager on cpu)")
    kbe.add_argument("--rounds", type=int, default=5, help="interleaved timing rounds per pair")
    kbe.add_argument("--timeout", type=float, default=120.0, help="seconds without progress before a hang verdict")
    kbe.add_argument("--compile-timeout", type=float, default=600.0,
                     help="seconds for one candidate's extension build (built first, in parallel)")
    kbe.add_argument("--build-jobs", type=int, default=None, help="extension builds at once (default: one per core)")
    kbe.add_argument("--csv", default=None, help="write one row per (task, baseline) here (long format)")
    kbe.add_argument("--db", default=None, help="results database; each pair is stored as it finishes "
                                                "(default: $KERNELRL_CACHE/results.db, table kb_results)")
    evo = sub.add_parser("evolve", help="LLM proposer: evolve kernels with a model behind any OpenAI-compatible API",
                         description="Contrastive kernel evolution: a model sees earlier kernels with their measured "
                         "speedups, ptxas reports and profiler metrics, and the verdicts of failed ones; it explains "
                         "why the fast ones are fast, then writes a faster one, which the evaluator verifies and "
                         "times. Resumable: the population lives in --db. The tuner (kernelrl tune) stays the default "
                         "search; this one is chosen explicitly.")
    what = evo.add_mutually_exclusive_group(required=True)
    what.add_argument("--shapes", help="HGEMM shapes, as bench --shapes")
    what.add_argument("--tasks", nargs="+", help="KernelBench-format task files or folders (one population each)")
    evo.add_argument("--acc", default="fp32", choices=["fp32", "fp16"])
    evo.add_argument("--model", default=None,
                     help="model name on the server (default $KERNELRL_LLM_MODEL, else the server's only model)")
    evo.add_argument("--base-url", default=None, help="OpenAI-compatible API root (default $KERNELRL_LLM_BASE_URL, "
                     "else http://127.0.0.1:8000/v1); the key is read from $OPENAI_API_KEY")
    evo.add_argument("--llm-config", default=None, metavar="JSON", help="client settings file (base_url, model, "
                     "temperature, top_p, max_tokens, timeout_s, retries, concurrency, extra_body, ...); "
                     "command-line values win")
    evo.add_argument("--temperature", type=float, default=None)
    evo.add_argument("--top-p", type=float, default=None)
    evo.add_argument("--max-tokens", type=int, default=None, help="completion tokens per reply")
    evo.add_argument("--request-timeout", type=float, default=None, help="seconds per request attempt")
    evo.add_argument("--retries", type=int, default=None, help="retries on timeouts, 429 and 5xx (backoff doubles)")
    evo.add_argument("--concurrency", type=int, default=None, help="requests in flight at once")
    evo.add_argument("--budget-calls", type=int, default=20, help="model calls in this run (0: only evaluate seeds "
                     "and export)")
    evo.add_argument("--budget-tokens", type=int, default=None, help="stop starting calls after this many tokens")
    evo.add_argument("--budget-minutes", type=float, default=None, help="stop starting calls after this long")
    evo.add_argument("--generations", type=int, default=None, help="stop after this many generations")
    evo.add_argument("--islands", type=int, default=4, help="independent sub-populations")
    evo.add_argument("--migrate-every", type=int, default=3, help="generations between migrations (0: never)")
    evo.add_argument("--per-island", type=int, default=1, help="proposals per island per generation")
    evo.add_argument("--top-k", type=int, default=4, help="earlier candidates shown per prompt, parent included")
    evo.add_argument("--negatives", type=int, default=4, help="failed candidates shown per prompt")
    evo.add_argument("--no-repair", action="store_true", help="no second turn for candidates that do not compile")
    evo.add_argument("--seed", nargs="*", default=[], metavar="FILE",
                     help="kernels put into the population first: .cu files or folders (examples/hgemm_wmma.cu, "
                          "a tuned LIB/kernels/), .py ModelNew files with --tasks")
    evo.add_argument("--db", default=None, help="population and measurements (default: $KERNELRL_CACHE/evolve.db)")
    evo.add_argument("--usage-log", default=None, help="JSONL usage log (default: beside --db)")
    evo.add_argument("--export", default=None, metavar="DIR", help="write the best verified candidates here "
                     "(.cu files for bench --candidates, .py files for kb eval --candidates)")
    evo.add_argument("--export-top", type=int, default=5)
    evo.add_argument("--baselines", default=None, help="HGEMM: measured beside candidates (default torch,cublas_tn); "
                     "KernelBench: eager, compile_default, compile_reduce_overhead, cuda_graph")
    evo.add_argument("--objective", default=None, help="the baseline the score is a speedup over (default: the first)")
    evo.add_argument("--runner", default="local", choices=["local", "dummy"],
                     help="dummy: no GPU, no nvcc, made-up times (pipeline checks)")
    evo.add_argument("--arch", default=None)
    evo.add_argument("--rounds", type=int, default=5)
    evo.add_argument("--timeout", type=float, default=None, help="seconds without progress before a hang verdict")
    evo.add_argument("--kb-device", default="cuda", choices=["cpu", "cuda"], help="--tasks: where candidates run")
    evo.add_argument("--profile", default=None, metavar="SETS", help="Nsight Compute metrics for the best new "
                     "candidate of each generation: all, or some of time,dram,occupancy,l2,tensor,stalls")
    evo.add_argument("--rng-seed", type=int, default=None, help="seed of parent and inspiration sampling")
    tr = sub.add_parser("train", help="train a kernel-writing model: SFT, self-supervised rounds, GRPO "
                                      "(the evaluator as reward; pip install -e '.[rl]')")
    tr.add_argument("--config", default=None, help="YAML file: model, data, reward, evaluation, stages, budgets "
                                                   "(see examples/train_smoke.yaml); required unless `train eval`")
    tr.add_argument("--quiet", action="store_true", help="no progress bars")
    tr_sub = tr.add_subparsers(dest="train_command")
    add_eval_arguments(tr_sub.add_parser("eval", help=EVAL_HELP))
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command in ("bench", "eval"):
            return _bench(args)
        if args.command == "summarize":
            return _summarize(args)
        if args.command == "report":
            return _report(args)
        if args.command == "tune":
            return _tune(args)
        if args.command == "kb":
            return _kb_eval(args)
        if args.command == "evolve":
            return _evolve(args)
        if args.command == "train":
            return _train(args)
        if args.command == "record":
            return _record(args)
        if args.command == "library":
            return _library(args)
    except KeyboardInterrupt:
        err_console.print("interrupted: everything measured so far is in the database; run again to resume")
        return 130
    except UserError as exc:  # every failure the user can fix is one clear line
        print(f"kernelrl: {exc}", file=sys.stderr)  # plain: one line, no markup, no wrapping
        return 2
    return 0


def _library(args) -> int:
    from kernelrl.library.build import build_library, library_info
    if args.library_command == "info":
        print("\n".join(library_info(args.root)))
        return 0
    from kernelrl.build.builder import LocalBuilder
    from kernelrl.build.toolchain import Toolchain
    result = build_library(args.root, builder=LocalBuilder(Toolchain.discover(arch=args.arch)), workers=args.jobs,
                           kernels_only=args.kernels_only,
                           on_done=lambda r: print(f"{'built' if r.ok else 'FAILED'} {r.name}"
                                                   + ("" if r.ok else f": {(r.error or '').splitlines()[0][:200]}")))
    print(f"{args.root}: {len(result.built)} kernels built into lib/"
          + (f", {len(result.failed)} failed (those shapes stay on their fallback)" if result.failed else "")
          + ("; the cuBLAS shim left out (--kernels-only): build again on the GPU machine" if args.kernels_only
             else ""))
    return 1 if result.failed else 0


def _record(args) -> int:
    """Run the script in this process, as `python SCRIPT ARGS` would, with the shape recorder around it."""
    import runpy

    from kernelrl.workloads.record import RecordError, record
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


def _bench(args) -> int:
    from kernelrl.jobs.measure import (BenchConfig, default_db, expand_candidates, parse_baselines, parse_modes,
                                run_bench)
    from kernelrl.results import summarize
    from kernelrl.run.runner import RunSettings
    from kernelrl.workloads.hgemm import parse_shapes

    shapes = args.shapes if args.command == "bench" else args.shape
    candidates = expand_candidates(args.candidates if args.command == "bench" else [args.file])
    cfg = BenchConfig(problems=parse_shapes(shapes, acc=args.acc, layout=args.layout, dtype=args.dtype), modes=parse_modes(args.mode),
                      candidates=candidates, baselines=parse_baselines(args.baselines),
                      settings=RunSettings(cache=args.cache, qps=args.qps, rounds=args.rounds,
                                           hang_timeout_s=args.timeout),
                      db_path=Path(args.db) if args.db else default_db(), csv_path=args.csv, arch=args.arch,
                      runner=args.runner, command="kernelrl " + shlex.join(sys.argv[1:]),
                      cuda_l2_untimed_padding=args.untimed_padding, ray_address=args.ray,
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
        _print_summary(summarize(outcome.rows))
    console.print(f"measured {outcome.measured_tasks} shapes ({outcome.resumed_tasks} resumed) in "
                  f"{outcome.seconds:.1f} s; cuBLASLt autotuning search {outcome.lt_search_s:.1f} s; "
                  f"database {cfg.db_path}" + (f"; CSV {cfg.csv_path}" if cfg.csv_path else ""))
    return 0


def _tune(args) -> int:
    from kernelrl.jobs.measure import BenchError
    from kernelrl.run.runner import RunSettings
    from kernelrl.space import SPACES
    from kernelrl.tune import TuneConfig, tune
    from kernelrl.workloads.hgemm import parse_shapes, problems_from_shapes_file

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
        from kernelrl.tune import prebuild
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
    if len(results) > 40:  # a grid: one line per size class, the per-shape detail is in the manifest
        console.print(_tune_summary(results))
        return 0
    table = Table(title="tuned shapes")
    for col in ("shape", "best kernel", "µs", "torch µs", "speedup", "dispatch"):
        table.add_column(col)
    for r in results:
        speed = r.yardstick_us / r.best_us if r.best_us and r.yardstick_us else None
        table.add_row(r.problem.name, r.best.name if r.best else "—", f"{r.best_us:.2f}" if r.best_us else "—",
                      f"{r.yardstick_us:.2f}" if r.yardstick_us else "—", f"{speed:.3f}" if speed else "—",
                      "kernel" if speed and speed > 1 else "torch.matmul")
    console.print(table)
    return 0


def _tune_summary(results) -> Table:
    from kernelrl.harness.stats import geomean
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


def _evolve(args) -> int:
    from kernelrl.evolve.client import LLMError
    from kernelrl.evolve.profile import ProfileError
    from kernelrl.evolve.session import run_command

    try:
        return run_command(args, console)
    except (LLMError, ProfileError) as exc:
        print(f"kernelrl: {exc}", file=sys.stderr)  # one plain line, as main prints the evaluator's errors
        return 2


def _train(args) -> int:
    if getattr(args, "train_command", None) == "eval":
        return _train_eval(args)
    if not args.config:
        raise UserError("train: --config FILE is required (or run `kernelrl train eval ...`)")
    from kernelrl.train.config import TrainError, load_config
    from kernelrl.train.pipeline import train

    try:
        summary = train(load_config(args.config), quiet=args.quiet,
                        say=lambda text: console.print(text, markup=False, highlight=False))
    except TrainError as exc:
        print(f"kernelrl: {exc}", file=sys.stderr)
        return 2
    console.print(f"{summary['stopped']}: {len(summary['done'])} of {len(summary['phases'])} phases done; model "
                  f"{summary['model']}; metrics {summary['metrics']}", markup=False, highlight=False)
    return 0


def _train_eval(args) -> int:
    from kernelrl.train.heldout import run_heldout, table_lines

    say = lambda text: console.print(text, markup=False, highlight=False)  # noqa: E731
    summary = run_heldout(args, say=say)
    print("\n".join(table_lines(summary)))  # plain: a markdown table, unwrapped
    say(f"wrote heldout.csv, best.csv, summary.json, summary.md in {args.out}")
    return 0


def _summarize(args) -> int:
    from kernelrl.jobs.measure import BenchError
    from kernelrl.results import read_csv, summarize, summary_markdown

    rows = []
    for path in args.csv:
        if not Path(path).is_file():
            raise BenchError(f"{path}: no such CSV; pass files written by kernelrl bench --csv")
        rows += read_csv(path)
    summary = summarize(rows, baselines_vs_torch=args.vs_torch)
    if args.markdown:
        print(summary_markdown(summary))
    else:
        _print_summary(summary, every_baseline=True)
    return 0


def _report(args) -> int:
    from kernelrl.report import ReportError, build_report

    try:
        info = build_report(args.results, args.output, manifest=args.manifest, method=args.method)
    except ReportError as exc:
        print(f"kernelrl: {exc}", file=sys.stderr)
        return 2
    console.print(f"report {info['path']}: {info['bytes'] / 1e6:.2f} MB, {info['maps']} maps, "
                  f"{info['seconds']:.1f} s", markup=False, highlight=False)
    return 0


def _kb_eval(args) -> int:
    import torch
    from rich.markup import escape

    from kernelrl.kernelbench.evaluate import static_eval

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
        return _kb_dynamic(args, report)
    why = " (--static-only)" if args.static_only else "" if args.device == "cuda" and torch.cuda.is_available() \
        else f" (--device {args.device}" + (": CUDA is unavailable here)" if args.device == "cuda" else ")")
    passed = sum(v.ok for v in report.verdicts)
    console.print(f"static checks only: no GPU evaluation yet{why}; {passed} of {len(report.verdicts)} pairs "
                  f"passed; no timings measured", markup=False, highlight=False)
    return 0 if passed == len(report.verdicts) and not report.errors else 1


def _kb_dynamic(args, report) -> int:
    """Verify and time every runnable pair (task and candidate load, signatures agree) in spawned workers. A
    static finding only flags the pair: the dynamic verdict decides whether it is correct."""
    from rich.markup import escape

    from kernelrl.kernelbench.aggregate import aggregate
    from kernelrl.kernelbench.worker import DEFAULT_BASELINES, KBSettings, pair_verdict, run_pairs, task_result

    baselines = tuple(b.strip() for b in args.baselines.split(",") if b.strip()) if args.baselines else \
        (DEFAULT_BASELINES if args.device == "cuda" else ("eager",))
    unknown = [b for b in baselines if b not in DEFAULT_BASELINES]
    if unknown:
        raise SystemExit(f"kernelrl: unknown baseline {unknown[0]}; choose from {', '.join(DEFAULT_BASELINES)}")
    runnable = [v for v in report.verdicts if v.task and v.candidate and not v.reasons]
    settings = KBSettings(device=args.device, baselines=baselines, rounds=max(1, args.rounds),
                          hang_timeout_s=args.timeout, compile_timeout_s=args.compile_timeout,
                          build_jobs=args.build_jobs)
    env: dict = {}
    from kernelrl.kernelbench.store import KBResultStore
    store = KBResultStore(args.db, " ".join(sys.argv), args.device, env)
    started, done = time.perf_counter(), set()

    def on_records(i, recs):
        store.pair(runnable[i], recs)
        if i not in done:  # one progress line per pair, as it finishes
            done.add(i)
            ok, reason = pair_verdict(recs)
            print(f"[{len(done)}/{len(runnable)}] {runnable[i].task.name} <- {runnable[i].candidate.name}: "
                  f"{'correct' if ok else reason} ({time.perf_counter() - started:.0f} s)", flush=True)

    def on_build(outcome):
        print(f"built {Path(outcome.path).name} in {outcome.seconds:.1f} s"
              + (f": {outcome.error.splitlines()[0][:200]}" if outcome.error else ""), flush=True)

    try:
        out = run_pairs([(str(v.task.path), str(v.candidate.path)) for v in runnable], settings,
                        on_env=env.update, on_records=on_records, on_build=on_build) if runnable else {}
        index = {id(v): i for i, v in enumerate(runnable)}
        for v in report.verdicts:
            if id(v) not in store.by_pair:  # not evaluated, or no record came back: its verdict row
                store.pair(v, out.get(index[id(v)], []) if id(v) in index else [])
    finally:
        store.close()
    table = Table(title=f"KernelBench dynamic verdicts ({args.device})")
    for col in ("task", "candidate", "static", "verdict", "max abs err", "cand µs", *baselines):
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
                      *[f"{res.speedup(b):.2f}×" if res.speedup(b) else "—" for b in baselines])
    console.print(table)
    summary = Table(title="speedup over tasks (baseline time / candidate time; failed candidates left out)")
    for col in ("baseline", "tasks", "success", "faster", "mean", "max", "p75", "p50", "p25"):
        summary.add_column(col)
    for row in aggregate(results, baselines):
        summary.add_row(row["baseline"], str(row["tasks"]), str(row["success"]), str(row["faster"]),
                        *[f"{row[k]:.3f}" for k in ("mean", "max", "p75", "p50", "p25")])
    console.print(summary)
    if args.csv:
        from kernelrl.kernelbench.evaluate import write_csv
        write_csv(args.csv, store.rows(report.verdicts))
    console.print(f"{passed} of {len(report.verdicts)} pairs correct ({len(runnable)} evaluated on {args.device})",
                  markup=False, highlight=False)
    return 0 if passed == len(report.verdicts) and not report.errors else 1


def _print_eval(rows):
    table = Table(title="evaluation")
    for col in ("shape", "mode", "method", "µs (median)", "p10–p90", "TFLOP/s", "max err", "verdict"):
        table.add_column(col)
    for r in sorted(rows, key=lambda r: (r["m"], r["n"], r["k"], r["mode"], r["time_us_median"] or 1e30)):
        t = r["time_us_median"]
        table.add_row(f"{r['m']}x{r['n']}x{r['k']}", r["mode"], r["method"], f"{t:.2f}" if t else "—",
                      f"{r['time_us_p10']:.2f}–{r['time_us_p90']:.2f}" if t else "",
                      f"{r['tflops']:.1f}" if r["tflops"] else "", f"{r['max_rel_err']:.2e}" if r["max_rel_err"] else "",
                      "[green]verified[/]" if r["verified"] else f"[red]{r['reason']}[/]")
    console.print(table)


def _print_summary(summary, every_baseline: bool = False):
    table = Table(title="speedup (baseline time / method time), all shapes")
    for col in ("mode", "method", "vs", "shapes", "geomean", "mean", "win rate", "small", "medium", "large"):
        table.add_column(col, justify="right" if col not in ("mode", "method", "vs") else "left")
    by_key = {(s["mode"], s["method"], s["baseline"], s["class"]): s for s in summary}
    shown = ("torch", "cublas_best", "cublaslt_heur_best", "cublaslt_auto_best")
    for s in summary:
        if s["class"] != "all" or not every_baseline and s["baseline"] not in shown:
            continue
        cls = [by_key.get((s["mode"], s["method"], s["baseline"], c)) for c in ("small", "medium", "large")]
        table.add_row(s["mode"], s["method"], s["baseline"], str(s["shapes"]), f"{s['geomean']:.3f}",
                      f"{s['mean']:.3f}", f"{100 * s['win_rate']:.0f} %",
                      *[f"{c['geomean']:.2f}" if c else "—" for c in cls])
    console.print(table)


if __name__ == "__main__":
    sys.exit(main())
