"""The memory plan on a GPU (kernelrl/kernelbench/memory_plan.py), two ways:

  sizes   KernelBench's largest tasks at real size as self-pairs (the task's Model as the candidate), every
          baseline: each pair's verdict, the plan's note, and its `memory` record (the plan's peak beside the pair's
          own peak allocation above the models);
  spills  the adversarial corpus and the honest candidates of tests/gpu/test_kernelbench_gpu.py with every spill
          forced (copies on the host, baselines released after each pair): each must get the same verdict as
          without.

    python benchmarks/experiments/kb_memory_probe.py sizes --kernelbench .carry/KernelBench \
      [--tasks 19_ReLU ...] [--cap-gib 79]
    python benchmarks/experiments/kb_memory_probe.py spills"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from kernelrl.kernelbench.worker import KBSettings, pair_verdict, run_pairs, worker_main  # noqa: E402

LARGEST = ("level1/19_ReLU", "level1/19_ReLU", "level1/96_HuberLoss", "level1/45_Average_Pooling_2D",
           "level1/39_L2Norm_", "level1/34_InstanceNorm")


def spilling_worker(conn, payload):
    """The worker with every spill forced on each task's plan (no check reduced)."""
    from kernelrl.kernelbench import memory_plan

    original = memory_plan.plan

    def every_spill(*args, **kwargs):
        plan = original(*args, **kwargs)
        return memory_plan._made(replace(plan, keep_baselines=False, prev_ref_on_host=True, pristine_on_host=True,
                                         pool_on_host=True))
    memory_plan.plan = every_spill
    worker_main(conn, payload)


def show(name: str, records: list[dict], started: float):
    ok, reason = pair_verdict(records)
    extra = (records[0].get("extra") or {}) if records else {}
    print(f"[{time.perf_counter() - started:5.0f} s] {name}: {'correct' if ok else reason}", flush=True)
    for note in extra.get("notes", []):
        if note.startswith("memory plan"):
            print(f"    {note}", flush=True)
    if extra.get("memory"):
        print(f"    memory: {extra['memory']}", flush=True)
    for r in records:
        if r.get("baseline_reason"):
            print(f"    {r['baseline']}: {r['baseline_reason']}", flush=True)
        elif r.get("speedup"):
            print(f"    {r['baseline']}: speedup {r['speedup']:.3f}", flush=True)


def sizes(args):
    root = Path(args.kernelbench) / "KernelBench"
    work = Path(tempfile.mkdtemp())
    pairs, names = [], []
    for k, name in enumerate(args.tasks):
        task = root / f"{name}.py"
        cand = work / f"{k}_{task.name}"
        cand.write_text(re.sub(r"\bModel\b", "ModelNew", task.read_text()))
        pairs.append((str(task), str(cand)))
        names.append(name)
    settings = KBSettings(device="cuda", rounds=args.rounds, hang_timeout_s=300.0, memory_cap_gib=args.cap_gib,
                          **({"baselines": tuple(args.baselines.split(","))} if args.baselines else {}))
    started = time.perf_counter()
    seen = set()

    def on_records(i, records):
        if i not in seen and len(records) >= len(settings.baselines):
            seen.add(i)
            show(names[i], records, started)
    out = run_pairs(pairs, settings, on_records=on_records)
    for i, records in out.items():
        if i not in seen:
            show(names[i], records, started)


def spills(args):
    from kernelrl.examples import CANDIDATES_DIR, TASKS_DIR
    from kernelrl.kernelbench.tasks import discover
    from tests.gpu.kb_adversarial import meta

    adversarial, _ = discover([Path(__file__).resolve().parents[2] / "tests" / "gpu" / "kb_adversarial"])
    honest, _ = discover([CANDIDATES_DIR])
    pairs = [(TASKS_DIR / f"{meta(p)['task']}.py", p, meta(p)["reason"]) for p in adversarial]
    pairs += [(TASKS_DIR / p.name, p, None) for p in honest]
    settings = KBSettings(device="cuda", baselines=("eager",), rounds=5, hang_timeout_s=180.0)
    out = run_pairs([(str(t), str(c)) for t, c, _ in pairs], settings, worker_target=spilling_worker)
    bad = 0
    for i, (_, cand, expected) in enumerate(pairs):
        ok, reason = pair_verdict(out[i])
        spilled = any("memory plan" in n for r in out[i] for n in (r.get("extra") or {}).get("notes", []))
        good = (ok if expected is None else (not ok and reason.startswith(expected))) and spilled
        bad += not good
        print(f"{'ok  ' if good else 'FAIL'} {cand.stem}: {'correct' if ok else reason}"
              + ("" if expected is None else f" (expected {expected})") + ("" if spilled else " [no spill note]"),
              flush=True)
    print(f"{len(pairs) - bad} of {len(pairs)} pairs as expected with every spill forced")
    return 1 if bad else 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    s = sub.add_parser("sizes")
    s.add_argument("--kernelbench", required=True)
    s.add_argument("--tasks", nargs="*", default=list(LARGEST), help="levelN/stem, in order (repeat: a reused task)")
    s.add_argument("--cap-gib", type=float, default=None, help="plan as on a card of this many GiB")
    s.add_argument("--rounds", type=int, default=2)
    s.add_argument("--baselines", default=None, help="comma-separated (default: all)")
    sub.add_parser("spills")
    args = ap.parse_args(argv)
    return sizes(args) if args.what == "sizes" else spills(args)


if __name__ == "__main__":
    raise SystemExit(main())
