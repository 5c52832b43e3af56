"""The KernelBench GPU suite's pairs (tests/gpu/test_kernelbench_gpu.py's fixture: every adversarial and honest
candidate in one run) with a timeline: each build, each worker start, each phase a worker begins and each pair's
verdict, with seconds since the start, flushed line by line. A run cut short by its time limit still says where
the time went and which phase a stalled worker was in (the suite itself prints nothing until the whole run ends).

    timeout 450 python3 benchmarks/device/diag/kb_corpus_timeline.py > $OUT/kb_timeline.log 2>&1
"""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository root: tests.gpu is importable

from kernelrl.kernelbench.worker import KBSettings, pair_verdict, run_pairs  # noqa: E402
from tests.gpu.test_kernelbench_gpu import ADVERSARIAL, HONEST, HONEST_HARD, TASKS_DIR, meta  # noqa: E402

T0 = time.perf_counter()


def say(*parts) -> None:
    print(f"{time.perf_counter() - T0:8.1f}s", *parts, flush=True)


def main() -> None:
    pairs = [(TASKS_DIR / f"{meta(p)['task']}.py", p) for p in ADVERSARIAL]
    pairs += [(TASKS_DIR / p.name, p) for p in HONEST]
    pairs += [(TASKS_DIR / f"{meta(p)['task']}.py", p) for p in HONEST_HARD]
    settings = KBSettings(device="cuda", baselines=("eager",), rounds=5, hang_timeout_s=180.0, own_kernels=True)
    names = {str(c): c.stem for _, c in pairs}
    say(f"{len(pairs)} pairs")
    out = run_pairs([(str(t), str(c)) for t, c in pairs], settings,
                    on_build=lambda o: say("build", getattr(o, "name", o), getattr(o, "seconds", "")),
                    on_env=lambda env: say("worker", env),
                    on_progress=lambda task, method, phase: say("begin", getattr(task, "name", task), method, phase),
                    on_records=lambda i, recs: say("pair", names.get(str(pairs[i][1]), i), pair_verdict(recs)))
    say("done", sum(pair_verdict(r)[0] for r in out.values()), "accepted of", len(out))


if __name__ == "__main__":
    main()
