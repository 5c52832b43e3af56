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
  neither    no sampled checks and no watch: only the calls and what every method's turn does.

    python benchmarks/experiments/kb_selfpair_probe.py --kernelbench .carry/KernelBench > OUT/kb_selfpair_probe.log"""

import argparse
import gc
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from kernelrl.kernelbench import timing  # noqa: E402
from kernelrl.kernelbench.worker import KBSettings, pair_verdict, run_pairs, worker_main  # noqa: E402

TASKS = ("19_MobileNetV1", "24_EfficientNetB2", "4_LeNet5")


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


VARIANTS = {"as_is": None, "ref_object": ref_object_worker, "no_gc": no_gc_worker, "no_checks": no_checks_worker,
            "no_watch": no_watch_worker, "neither": neither_worker}

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernelbench", required=True)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp())
    pairs = []
    for name in TASKS:
        task = Path(args.kernelbench) / "KernelBench" / "level3" / f"{name}.py"
        cand = work / task.name
        cand.write_text(re.sub(r"\bModel\b", "ModelNew", task.read_text()))
        pairs.append((str(task), str(cand)))
    for variant, target in VARIANTS.items():
        out = run_pairs(pairs, KBSettings(device="cuda", baselines=("eager",), rounds=3), worker_target=target)
        for i, name in enumerate(TASKS):
            ok, reason = pair_verdict(out[i])
            rec = out[i][0] if out[i] else {}
            print(f"{variant:10s} {name:20s} {'correct' if ok else reason} speedup {rec.get('speedup')} "
                  f"cand {rec.get('candidate_us')} eager {rec.get('baseline_us')}", flush=True)
