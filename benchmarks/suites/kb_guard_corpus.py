"""The memory guard's corpus cheats and three honest candidates through the KernelBench evaluator on one GPU: a quick
check (about 50 s) after a change to kernelrl/kernelbench/memguard.py, where the whole GPU suite
(tests/gpu/test_kernelbench_gpu.py, about 4 minutes) does not fit.

    python benchmarks/suites/kb_guard_corpus.py > OUT/kb_guard_corpus.log"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from kernelrl.examples import CANDIDATES_DIR, TASKS_DIR  # noqa: E402
from kernelrl.kernelbench.worker import KBSettings, pair_verdict, run_pairs  # noqa: E402

if __name__ == "__main__":
    adv = Path(__file__).resolve().parents[2] / "tests" / "gpu" / "kb_adversarial"
    pairs = [(TASKS_DIR / "10_SwishPlusOne.py", adv / n)
             for n in ("oob_write.py", "recycled_memory.py", "returns_preallocated.py")]
    pairs += [(TASKS_DIR / n, CANDIDATES_DIR / n) for n in ("10_SwishPlusOne.py", "13_RMSNorm.py", "7_Softmax.py")]
    out = run_pairs([(str(t), str(c)) for t, c in pairs], KBSettings(device="cuda", baselines=("eager",), rounds=3))
    for i, (_t, c) in enumerate(pairs):
        ok, reason = pair_verdict(out[i])
        print(f"{c.parent.name}/{c.name}: {'correct' if ok else reason}")
