"""The KernelBench GPU suite's pairs (tests/gpu/test_kernelbench_gpu.py's fixture: every adversarial and honest
candidate in one run) with a timeline: each build, each worker start, each phase a worker begins and each pair's
verdict, with seconds since the start, flushed line by line. A run cut short by its time limit still says where
the time went and which phase a stalled worker was in (the suite itself prints nothing until the whole run ends).
When, once the workers run (the builds are done), no event has come for STALL_S seconds (default 120), the
child processes get SIGABRT: with PYTHONFAULTHANDLER set here (the workers inherit it) each prints every thread's
Python stack before it dies, and the run goes on (that pair's verdict is a crash). KB_DEVICE=cpu and LIMIT=N (the
first N pairs) try it on a machine without a GPU.

    timeout 450 python3 benchmarks/device/diag/kb_corpus_timeline.py > $OUT/kb_timeline.log 2>&1
"""

import os
import signal
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository root: tests.gpu is importable

from kernelrl.kernelbench.worker import KBSettings, pair_verdict, run_pairs  # noqa: E402
from tests.gpu.test_kernelbench_gpu import ADVERSARIAL, HONEST, HONEST_HARD, TASKS_DIR, meta  # noqa: E402

T0 = time.perf_counter()
LAST = [T0]
WORKERS_STARTED = threading.Event()  # the builds (children too, silent for a minute) are done by then
STALL_S = float(os.environ.get("STALL_S", "120"))
os.environ["PYTHONFAULTHANDLER"] = "1"  # the workers dump their stacks on SIGABRT


SHOWN: set[tuple[str, str]] = set()  # (pair, step) printed: a line when a pair first reaches a step, not per call


def say(*parts) -> None:
    LAST[0] = time.perf_counter()
    print(f"{LAST[0] - T0:8.1f}s", *parts, flush=True)


def began(task, method: str, phase: str) -> None:
    LAST[0] = time.perf_counter()
    step = (getattr(task, "name", str(task)), f"{method} {phase.split(':')[0].split()[-1]}")
    if step not in SHOWN:
        SHOWN.add(step)
        say("begin", *step)


def _notes(records) -> list[str]:
    """The worker's notes on a pair (an extension folder emptied and built again in the pair, a switch put
    back, ...), shortened: where a pair's time went besides its phases."""
    notes = sorted({n for r in records for n in (r.get("extra") or {}).get("notes", [])})
    speeds = [f"| worker {r['speedup']:.2f}x, referee {r['referee_speedup']:.2f}x over eager "
              f"(ruled in {(r.get('extra') or {}).get('referee_s', float('nan')):.1f} s)" for r in records
              if r.get("method") == "candidate" and r.get("speedup") and r.get("referee_speedup")]
    return [f"| {n[:160]}" for n in notes] + speeds[:1]


def _children() -> list[int]:
    """This process's child processes (workers, the hot spare, builders), from /proc."""
    out = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as f:
                mine = entry.isdigit() and int(f.read().rsplit(")", 1)[1].split()[1]) == os.getpid()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if mine and b"resource_tracker" not in f.read():  # multiprocessing's own helper
                    out.append(int(entry))
        except (OSError, ValueError, IndexError):
            pass
    return out


def _watchdog() -> None:
    while True:
        time.sleep(5)
        if WORKERS_STARTED.is_set() and time.perf_counter() - LAST[0] > STALL_S:
            pids = _children()
            say(f"no event for {STALL_S:.0f} s: SIGABRT to {pids} (their stacks follow)")
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGABRT)
                except OSError:
                    pass


def main() -> None:
    pairs = [(TASKS_DIR / f"{meta(p)['task']}.py", p) for p in ADVERSARIAL]
    pairs += [(TASKS_DIR / p.name, p) for p in HONEST]
    pairs += [(TASKS_DIR / f"{meta(p)['task']}.py", p) for p in HONEST_HARD]
    first = [n for n in os.environ.get("FIRST", "").split(",") if n]  # these candidates first (new ones, say)
    pairs.sort(key=lambda tc: first.index(tc[1].stem) if tc[1].stem in first else len(first))
    pairs = pairs[:int(os.environ.get("LIMIT", len(pairs)))]
    # what the suite expects of each pair: an adversarial candidate's reason, an honest one's acceptance
    expected = {str(c): meta(c)["reason"] if c in ADVERSARIAL else None for _, c in pairs}
    settings = KBSettings(device=os.environ.get("KB_DEVICE", "cuda"), baselines=("eager",), rounds=5,
                          hang_timeout_s=180.0, own_kernels=True)
    names = {str(c): c.stem for _, c in pairs}
    say(f"{len(pairs)} pairs")
    threading.Thread(target=_watchdog, daemon=True).start()
    out = run_pairs([(str(t), str(c)) for t, c in pairs], settings,
                    on_build=lambda o: say("build", getattr(o, "name", o), getattr(o, "seconds", "")),
                    on_env=lambda env: (WORKERS_STARTED.set(), say("worker", env)),
                    on_progress=began,
                    on_records=lambda i, recs: say("pair", names.get(str(pairs[i][1]), i), pair_verdict(recs),
                                                   _as_expected(pair_verdict(recs), expected[str(pairs[i][1])]),
                                                   *_notes(recs)))
    wrong = [names[str(c)] for i, (_, c) in enumerate(pairs)
             if i in out and _as_expected(pair_verdict(out[i]), expected[str(c)]) != "as expected"]
    say("done", sum(pair_verdict(r)[0] for r in out.values()), "accepted of", len(out), "| not as the suite expects:",
        ", ".join(wrong) or "none")


def _as_expected(verdict, reason) -> str:
    ok, got = verdict
    if reason is None:
        return "as expected" if ok else "NOT AS EXPECTED (honest, rejected)"
    return "as expected" if not ok and str(got).startswith(reason) else f"NOT AS EXPECTED (expected {reason})"


if __name__ == "__main__":
    main()
