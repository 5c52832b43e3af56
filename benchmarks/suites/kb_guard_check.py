"""A one-minute GPU check of the KernelBench worker's verdicts without any load_inline build: an honest plain-PyTorch
candidate must pass, and pure-PyTorch cheats must get their named verdict keys (memory guard, input checks).

    python benchmarks/suites/kb_guard_check.py [cuda|cpu]   # from the repository root (cpu: no memory guard)"""

import sys
from pathlib import Path

from kernelrl.kernelbench.worker import KBSettings, run_pairs

TASKS = Path("examples/kernelbench/tasks")
ADV = Path("tests/gpu/kb_adversarial")
PAIRS = [(TASKS / "5_SumDim.py", Path("examples/train/5_SumDim.py"), None),
         (TASKS / "12_ScaleAddClamp.py", ADV / "returns_input.py", "returned an input"),
         (TASKS / "10_SwishPlusOne.py", ADV / "modifies_inputs.py", "modified inputs"),
         (TASKS / "10_SwishPlusOne.py", ADV / "recycled_memory.py", "unwritten output")]

if __name__ == "__main__":
    out = run_pairs([(str(t), str(c)) for t, c, _ in PAIRS],
                    KBSettings(device=sys.argv[1] if len(sys.argv) > 1 else "cuda", baselines=("eager",),
                               rounds=1, hang_timeout_s=60))
    for i, (_, cand, expected) in enumerate(PAIRS):
        recs = out[i]
        bad = [r for r in recs if not r.get("verified")]
        reason = bad[0]["reason"] if bad else None
        ok = (reason is None) if expected is None else bool(bad and bad[0].get("verdict") == expected)
        print(f"{'OK ' if ok else 'BAD'} {cand.name:24s} expected {expected!r:22s} got {reason!r}")
