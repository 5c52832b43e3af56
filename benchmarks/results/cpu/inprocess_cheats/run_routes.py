"""Each named corpus candidate (tests/gpu/kb_adversarial/<name>.py of the tree given as the first argument;
`honest`: `F.silu(x).add_(1.0)` for 10_SwishPlusOne, the control) judged
alone, in a fresh CPU worker, against the task its docstring names, without own kernels asked for (kb eval's
default, so the kernel census does not stand in for the defence): one CSV line each (name, accepted, reason,
speedup over eager, max abs error)."""
import sys
import tempfile
from pathlib import Path

from kernelrl.examples import TASKS_DIR
from kernelrl.kernelbench.worker import KBSettings, pair_verdict, run_pairs
from tests.gpu.kb_adversarial import meta

HONEST = """import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def forward(self, x):
        return F.silu(x).add_(1.0)
"""

if __name__ == "__main__":
    corpus = Path(sys.argv[1]) / "tests" / "gpu" / "kb_adversarial"
    for name in sys.argv[2:]:  # one run per candidate: a fresh worker each, no candidate beside another
        path = corpus / f"{name}.py"
        if name == "honest":  # the control: the same as the earlier record's
            path = Path(tempfile.mkdtemp()) / "honest.py"
            path.write_text(HONEST)
        task = TASKS_DIR / f"{meta(path)['task']}.py" if name != "honest" else TASKS_DIR / "10_SwishPlusOne.py"
        settings = KBSettings(device="cpu", baselines=("eager",), rounds=4, calls_per_round=2, hang_timeout_s=60.0)
        try:
            out = run_pairs([(str(task), str(path))], settings)
        except Exception as exc:  # the run itself failed: that is the finding
            print(f"{name},run failed,{type(exc).__name__}: {str(exc)[:100].replace(',', ';')},,", flush=True)
            continue
        ok, reason = pair_verdict(out[0])
        rec = next((r for r in out[0] if r.get("baseline") == "eager"), {})
        reason = (reason or "").replace(",", ";")[:120]
        print(f"{name},{ok},{reason},{rec.get('speedup')},{rec.get('max_abs_err')}", flush=True)
