"""Why do launch-bound level-3 self-pairs read 0.91-0.94 (kb_full/summary.md)? The same pairs under three variants
of the candidate's timed call, one worker each (as `run_pairs` runs them, eager baseline, 3 rounds):

  as_is      the evaluator unchanged;
  ref_object the candidate's turns call the reference's own model object (its harness path unchanged): a reading
             below 1 here is the harness path's, near 1 the model object's;
  no_gc      Python's garbage collector off inside every timed call of every method;
  no_checks  no sampled check during the candidate's turns (the judge's Python and GPU work between its timed
             calls, which a baseline's turn does not have: a reading near 1 here points at that);
  no_watch   no watch around the candidate's timed calls (the process-level checks after each call: thousands of
             guarded attributes compared, the precision flags and the persisting-L2 limit read);
  neither    no sampled checks and no watch: only the calls and what every method's turn does;
  symmetric  the eager baseline's calls watched like the candidate's (the same process-level checks after each):
             a reading near 1 here is the fix for the watch's share;

  control    no worker at all: the reference and a copy of it (same weights) called in strict alternation in this
             process, each call timed with CUDA events after the same L2 flush, 40 calls each: the ratio a harness
             with no asymmetry at all reads, and its spread.

The H100's reference_250 (3 rounds) read 23_EfficientNetB1 1.51 where an earlier run read 0.90-0.93: `as_is` runs
at the evaluator's 3 rounds and again at `--rounds` (15 by default), REPEATS times each, so the spread of one
reading shows whether too few samples taken in blocks (one slow stretch hits three of a side's nine calls) explain
readings on both sides of 1; the variants run at `--rounds`.

    python benchmarks/experiments/kb_selfpair_probe.py --kernelbench .carry/KernelBench > OUT/kb_selfpair_probe.log"""

import argparse
import copy
import gc
import re
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402

from kernelrl.kernelbench import timing  # noqa: E402
from kernelrl.kernelbench.tasks import load_module  # noqa: E402
from kernelrl.kernelbench.worker import KBSettings, pair_verdict, run_pairs, worker_main  # noqa: E402

TASKS = ("23_EfficientNetB1,19_MobileNetV1,32_ConvolutionalVisionTransformer,7_GoogleNetInceptionV1,"
         "34_VanillaRNNHidden,1_MLP")


def ref_object_worker(conn, payload):
    original = timing._PairRounds.call

    def call(self, name, prepared):
        return self.w._call(self.ref, prepared[0]) if name == "candidate" else original(self, name, prepared)
    timing._PairRounds.call = call
    worker_main(conn, payload)


def no_gc_worker(conn, payload):
    original = timing._PairRounds.call

    def call(self, name, prepared):
        gc.disable()
        try:
            return original(self, name, prepared)
        finally:
            gc.enable()
    timing._PairRounds.call = call
    worker_main(conn, payload)


def no_checks_worker(conn, payload):
    original = timing._PairRounds.turn

    def turn(self, name, rnd):
        go = original(self, name, rnd)
        self.checks = set()  # this probe only: the evaluator itself always samples
        return go
    timing._PairRounds.turn = turn
    worker_main(conn, payload)


def _without_watch():
    original_prepare, original_after = timing._PairRounds.prepare, timing._PairRounds.after

    def prepare(self, name, rnd, rep):
        xs, pristine, watched = original_prepare(self, name, rnd, rep)
        if watched is not None:
            self.w.armed = False
        return xs, pristine, None

    def after(self, name, rnd, rep, prepared, out, error):
        if name == "candidate":
            self.w._unwatch = lambda *a, **k: None  # this probe only
        return original_after(self, name, rnd, rep, prepared, out, error)
    timing._PairRounds.prepare, timing._PairRounds.after = prepare, after


def no_watch_worker(conn, payload):
    _without_watch()
    worker_main(conn, payload)


def neither_worker(conn, payload):
    _without_watch()
    no_checks_worker(conn, payload)


def symmetric_worker(conn, payload):
    """The eager baseline's calls watched as the candidate's are (the audit hook armed, the process-level checks
    after each call): the harness's work between calls the same on both sides, checks aside."""
    original_prepare, original_after = timing._PairRounds.prepare, timing._PairRounds.after

    def prepare(self, name, rnd, rep):
        xs, pristine, watched = original_prepare(self, name, rnd, rep)
        return xs, pristine, (self.w._watch() if name != "candidate" else watched)

    def after(self, name, rnd, rep, prepared, out, error):
        if name != "candidate":
            self.w._unwatch(prepared[2], f"{name}'s timing (probe)")
        return original_after(self, name, rnd, rep, prepared, out, error)
    timing._PairRounds.prepare, timing._PairRounds.after = prepare, after
    worker_main(conn, payload)


VARIANTS = {"as_is": None, "symmetric": symmetric_worker,
            "ref_object": ref_object_worker, "no_gc": no_gc_worker, "no_checks": no_checks_worker,
            "no_watch": no_watch_worker, "neither": neither_worker}


def control(task_path: Path, calls: int = 40) -> tuple[float, float]:
    """(median reference / median copy, the copies' interquartile range over their median): strict alternation,
    CUDA events, an L2 flush before every call, no harness."""
    tmod = load_module(str(task_path))
    torch.manual_seed(0)
    with torch.device("cuda"):
        ref = tmod.Model(*tmod.get_init_inputs())
        twin = copy.deepcopy(ref)
        xs = [x.cuda() if hasattr(x, "cuda") else x for x in tmod.get_inputs()]
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    times: dict[str, list[float]] = {"ref": [], "twin": []}
    with torch.no_grad():
        for _ in range(3):
            ref(*xs), twin(*xs)
        for i in range(2 * calls):
            name, model = ("ref", ref) if i % 2 == 0 else ("twin", twin)
            flush.fill_(i & 0xFF)
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            start.record()
            model(*xs)
            end.record()
            torch.cuda.synchronize()
            times[name].append(start.elapsed_time(end))
    twin_q = statistics.quantiles(times["twin"], n=4)
    return statistics.median(times["ref"]) / statistics.median(times["twin"]), \
        (twin_q[2] - twin_q[0]) / statistics.median(times["twin"])


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernelbench", required=True)
    ap.add_argument("--tasks", default=TASKS, help="level-3 task names, comma-separated")
    ap.add_argument("--rounds", type=int, default=15, help="timed rounds of the variants (the evaluator's: 3)")
    ap.add_argument("--repeats", type=int, default=2, help="evaluations of `as_is` at each round count")
    ap.add_argument("--variants", default="ref_object,no_checks,no_watch,neither,symmetric",
                    help="comma-separated, of: " + ", ".join(VARIANTS))
    ap.add_argument("--device", default="cuda", help="cpu: a dry run of the script (no control)")
    args = ap.parse_args()
    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    work = Path(tempfile.mkdtemp())
    pairs = []
    for name in tasks:
        task = Path(args.kernelbench) / "KernelBench" / "level3" / f"{name}.py"
        cand = work / task.name
        cand.write_text(re.sub(r"\bModel\b", "ModelNew", task.read_text()))
        pairs.append((str(task), str(cand)))
    for name, (task, _) in zip(tasks, pairs) if args.device == "cuda" else ():
        ratio, iqr = control(Path(task))
        print(f"{'control':10s} r{40:<3d} {name:36s} speedup {ratio:.3f} (the copy's IQR {iqr:.1%} of its median)",
              flush=True)
    runs = [("as_is", 3, rep) for rep in range(args.repeats)] + [("as_is", args.rounds, rep)
                                                                 for rep in range(args.repeats)]
    runs += [(v, args.rounds, 0) for v in args.variants.split(",") if v and v != "as_is"]
    for variant, rounds, rep in runs:
        out = run_pairs(pairs, KBSettings(device=args.device, baselines=("eager",), rounds=rounds),
                        worker_target=VARIANTS[variant])
        for i, name in enumerate(tasks):
            ok, reason = pair_verdict(out[i])
            rec = out[i][0] if out[i] else {}
            print(f"{variant:10s} r{rounds:<3d} {name:36s} {'correct' if ok else reason} speedup {rec.get('speedup')} "
                  f"cand {rec.get('candidate_us')} eager {rec.get('baseline_us')} (repeat {rep})", flush=True)
