"""The suites of `python -m benchmarks`: each a list of steps over the scripts of benchmarks/suites/, the device
scripts of benchmarks/device/ and the kernelrl CLI, as their headers document them (benchmarks/README.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from benchmarks.runner import ROOT, Step, Suite

PY = sys.executable
SUITES_DIR = ROOT / "benchmarks" / "suites"
DEVICE_DIR = ROOT / "benchmarks" / "device"
KB = ".carry/KernelBench"  # where the device scripts expect a KernelBench clone


def script(name: str, *args) -> list:
    return [PY, str(SUITES_DIR / name), *args]


def kernelrl(*args) -> list:
    return [PY, "-m", "kernelrl.cli", *args]


def device(name: str) -> list:
    return ["bash", str(DEVICE_DIR / name)]


# -- hgemm: the paper grid --------------------------------------------------------------------------------------------

def _hgemm_options(ap):
    ap.add_argument("--shapes", default="paper", help="kernelrl's shape set (paper: the 1000 shapes; sample:50:0 ...)")
    ap.add_argument("--host-shapes", default="sample:50:0", help="the offline and server modes' shapes")
    ap.add_argument("--budget-minutes", default="60", help="kernelrl tune's budget (resumable: run again to go on)")
    ap.add_argument("--families", default="all", help="kernelrl tune --families")
    ap.add_argument("--library", type=Path, default=None, help="bench this library instead of OUT/lib")


def _hgemm(args, out):
    lib = args.library or out / "lib"
    db = out / "hgemm.db"
    bench = out / "tuned_paper_device.csv"
    wmma = ["--candidates", "examples/hgemm_wmma.cu", "--db", db]
    return [
        Step("baselines", kernelrl("bench", "--shapes", args.shapes, "--mode", "device", *wmma,
                                   "--csv", out / "baselines_paper_device.csv")),
        Step("tune", kernelrl("tune", "--shapes", args.shapes, "--out", lib, "--db", out / "tune.db",
                              "--families", args.families, "--budget-minutes", args.budget_minutes)),
        Step("bench", kernelrl("bench", "--library", lib, "--shapes", args.shapes, "--mode", "device", "--db", db,
                               "--csv", bench)),
        Step("host", kernelrl("bench", "--library", lib, "--shapes", args.host_shapes, "--mode", "offline,server",
                              "--db", db, "--csv", out / "tuned_sample_host.csv")),
        Step("overhead", script("dispatch_overhead.py", lib), log="dispatch_overhead.txt"),
        Step("breakdown", script("library_breakdown.py", bench, lib / "manifest.json"), gpu=False,
             log="library_breakdown.md"),
        Step("confirmed", script("confirmed_vs_fallback.py", lib / "manifest.json", out / "confirmed_vs_fallback.csv"),
             gpu=False),
        Step("held", script("tune_vs_bench.py", lib / "manifest.json", bench, out / "tune_vs_bench.csv"), gpu=False),
    ]


HGEMM = Suite(
    "hgemm", "the HGEMM paper grid: tune a library (kernelrl tune), bench it against every baseline, its dispatch "
    "overhead and analyses",
    steps=("baselines", "tune", "bench", "host", "overhead", "breakdown", "confirmed", "held"),
    default=("tune", "bench", "host", "overhead", "breakdown", "confirmed", "held"),
    gpu_steps=("baselines", "tune", "bench", "host", "overhead"), plan=_hgemm, options=_hgemm_options,
    notes="baselines: the seven baselines and the WMMA reference (device/evaluator.sh); tune and bench: the README's "
          "first command; host: offline and server modes; overhead: suites/dispatch_overhead.py; breakdown, "
          "confirmed, held: suites/library_breakdown.py, confirmed_vs_fallback.py, tune_vs_bench.py on the "
          "library and its bench (no GPU).")


# -- kernelbench: KernelBench's own tasks against themselves ----------------------------------------------------------

def _kb_options(ap):
    ap.add_argument("--kernelbench", default=KB, help=f"a KernelBench clone (default {KB})")
    ap.add_argument("--numbers", default=None, help="a level's tasks by number (45,51-52,96): those only, in their "
                                                    "own files")
    ap.add_argument("--every", default="1", help="a level's every Nth task only")
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))


def _kb(args, out):
    part = f"_{args.numbers}" if args.numbers else ""
    steps = []
    for level in ("level1", "level2", "level3"):
        argv = script("kb_public.py", "--kernelbench", args.kernelbench, "--what", level, "--every", args.every,
                      "--device", args.device, "--csv", out / f"kb_{level}{part}_reference.csv")
        if args.numbers:
            argv += ["--numbers", args.numbers]
        steps.append(Step(level, argv, log=f"kb_{level}{part}_reference.log"))
    steps.append(Step("examples", script("kb_public.py", "--kernelbench", args.kernelbench, "--what", "examples",
                                         "--device", args.device, "--csv", out / "few_shot.csv"), log="few_shot.log"))

    def merge():
        csvs = sorted(p for p in out.glob("kb_level*_reference*.csv") if not p.name.endswith("_audit.csv"))
        return script("kb_reference_merge.py", "--out", out / "reference_all", *csvs)

    steps.append(Step("merge", merge, gpu=False))
    steps.append(Step("guard", script("kb_guard_check.py", args.device), log="kb_guard_check.log"))
    steps.append(Step("corpus", script("kb_guard_corpus.py"), log="kb_guard_corpus.log"))
    return steps


KERNELBENCH = Suite(
    "kernelbench", "KernelBench's tasks against themselves at real size, level by level, merged with their tolerance "
    "audit; its examples; the worker's guard checks",
    steps=("level1", "level2", "level3", "examples", "merge", "guard", "corpus"),
    default=("level1", "level2", "level3", "examples", "merge"),
    gpu_steps=("level1", "level2", "level3", "examples", "guard", "corpus"), plan=_kb, options=_kb_options,
    notes="levelN, examples: suites/kb_public.py; merge: suites/kb_reference_merge.py over every kb_level*_reference "
          "CSV of the folder (a level measured in parts with --numbers included); guard: suites/kb_guard_check.py; "
          "corpus: suites/kb_guard_corpus.py. KernelBench is not copied into this repository: clone "
          "ScalingIntelligence/KernelBench (device/harness.sh's header says which folders).")


# -- sandbox: the worker sandbox on this machine ----------------------------------------------------------------------

def _sandbox(args, out):
    return [Step(s, device("sandbox.sh"), env={"STEPS": s, "OUT": str(out)}, log=f"{s}.out")
            for s in ("env", "diag", "sbtests", "tests")]


SANDBOX = Suite(
    "sandbox", "the worker sandbox (Landlock) on this machine: environment, which /proc grant CUDA needs, confined "
    "GPU workers measuring (device/sandbox.sh)",
    steps=("env", "diag", "sbtests", "tests"), default=("env", "diag", "sbtests"),
    gpu_steps=("env", "diag", "sbtests", "tests"), plan=_sandbox,
    notes="Each step is device/sandbox.sh with STEPS=<step> and OUT=<the folder>: env.txt, sandbox_diag.txt, "
          "gpu_tests_sandbox.log; tests: the GPU suites (tests/gpu) with the sandbox on, gpu_tests.log (TESTS picks "
          "files). KernelBench's levels under the sandbox: the kernelbench suite.")


# -- llama: the library in a Llama decoder ----------------------------------------------------------------------------

def _llama_options(ap):
    ap.add_argument("--budget-minutes", default="7", help="kernelrl tune's budget for the recorded shapes")
    ap.add_argument("--library", type=Path, default=None, help="use this library instead of OUT/lib")


def _llama(args, out):
    lib = args.library or out / "lib"

    def bench():
        spec = json.loads((out / "shapes.json").read_text())["shapes"]
        shapes = ",".join(sorted({f"{s['m']}x{s['n']}x{s['k']}" for s in spec if s["layout"] == "nt"}))
        return kernelrl("bench", "--library", lib, "--shapes", shapes, "--layout", "nt", "--dtype", "bf16", "--mode",
                        "device", "--baselines", "torch,cublas_tn,cublaslt_auto_tn", "--db", out / "tune.db",
                        "--csv", out / "gemm_device.csv")

    return [Step("record", script("llama_e2e.py", "record", "--out", out)),
            Step("tune", kernelrl("tune", "--shapes", out / "shapes.json", "--families", "wgmma", "--out", lib,
                                  "--db", out / "tune.db", "--budget-minutes", args.budget_minutes)),
            Step("bench", bench),
            Step("e2e", script("llama_e2e.py", "e2e", "--out", out, "--library", lib, "--methods", "eager,kernelrl",
                               "--append")),
            Step("compile", script("llama_e2e.py", "e2e", "--out", out, "--methods", "compile", "--append"))]


LLAMA = Suite(
    "llama", "the tuned library in a Llama decoder: its GEMMs recorded, tuned, benched, and tokens/s eager, "
    "kernelrl.patch and torch.compile (suites/llama_e2e.py)",
    steps=("record", "tune", "bench", "e2e", "compile"), default=("record", "tune", "bench", "e2e", "compile"),
    gpu_steps=("record", "tune", "bench", "e2e", "compile"), plan=_llama, options=_llama_options,
    notes="As device/llama.sh: compile runs torch.compile in a process of its own; e2e.csv and e2e.md gather both.")


# -- learning: spec policies against recorded and live rewards --------------------------------------------------------

def _learning_options(ap):
    ap.add_argument("--runs", type=Path, default=None, help="report: a folder of live runs (device/learning.sh's "
                                                            "runs/learning)")
    ap.add_argument("--population", action="append", default=[],
                    help="table: a live run's population.db (repeatable)")


def _learning(args, out):
    table = script("learning_table.py", out / "table.csv")
    for p in args.population:
        table += ["--population", p]
    return [Step("table", table, gpu=False),
            Step("recorded", script("learning_recorded.py", out / "recorded"), gpu=False),
            Step("split", script("learning_split.py"), gpu=False),
            Step("train", device("learning.sh"), env={"OUT": str(out / "live")}),
            Step("heldout", device("learning_eval.sh"), env={"OUT": str(out / "heldout")}),
            Step("report", lambda: script("learning_report.py", args.runs or ROOT / "runs" / "learning",
                                          out / "report"), gpu=False)]


LEARNING = Suite(
    "learning", "spec policies trained with the evaluator as reward: the recorded-reward table and runs (CPU), live "
    "training and held-out evaluation (GPU), the report",
    steps=("table", "recorded", "split", "train", "heldout", "report"), default=("table", "recorded"),
    gpu_steps=("train", "heldout"), plan=_learning, options=_learning_options,
    notes="table: suites/learning_table.py; recorded: suites/learning_recorded.py (the recorded replay, three seeds "
          "of plain and contrastive prompts); split: suites/learning_split.py rewrites the committed "
          "benchmarks/results/h200/learning/split.json, byte-identical (a check); train, heldout: device/learning.sh "
          "and device/learning_eval.sh (their environment variables apply); report: suites/learning_report.py.")


# -- cuda_l2: CUDA-L2's released kernels beside the library -----------------------------------------------------------

def _cuda_l2_options(ap):
    ap.add_argument("--files", default=".carry/cuda_l2",
                    help="census: a folder of CUDA-L2 files (kernels/h100_F32F16F16F32 of CUDA-L2); the GPU steps "
                         "read .carry/cuda_l2 as device/cuda_l2.sh says")


def _cuda_l2(args, out):
    def compare():
        csvs = [out / f"cuda_l2_{m}.csv" for m in ("offline", "device") if (out / f"cuda_l2_{m}.csv").exists()]
        return script("cuda_l2_compare.py", out, *csvs)

    return [Step("census", script("cuda_l2_census.py", args.files, out / "census"), gpu=False),
            *[Step(s, device("cuda_l2.sh"), env={"STEPS": s, "OUT": str(out)}, log=f"{s}.out")
              for s in ("wrapper", "offline", "device")],
            Step("compare", compare, gpu=False)]


CUDA_L2 = Suite(
    "cuda_l2", "CUDA-L2's released H100 kernels beside the tuned library and every baseline, offline and device "
    "modes, with the adapter's own cost (device/cuda_l2.sh)",
    steps=("census", "wrapper", "offline", "device", "compare"), default=("wrapper", "offline", "device", "compare"),
    gpu_steps=("wrapper", "offline", "device"), plan=_cuda_l2, options=_cuda_l2_options,
    notes="census: suites/cuda_l2_census.py (a source read, no GPU); wrapper, offline, device: device/cuda_l2.sh with "
          "STEPS=<step> (its header: what to carry, LIB, LIBRARY, DEVICE_UNTIMED; suites/cuda_l2_prebuild.py "
          "builds the wrappers ahead on a CPU machine); compare: suites/cuda_l2_compare.py over the CSVs present.")


# -- footprints: KernelBench's memory plan from shapes ----------------------------------------------------------------

def _footprints_options(ap):
    ap.add_argument("--kernelbench", default=KB, help=f"a KernelBench clone (default {KB})")
    ap.add_argument("--levels", default="1,2,3")
    ap.add_argument("--card-gib", default="79", help="the card's usable memory")
    ap.add_argument("--host-gib", default="128", help="the host's available memory")


def _footprints(args, out):
    levels = [s for s in args.levels.split(",") if s]
    return [Step("footprints", script("kb_footprints.py", "--kernelbench", args.kernelbench, "--levels", *levels,
                                      "--card-gib", args.card_gib, "--host-gib", args.host_gib,
                                      "--json", out / "kb_footprints.json"), gpu=False, log="kb_footprints.txt")]


FOOTPRINTS = Suite(
    "footprints", "each KernelBench task's memory footprint from shapes on torch's meta device, the worker's memory "
    "plan on a card of a given size, the smallest card for all (suites/kb_footprints.py)",
    steps=("footprints",), default=("footprints",), gpu_steps=(), plan=_footprints, options=_footprints_options)


# -- evolve: kernelrl evolve against a scripted model -----------------------------------------------------------------

def _evolve_options(ap):
    ap.add_argument("--runner", default=None, choices=("dummy",), help="proof: dummy for a CPU dry run")
    ap.add_argument("--tasks", default="examples/kernelbench/tasks", help="multiturn: KernelBench-format tasks")
    ap.add_argument("--limit", default="8", help="multiturn: this many tasks")
    ap.add_argument("--kb-device", default=None, choices=("cpu",), help="multiturn: cpu for a dry run")


def _evolve(args, out):
    proof = script("evolve_proof.py", out / "evolve_proof")
    if args.runner:
        proof += ["--runner", args.runner]
    multi = script("multiturn_scripted.py", out / "multiturn", "--tasks", args.tasks, "--limit", args.limit)
    if args.kb_device:
        multi += ["--kb-device", args.kb_device]
    return [Step("proof", proof, gpu=not args.runner, log="evolve_proof.log"),
            Step("multiturn", multi, gpu=not args.kb_device, log="multiturn.log")]


EVOLVE = Suite(
    "evolve", "kernelrl evolve against a scripted model on loopback: the proof run (real kernels, cheats, a repair) "
    "and the multi-turn run with and without overlap",
    steps=("proof", "multiturn"), default=("proof", "multiturn"), gpu_steps=("proof", "multiturn"), plan=_evolve,
    options=_evolve_options,
    notes="proof: suites/evolve_proof.py (needs the openai package; --runner dummy: no GPU); multiturn: "
          "suites/multiturn_scripted.py (--kb-device cpu: no GPU). For a CPU dry run of both add --gpu cpu.")


SUITES = {s.name: s for s in (HGEMM, KERNELBENCH, SANDBOX, LLAMA, LEARNING, CUDA_L2, FOOTPRINTS, EVOLVE)}
