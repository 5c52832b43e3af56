"""Each named candidate (/tmp/prefix_c/<name>.py) judged alone, in a fresh CPU worker, against
10_SwishPlusOne: one CSV line each (name, accepted, reason, speedup over eager, max abs error). The first argument
is ignored."""
import sys

from kernelrl.examples import TASKS_DIR
from kernelrl.kernelbench.worker import KBSettings, pair_verdict, run_pairs

if __name__ == "__main__":
    for name in sys.argv[2:]:  # one run per candidate: a fresh worker each, no candidate beside another
        settings = KBSettings(device="cpu", baselines=("eager",), rounds=4, calls_per_round=2, hang_timeout_s=60.0,
                              own_kernels=True)
        out = run_pairs([(str(TASKS_DIR / "10_SwishPlusOne.py"), f"/tmp/prefix_c/{name}.py")], settings)
        ok, reason = pair_verdict(out[0])
        rec = next((r for r in out[0] if r.get("baseline") == "eager"), {})
        reason = (reason or "").replace(",", ";")[:120]
        print(f"{name},{ok},{reason},{rec.get('speedup')},{rec.get('max_abs_err')}", flush=True)
