"""What a hot spare saves (LocalRunner(hot_spare=True)): the KernelBench worker's CPU-capable adversarial corpus
and honest candidates, whose defence verdicts recycle the worker, run with and without a waiting spare, alternately,
`--repeats` times each; the wall time of every run, the restarts (pairs after a recycle, crash or hang) and whether
the verdicts agree. CPU worker (the restart cost here is Python's and torch's start-up, no CUDA context).

    python benchmarks/experiments/kb_hot_spare.py --repeats 3 --out benchmarks/results/cpu/hot_spare"""

import argparse
import datetime
import json
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402

from kernelrl.examples import CANDIDATES_DIR, TASKS_DIR  # noqa: E402
from kernelrl.harness.verdicts import Category, category_of  # noqa: E402
from kernelrl.kernelbench.tasks import discover  # noqa: E402
from kernelrl.kernelbench.worker import KBSettings, pair_verdict, run_pairs  # noqa: E402
from tests.gpu.kb_adversarial import meta  # noqa: E402

CORPUS = Path(__file__).resolve().parents[2] / "tests" / "gpu" / "kb_adversarial"
RESTARTING = (Category.DEFENCE, Category.CRASH)


def pairs() -> list[tuple[str, str]]:
    cheats, _ = discover([CORPUS])
    honest, _ = discover([CANDIDATES_DIR])
    out = [(str(TASKS_DIR / f"{meta(p)['task']}.py"), str(p)) for p in cheats if meta(p).get("cpu") == "yes"]
    return out + [(str(TASKS_DIR / p.name), str(p)) for p in honest]


def one_run(todo, spare: bool) -> tuple[float, dict]:
    settings = KBSettings(device="cpu", baselines=("eager",), rounds=2, calls_per_round=2, hang_timeout_s=60.0)
    started = time.perf_counter()
    out = run_pairs(todo, settings, hot_spare=spare)
    wall = time.perf_counter() - started
    # the verdict key, not its detail line: details carry numbers drawn from each run's own secret seed
    return wall, {Path(c).stem: (next((r.get("verdict") for r in out[i] if not r.get("verified")), None)
                                 or (pair_verdict(out[i])[1] or "correct")) for i, (_, c) in enumerate(todo)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    todo = pairs()
    runs, verdicts = [], {}
    for r in range(args.repeats):
        for spare in (False, True):  # alternated: drift of the machine lands on both
            wall, v = one_run(todo, spare)
            runs.append({"repeat": r, "hot_spare": spare, "wall_s": round(wall, 2)})
            if spare in verdicts and verdicts[spare] != v:
                print(f"  verdicts changed between repeats (hot_spare={spare}): "
                      f"{sorted(k for k in v if v[k] != verdicts[spare][k])}", flush=True)
            verdicts.setdefault(spare, v)
            print(f"repeat {r} hot_spare={spare}: {wall:.1f} s", flush=True)
    differ = {k: {"without": verdicts[False][k], "with": verdicts[True].get(k)} for k in verdicts[False]
              if verdicts[False][k] != verdicts[True].get(k)}
    same = not differ
    # a defence verdict recycles the worker, a crash or hang kills it: each is a restart
    restarts = sum(v != "correct" and category_of({"verified": False, "verdict": v}) in RESTARTING
                   for v in verdicts[False].values())
    result = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.python_version()}, "
                         f"torch {torch.__version__}", "device": "cpu", "command": " ".join(sys.argv),
              "pairs": len(todo), "restarts": restarts, "verdicts_agree": same, "differ": differ, "runs": runs,
              "verdicts": verdicts[True]}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "hot_spare.json").write_text(json.dumps(result, indent=1) + "\n")
    walls = {s: sorted(x["wall_s"] for x in runs if x["hot_spare"] == s) for s in (False, True)}
    med = {s: w[len(w) // 2] for s, w in walls.items()}
    print(f"{len(todo)} pairs, {restarts} restarts; median wall without spare {med[False]:.1f} s, with "
          f"{med[True]:.1f} s; verdicts agree: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
