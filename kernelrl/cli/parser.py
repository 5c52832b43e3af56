"""The argparse tree of the `kernelrl` command: every subcommand's arguments and help (nothing here loads torch)."""

from __future__ import annotations

import argparse

from kernelrl.harness.tolerance import PROFILES
from kernelrl.train.eval_args import EVAL_HELP, add_eval_arguments
from kernelrl.version import __version__
from kernelrl.workloads.hgemm import DTYPES, LAYOUTS


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
    p.add_argument("--referee", action="store_true",
                   help="run each candidate the workers verified on a shape again in processes of its own, beside "
                        "torch alone (run/referee.py): a library's native code can forge its worker's report; about "
                        "two process starts per candidate and shape (not yet run on a GPU)")


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
    kbe.add_argument("--tasks", nargs="+", help="task .py files or folders of them")
    kbe.add_argument("--candidates", nargs="+", help="candidate .py files or folders of them")
    kbe.add_argument("--published", metavar="FORMAT:PATH", default=None,
                     help="a published kernel set instead of --tasks/--candidates, each kernel judged against the "
                          "task text it was written for, its claimed speedups in the CSV's claimed_speedup "
                          "(cuda-l1:optimized_cuda_code/h100.json from github.com/deepreinforce-ai/CUDA-L1)")
    kbe.add_argument("--published-levels", default=None, metavar="1,2",
                     help="only these KernelBench levels of a published set (a run per level fits a time limit)")
    kbe.add_argument("--published-dir", default=None,
                     help="where a published set's task and candidate files are written (default: "
                          "$KERNELRL_CACHE/published)")
    kbe.add_argument("--map", nargs="*", default=[], metavar="TASK=CANDIDATE",
                     help="explicit pairs (stems, levelN/stem or paths), before matching by file name")
    kbe.add_argument("--device", default="cuda", choices=["cpu", "cuda"],
                     help="where the dynamic evaluation runs (cuda: static checks only when no GPU is visible)")
    kbe.add_argument("--static-only", action="store_true", help="skip the dynamic evaluation")
    kbe.add_argument("--baselines", default=None,
                     help="comma-separated: eager, compile_default, compile_reduce_overhead, cuda_graph "
                          "(default: all on cuda, eager on cpu)")
    kbe.add_argument("--rounds", type=int, default=5,
                     help="interleaved timing rounds per pair, at most: a pair whose rounds each take 1 s or more "
                          "stops after two once their medians agree within 2 %% (the CSV's rounds_run)")
    kbe.add_argument("--all-rounds", action="store_true", help="time every pair for all --rounds")
    kbe.add_argument("--resume", action="store_true",
                     help="take each pair already in --db (same task and candidate sources, --tolerance and GPU; not "
                          "failed by the evaluator itself) from there instead of evaluating it again: a run cut short "
                          "goes on where it stopped (kernelrl's own version is not compared: after an upgrade, start "
                          "a new --db)")
    kbe.add_argument("--own-kernels", action="store_true",
                     help="a candidate whose call launches every kernel the reference's does (PyTorch computed its "
                          "output: a wrapped reference, a no-op or unused kernel beside it) is `reference kernels`, "
                          "not correct (on CUDA each pair that reaches the census then starts a fresh worker)")
    kbe.add_argument("--no-referee", action="store_true",
                     help="do not run accepted pairs again outside their worker's process (kernelbench/referee.py): "
                          "faster, but a candidate that reaches the worker's objects through raw memory can report "
                          "its own result (each run says so)")
    kbe.add_argument("--tolerance", default="strict", choices=list(PROFILES),
                     help="the tolerance profile that decides correctness; both are reported on every pair. "
                          "strict: fp32 1e-4, fp16/bf16 1e-2 (torchbench, KernelBench today); kernelbench: 1e-2 "
                          "for every dtype (KernelBench v0/v0.1, CUDA-L1 and published fast_p tables)")
    kbe.add_argument("--timeout", type=float, default=120.0, help="seconds without progress before a hang verdict")
    kbe.add_argument("--compile-timeout", type=float, default=600.0,
                     help="seconds for one candidate's extension build (built first, in parallel)")
    kbe.add_argument("--build-jobs", type=int, default=None, help="extension builds at once (default: one per core)")
    kbe.add_argument("--memory-cap-gib", type=float, default=None,
                     help="plan each task's memory as if the GPU had this many GiB (e.g. 79: an 80 GB card's plan on "
                          "a larger one); default: what is free (kernelrl/kernelbench/memory_plan.py)")
    kbe.add_argument("--ray", default=None, metavar="ADDRESS",
                     help="spread the pairs over a Ray cluster's GPUs, one worker each ('local': this machine's)")
    kbe.add_argument("--ray-workers", type=int, default=None, help="with --ray: at most this many workers")
    kbe.add_argument("--csv", default=None, help="write one row per (task, baseline) here (long format)")
    kbe.add_argument("--db", default=None, help="results database; each pair is stored as it finishes "
                                                "(default: $KERNELRL_CACHE/results.db, table kb_results)")
    kbx = kb_sub.add_parser("export", help="write the CSV of pairs stored in a results database (a run cut short "
                            "keeps every pair it finished)")
    kbx.add_argument("--db", required=True, help="a results database written by kb eval --db")
    kbx.add_argument("--csv", required=True, help="the long-format CSV to write (kb eval --csv's columns)")
    kbx.add_argument("--run", type=int, default=None, help="only this run's rows (run ids: the database's runs table)")
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
    evo.add_argument("--context-tokens", type=int, default=None,
                     help="the model's context window (vLLM's --max-model-len): every prompt is fitted to it less "
                          "--max-tokens, earlier candidates trimmed to fit (default: not fitted)")
    evo.add_argument("--tokenizer", default=None,
                     help="how prompts are counted: the model's tokenizer.json (or its folder), 'server' (the "
                          "server's /tokenize), or chars:N (default chars:3, an estimate)")
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
    evo.add_argument("--overlap", action="store_true",
                     help="ask for the next generation while this one is judged: the GPU and the model server work "
                          "at once, the next prompts one generation stale (without this generation's verdicts)")
    evo.add_argument("--turns", type=int, default=1,
                     help="attempts per trajectory: after each, its verdict (speedup, wrong values, compile errors) "
                          "is the model's next message, earlier replies condensed to code and a paragraph "
                          "(default 1: single-turn, with --no-repair's repair turn)")
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
    evo.add_argument("--referee", action="store_true",
                     help="--shapes: run each model-written kernel its worker verified again in processes of its own "
                          "(bench --referee; --tasks pairs always are)")
    evo.add_argument("--own-kernels", action="store_true",
                     help="--tasks: a candidate whose call launches every kernel the reference's does (PyTorch "
                          "computed its output) is `reference kernels`, not a new member")
    evo.add_argument("--profile", default=None, metavar="SETS", help="Nsight Compute metrics for the best new "
                     "candidate of each generation: all, or some of time,dram,occupancy,l2,tensor,stalls")
    evo.add_argument("--rng-seed", type=int, default=None, help="seed of parent and inspiration sampling")
    doc = sub.add_parser("doctor", help="what this machine offers (GPU, driver, nvcc, CUTLASS, ninja, sandbox ...), "
                         "what each absence disables and what to do; exit code 1 where tune and bench cannot run")
    doc.add_argument("--json", action="store_true", help="print the rows as JSON")
    tr = sub.add_parser("train", help="train a kernel-writing model: SFT, self-supervised rounds, GRPO "
                                      "(the evaluator as reward; pip install -e '.[rl]')")
    tr.add_argument("--config", default=None, help="YAML file: model, data, reward, evaluation, stages, budgets "
                                                   "(see examples/train_smoke.yaml); required unless `train eval`")
    tr.add_argument("--quiet", action="store_true", help="no progress bars")
    tr_sub = tr.add_subparsers(dest="train_command")
    add_eval_arguments(tr_sub.add_parser("eval", help=EVAL_HELP))
    return parser
