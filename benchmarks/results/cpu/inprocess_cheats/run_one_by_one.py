import csv, subprocess, sys, datetime, platform
from kernelrl.kernelbench.worker import KBSettings, run_pairs, pair_verdict
from kernelrl.examples import TASKS_DIR
if __name__ == "__main__":
    names = sys.argv[2:]
    for name in names:  # one run per candidate: a fresh worker each, no candidate beside another
        s = KBSettings(device="cpu", baselines=("eager",), rounds=4, calls_per_round=2, hang_timeout_s=60.0, own_kernels=True)
        out = run_pairs([(str(TASKS_DIR / "10_SwishPlusOne.py"), f"/tmp/prefix_c/{name}.py")], s)
        ok, reason = pair_verdict(out[0])
        rec = next((r for r in out[0] if r.get("baseline") == "eager"), {})
        print(f"{name},{ok},{(reason or '').replace(',', ';')[:120]},{rec.get('speedup')},{rec.get('max_abs_err')}", flush=True)
