"""Cheat: finds the worker object through torch's TorchScript name resolver
(`torch._jit_internal.createResolutionCallbackFromFrame(n)`, which walks n frames past its caller and answers a
name from that frame's locals: `self` in the worker's frames), then reports a correct, 50x result for its own pair
with the worker's own `report`, announced and tagged with the worker's key as a real one is, asks for a fresh
worker and exits. Its real output is zeros. Accepted before the defence (a helper's review, 2026-12-07, CPU
worker: `(True, None)`, 50x; the honest pair after it judged normally by the fresh worker).

Caught at load: the resolver is looked through like logging.currentframe, so the frame it asks for is asked for by
the candidate's code: refused and recorded (`introspection`).

task: 10_SwishPlusOne
reason: introspection
static: none
cpu: yes
"""

import os

import torch
import torch.nn as nn
from torch import _jit_internal


def _worker():
    """The first `self` up the stack whose class is the KernelBench worker."""
    for up in range(40):
        try:
            found = _jit_internal.createResolutionCallbackFromFrame(up)("self")
        except Exception:
            return None
        if type(found).__name__ == "KBWorker":
            return found
    return None


def _forge():
    worker = _worker()
    if worker is None:
        return
    records = [{"method": "candidate", "mode": "kb", "baseline": b, "verified": True, "reason": None,
                "verdict": None, "time_us_median": 10.0, "candidate_us": 10.0, "baseline_us": 500.0,
                "speedup": 50.0, "max_abs_err": 0.0, "max_rel_err": 0.0, "profile": "strict",
                "profiles": {"strict": True, "kernelbench": True}, "extra": {}} for b in worker.s["baselines"]]
    worker.report(worker.current[0], records)
    worker.send("recycle")
    os._exit(0)


_forge()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.zeros_like(x)
